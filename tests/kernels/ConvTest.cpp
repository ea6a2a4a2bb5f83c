// ConvTest.cpp - the oneDNN convolution and dense kernels against the
// reference loops, for every shape of shapes/conv.txt and shapes/dense.txt
// and every post-op chain (fused result vs the unfused reference sequence).
#include "KernelTestUtil.h"
#include "kernels/ConvLiveTaps.h"

using namespace hpvm::rt;
using namespace hpvm::rt::test;

namespace {

/// FP32 tolerance: oneDNN sums in another order (blocked, vectorised) and
/// batch norm is folded into the weights, so results differ from the
/// reference by a few ulps of the accumulated magnitude.
constexpr double kRtol = 1e-5, kAtol = 2e-5;

/// Reference conv + post-ops of a shape.
std::vector<float> refConv(const ConvShape& s, const std::vector<float>& x,
                           const std::vector<float>& w, const TestPost& post) {
  std::vector<float> y(s.N * s.K * s.Ho() * s.Wo());
  ref::conv2d(x.data(), s.N, s.C, s.H, s.W, w.data(), s.K, s.KH, s.KW, s.args,
              y.data());
  post.reference(y, s.N, s.K, s.Ho() * s.Wo());
  return y;
}

} // namespace

TEST_CASE("Kernels: conv matches the reference for every shape and "
          "post-op chain") {
  unsigned seed = 1;
  for (const Shape& sh : readShapes("conv.txt")) {
    ConvShape s = convShape(sh);
    TestTensor x({size_t(s.N), size_t(s.C), size_t(s.H), size_t(s.W)});
    TestTensor w(
        {size_t(s.K), size_t(s.C / s.args.groups), size_t(s.KH), size_t(s.KW)});
    std::vector<size_t> yDims{size_t(s.N), size_t(s.K), size_t(s.Ho()),
                              size_t(s.Wo())};
    x.set(randomVec(x.size(), ++seed));
    float ws = 1.f / std::sqrt(float(w.size() / s.K));
    w.set(randomVec(w.size(), ++seed, -ws, ws));
    for (int v = 0; v < TestPost::kVariants; ++v) {
      TestPost post(v, s.K, yDims, ++seed);
      TestTensor y(yDims);
      runConv(x.get(), w.get(), s.args, post.ops, KnobSpec{}, y.get());
      checkClose(y.values(), refConv(s, x.values(), w.values(), post), kRtol,
                 kAtol, sh.name() + " post-op chain " + std::to_string(v));
    }
  }
}

TEST_CASE("Kernels: a window whose outer taps read only padding runs on "
          "its live taps") {
  // (Their values are checked with every post-op chain above.) Expected:
  // the variant, and the taps it crops from either end of each axis.
  struct Want {
    const char* variant;
    int64_t cropH, cropW;
    size_t regions; ///< liveRegions()'s count (dilated windows)
  };
  const std::map<std::string, Want> cases{
      {"aspp_centre_only", {"exact-live-taps", 1, 1, 1}},
      // (Columns: [0,2) taps 1-2, [2,7) all three, [7,9) taps 0-1.)
      {"aspp_depthwise_rows_only", {"exact-live-taps", 1, 0, 3}},
      {"window_on_1x1", {"exact-live-taps", 1, 1, 0}},
      {"window5_on_2x2", {"exact-live-taps", 1, 1, 0}},
      // Outer taps live near the edges only: rows [0,4) read taps 1-2,
      // [4,6) tap 1, [6,10) taps 0-1 (36% of the products).
      {"aspp_live_regions", {"exact-live-regions", 0, 0, 9}},
      {"dilated_strided_regions", {"exact-live-regions", 0, 0, 9}},
      // Every tap reads the image at nearly every pixel; undilated.
      {"dilated2", {"", 0, 0, 0}},
      {"tiny2x2", {"", 0, 0, 0}}};
  size_t seen = 0;
  for (const Shape& sh : readShapes("conv.txt")) {
    const auto found = cases.find(sh.name());
    if (found == cases.end())
      continue;
    ++seen;
    const Want& want = found->second;
    INFO(sh.name());
    const ConvShape s = convShape(sh);
    const kern::Dims4 xd{s.N, s.C, s.H, s.W},
        wd{s.K, s.C / s.args.groups, s.KH, s.KW}, yd{s.N, s.K, s.Ho(), s.Wo()};
    TestTensor x({size_t(s.N), size_t(s.C), size_t(s.H), size_t(s.W)});
    TestTensor w({size_t(wd[0]), size_t(wd[1]), size_t(wd[2]), size_t(wd[3])});
    TestTensor y({size_t(s.N), size_t(s.K), size_t(s.Ho()), size_t(s.Wo())});
    x.set(randomVec(x.size(), 7));
    w.set(randomVec(w.size(), 8));
    runConv(x.get(), w.get(), s.args, PostOps{}, KnobSpec{}, y.get());
    const std::string ran = lastConvVariant();
    CHECK((ran == "exact-live-taps" || ran == "exact-live-regions") ==
          (*want.variant != 0));
    if (*want.variant)
      CHECK(ran == want.variant);
    // (liveRegions() is asked of dilated windows only.)
    if (s.args.dilated()) {
      const std::optional<kern::LiveRegions> regions =
          kern::liveRegions(s.args, xd, wd, yd);
      CHECK((regions ? regions->rows.size() * regions->cols.size() : 0) ==
            want.regions);
    }
    const std::optional<kern::LiveTaps> live =
        kern::liveTaps(s.args, xd, wd, yd);
    CHECK(live.has_value() == (want.cropH + want.cropW > 0));
    if (!live)
      continue;
    CHECK(live->cropH == want.cropH);
    CHECK(live->cropW == want.cropW);
    // The output keeps its size: the padding gave up one dilated step per
    // cropped tap.
    CHECK(live->args.padH == s.args.padH - want.cropH * s.args.dilH);
    CHECK(live->args.padW == s.args.padW - want.cropW * s.args.dilW);
    const std::shared_ptr<const Tensor> cw =
        kern::croppedFilter(w.get(), want.cropH, want.cropW);
    CHECK(kern::dims4(cw.get()) == kern::Dims4{wd[0], wd[1],
                                               wd[2] - 2 * want.cropH,
                                               wd[3] - 2 * want.cropW});
    // The centre tap of filter 0, channel 0, is where it was in w.
    CHECK(kern::hostData(
              cw.get())[(wd[2] / 2 - want.cropH) * (wd[3] - 2 * want.cropW) +
                        wd[3] / 2 - want.cropW] ==
          w.values()[(wd[2] / 2) * wd[3] + wd[3] / 2]);
  }
  CHECK(seen == cases.size());
}

TEST_CASE("Kernels: dense matches the reference for every shape and "
          "post-op chain") {
  unsigned seed = 100;
  for (const Shape& sh : readShapes("dense.txt")) {
    int64_t M = sh.get("mb", 1), C = sh.get("ic", 1), H = sh.get("ih", 1),
            W = sh.get("iw", H), N = sh.get("oc", 1), K = C * H * W;
    TestTensor x({size_t(M), size_t(C), size_t(H), size_t(W)});
    TestTensor w({1, 1, size_t(K), size_t(N)});
    x.set(randomVec(x.size(), ++seed));
    float ws = 1.f / std::sqrt(float(K));
    w.set(randomVec(w.size(), ++seed, -ws, ws));
    std::vector<size_t> yDims{size_t(M), size_t(N), 1, 1};
    for (int v = 0; v < TestPost::kVariants; ++v) {
      TestPost post(v, N, yDims, ++seed);
      TestTensor y(yDims);
      runDense(x.get(), w.get(), post.ops, KnobSpec{}, y.get());
      std::vector<float> want(M * N);
      ref::dense(x.values().data(), M, K, w.values().data(), N, want.data());
      post.reference(want, M, N, 1);
      checkClose(y.values(), want, kRtol, kAtol,
                 sh.name() + " post-op chain " + std::to_string(v));
    }
  }
}

TEST_CASE("Kernels: dense reads a blocked conv output without changing "
          "results") {
  // conv (blocked output) -> dense straight on the blocked activation.
  ConvShape s = convShape(readShapes("conv.txt")[3]);
  TestTensor x({size_t(s.N), size_t(s.C), size_t(s.H), size_t(s.W)});
  TestTensor w({size_t(s.K), size_t(s.C), size_t(s.KH), size_t(s.KW)});
  x.set(randomVec(x.size(), 7));
  w.set(randomVec(w.size(), 8, -0.05f, 0.05f));
  TestTensor c({size_t(s.N), size_t(s.K), size_t(s.Ho()), size_t(s.Wo())});
  PostOps relu;
  relu.act = Act::Relu;
  runConv(x.get(), w.get(), s.args, relu, KnobSpec{}, c.get());
  int64_t K = s.K * s.Ho() * s.Wo(), N = 13;
  TestTensor fw({1, 1, size_t(K), size_t(N)});
  fw.set(randomVec(fw.size(), 9, -0.02f, 0.02f));
  TestTensor y({size_t(s.N), size_t(N), 1, 1});
  runDense(c.get(), fw.get(), PostOps{}, KnobSpec{}, y.get());

  TestPost none(0, s.K, {}, 0);
  std::vector<float> cRef = refConv(s, x.values(), w.values(), none);
  ref::act(cRef.data(), int64_t(cRef.size()), Act::Relu, 0, 0, cRef.data());
  std::vector<float> want(s.N * N);
  ref::dense(cRef.data(), s.N, K, fw.values().data(), N, want.data());
  checkClose(y.values(), want, kRtol, kAtol, "conv -> dense");
}

TEST_CASE("Kernels: dense on a pooled N x C x 1 x 1 activation, blocked or "
          "not, at batch 1 and 16, matches the reference") {
  // A classifier after global pooling: x comes from a 1x1 convolution
  // (oneDNN's layout: channel blocks that 32 channels fill and 20 do not)
  // or from the host; the dense layer reads it as it is.
  unsigned seed = 900;
  for (size_t M : {1, 16})
    for (size_t C : {32, 20})
      for (bool blocked : {false, true})
        for (int v : {0, 1, 5}) {
          TestTensor x({M, C, 1, 1});
          std::vector<float> xv = randomVec(x.size(), ++seed);
          std::vector<float> xRef = xv;
          if (blocked) {
            TestTensor src({M, C, 1, 1}), w({C, C, 1, 1});
            src.set(xv);
            w.set(randomVec(w.size(), ++seed, -0.3f, 0.3f));
            runConv(src.get(), w.get(), ConvArgs{}, PostOps{}, KnobSpec{},
                    x.get());
            ref::conv2d(xv.data(), int64_t(M), int64_t(C), 1, 1,
                        w.values().data(), int64_t(C), 1, 1, ConvArgs{},
                        xRef.data());
          } else {
            x.set(xv);
          }
          const int64_t N = 24;
          TestTensor fw({1, 1, C, size_t(N)});
          fw.set(randomVec(fw.size(), ++seed, -0.2f, 0.2f));
          std::vector<size_t> yDims{M, size_t(N), 1, 1};
          TestPost post(v, N, yDims, ++seed);
          TestTensor y(yDims);
          runDense(x.get(), fw.get(), post.ops, KnobSpec{}, y.get());
          std::vector<float> want(M * N);
          ref::dense(xRef.data(), int64_t(M), int64_t(C), fw.values().data(), N,
                     want.data());
          post.reference(want, int64_t(M), N, 1);
          checkClose(y.values(), want, kRtol, kAtol,
                     "M " + std::to_string(M) + " C " + std::to_string(C) +
                         (blocked ? " blocked" : " host") + " chain " +
                         std::to_string(v));
        }
}

TEST_CASE("Kernels: a conv of 24 channels on a blocked input writes padded "
          "blocks that the next conv, a depthwise conv and a residual add "
          "read as they are") {
  // EfficientNet's projection: 32 -> 24 channels (bias, ReLU) on the
  // nChw16c output of a conv, then 24 -> 32 (3x3) on that, and 24 + 24.
  TestTensor x({2, 32, 8, 8}), w1({32, 32, 1, 1}), w2({24, 32, 1, 1}),
      w3({32, 24, 3, 3});
  x.set(randomVec(x.size(), 80));
  w1.set(randomVec(w1.size(), 81, -0.2f, 0.2f));
  w2.set(randomVec(w2.size(), 82, -0.2f, 0.2f));
  w3.set(randomVec(w3.size(), 83, -0.1f, 0.1f));
  TestTensor y1({2, 32, 8, 8}), y2({2, 24, 8, 8}), y3({2, 32, 8, 8}),
      y4({2, 24, 8, 8});
  runConv(x.get(), w1.get(), ConvArgs{}, PostOps{}, KnobSpec{}, y1.get());
  TestPost relu(1, 24, {2, 24, 8, 8}, 84);
  runConv(y1.get(), w2.get(), ConvArgs{}, relu.ops, KnobSpec{}, y2.get());
  ConvArgs pad1;
  pad1.padH = pad1.padW = 1;
  runConv(y2.get(), w3.get(), pad1, PostOps{}, KnobSpec{}, y3.get());
  PostOps sum;
  sum.residual = y2.get();
  runConv(y1.get(), w2.get(), ConvArgs{}, sum, KnobSpec{}, y4.get());
  // MobileNet v3: a depthwise 3x3 on the 24 padded channels.
  TestTensor wd({24, 1, 3, 3}), y5({2, 24, 8, 8});
  wd.set(randomVec(wd.size(), 85, -0.3f, 0.3f));
  ConvArgs dw = pad1;
  dw.groups = 24;
  runConv(y2.get(), wd.get(), dw, PostOps{}, KnobSpec{}, y5.get());

  std::vector<float> r1(y1.size()), r2(y2.size()), r3(y3.size()), r4(y4.size());
  ref::conv2d(x.values().data(), 2, 32, 8, 8, w1.values().data(), 32, 1, 1,
              ConvArgs{}, r1.data());
  ref::conv2d(r1.data(), 2, 32, 8, 8, w2.values().data(), 24, 1, 1, ConvArgs{},
              r2.data());
  std::vector<float> plain = r2;
  relu.reference(r2, 2, 24, 64);
  ref::conv2d(r2.data(), 2, 24, 8, 8, w3.values().data(), 32, 3, 3, pad1,
              r3.data());
  ref::add(plain.data(), r2.data(), 2, 24, 64, false, r4.data());
  checkClose(y2.values(), r2, kRtol, kAtol, "32 -> 24 on blocked input");
  checkClose(y3.values(), r3, kRtol, kAtol, "24 -> 32 on padded blocks");
  checkClose(y4.values(), r4, kRtol, kAtol, "24 plus a residual");
  std::vector<float> r5(y5.size());
  ref::conv2d(r2.data(), 2, 24, 8, 8, wd.values().data(), 24, 3, 3, dw,
              r5.data());
  checkClose(y5.values(), r5, kRtol, kAtol, "depthwise on padded blocks");
}

TEST_CASE("Kernels: conv adds a residual left blocked by another conv, or "
          "given with other dims") {
  // shortcut = conv1x1(x) stays blocked; y = relu(conv3x3(x) + shortcut).
  TestTensor x({2, 32, 8, 8}), w3({32, 32, 3, 3}), w1({32, 32, 1, 1});
  x.set(randomVec(x.size(), 70));
  w3.set(randomVec(w3.size(), 71, -0.06f, 0.06f));
  w1.set(randomVec(w1.size(), 72, -0.2f, 0.2f));
  TestTensor s({2, 32, 8, 8}), y({2, 32, 8, 8});
  runConv(x.get(), w1.get(), ConvArgs{}, PostOps{}, KnobSpec{}, s.get());
  ConvArgs pad1;
  pad1.padH = pad1.padW = 1;
  PostOps post;
  post.residual = s.get();
  post.act2 = Act::Relu;
  runConv(x.get(), w3.get(), pad1, post, KnobSpec{}, y.get());

  std::vector<float> sRef(s.size()), want(y.size());
  ref::conv2d(x.values().data(), 2, 32, 8, 8, w1.values().data(), 32, 1, 1,
              ConvArgs{}, sRef.data());
  ref::conv2d(x.values().data(), 2, 32, 8, 8, w3.values().data(), 32, 3, 3,
              pad1, want.data());
  ref::add(want.data(), sRef.data(), 2, 32, 64, false, want.data());
  ref::act(want.data(), int64_t(want.size()), Act::Relu, 0, 0, want.data());
  checkClose(y.values(), want, kRtol, kAtol, "blocked residual");

  // The same residual values as a 2 x 2048 tensor (same element count).
  TestTensor flat({2, 2048});
  flat.set(sRef);
  post.residual = flat.get();
  TestTensor y2({2, 32, 8, 8});
  runConv(x.get(), w3.get(), pad1, post, KnobSpec{}, y2.get());
  checkClose(y2.values(), want, kRtol, kAtol, "residual with other dims");
}

TEST_CASE("Kernels: activation pairs around a residual share a post-op "
          "chain unless one oneDNN algorithm would need two settings") {
  // oneDNN 2.6 computes a chain's later entry of an algorithm with the
  // first entry's parameters; the kernels give clip, relu, tanh and
  // logistic other names for the same function (post-op chains 9 and 10
  // check the results), and no such name exists for the hard sigmoid's
  // linear step or a negative-slope leaky ReLU's relu.
  CHECK(actsChain(Act::Clip, 0.f, 6.f, Act::Clip, 0.f, 6.f));
  CHECK(actsChain(Act::Clip, 0.f, 0.5f, Act::Clip, -0.25f, 1.f));
  CHECK(actsChain(Act::HardSigmoid, 0.4f, 0.45f, Act::Clip, -0.25f, 1.f));
  CHECK(actsChain(Act::LeakyRelu, 0.1f, 0.f, Act::Relu, 0.f, 0.f));
  CHECK(actsChain(Act::Sigmoid, 0.f, 0.f, Act::Sigmoid, 0.f, 0.f));
  CHECK(actsChain(Act::HardSigmoid, 0.2f, 0.5f, Act::HardSigmoid, 0.2f, 0.5f));
  CHECK_FALSE(
      actsChain(Act::HardSigmoid, 0.2f, 0.5f, Act::HardSigmoid, 0.4f, 0.45f));
  CHECK_FALSE(actsChain(Act::Relu, 0.f, 0.f, Act::LeakyRelu, -0.1f, 0.f));
}

TEST_CASE("Kernels: one filter serves fp32 convolutions of several batch "
          "sizes, whatever kernel each batch size takes") {
  // 3x3 at stride 1 with channels in blocks of 16: oneDNN's Winograd
  // kernels, F(4x4, 3x3) at batch 8 and F(2x2, 3x3) at batch 2 (Intel Xeon
  // with AMX), whose packed weights differ for the same filter dims; each
  // batch must get its own (the derived-weights cache keys them apart).
  TestTensor w({48, 32, 3, 3});
  w.set(randomVec(w.size(), 501, -0.06f, 0.06f));
  const ConvArgs a{1, 1, 1, 1, 1};
  for (const size_t n : {8, 2, 8, 1}) {
    Shape sh;
    sh.num = {{"mb", int64_t(n)}, {"ic", 32}, {"ih", 12},
              {"oc", 48},         {"kh", 3},  {"ph", 1}};
    const ConvShape s = convShape(sh);
    TestTensor x({n, 32, 12, 12}), y({n, 48, 12, 12});
    x.set(randomVec(x.size(), 502 + unsigned(n)));
    TestPost post(1, 48, {n, 48, 12, 12}, 503);
    runConv(x.get(), w.get(), a, post.ops, KnobSpec{}, y.get());
    checkClose(y.values(), refConv(s, x.values(), w.values(), post), kRtol,
               kAtol, "batch " + std::to_string(n));
  }
}
