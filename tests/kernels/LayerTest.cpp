// LayerTest.cpp - pooling, batch norm, add, activations, softmaxes, the
// NHWC edges and the token ops (class token, attention, token selection,
// token_matmul) on oneDNN against the reference loops, on host (NCHW) and
// blocked inputs, in place and out of place.
#include "KernelTestUtil.h"
#include "kernels/TensorImpl.h"

using namespace hpvm::rt;
using namespace hpvm::rt::test;

namespace {

constexpr double kRtol = 1e-6, kAtol = 1e-6;

/// Puts t's values into oneDNN's blocked layout by running a 1x1 identity
/// convolution into it, the way a real producer layer leaves them.
void makeBlocked(TestTensor& t, const std::vector<float>& values) {
  size_t C = t.dim(1);
  TestTensor src({t.dim(0), C, t.dim(2), t.dim(3)});
  src.set(values);
  TestTensor eye({C, C, 1, 1});
  std::vector<float> e(C * C, 0.f);
  for (size_t c = 0; c < C; ++c)
    e[c * C + c] = 1.f;
  eye.set(e);
  runConv(src.get(), eye.get(), ConvArgs{}, PostOps{}, KnobSpec{}, t.get());
}

/// Tensor with random values, on the host or blocked.
void fill(TestTensor& t, unsigned seed, bool blocked, float range = 2.f) {
  std::vector<float> v = randomVec(t.size(), seed, -range, range);
  if (blocked)
    makeBlocked(t, v);
  else
    t.set(v);
}

} // namespace

TEST_CASE("Kernels: pooling matches the reference for every shape") {
  unsigned seed = 200;
  for (const Shape& sh : readShapes("pool.txt")) {
    int64_t N = sh.get("mb", 1), C = sh.get("ic", 1), H = sh.get("ih", 1),
            W = sh.get("iw", H);
    PoolArgs a;
    a.kind = sh.str.at("alg") == "max" ? PoolArgs::Max : PoolArgs::Avg;
    a.kh = int(sh.get("kh", 1));
    a.kw = int(sh.get("kw", a.kh));
    a.strideH = int(sh.get("sh", 1));
    a.strideW = int(sh.get("sw", a.strideH));
    a.padH = int(sh.get("ph", 0));
    a.padW = int(sh.get("pw", a.padH));
    int64_t Ho = 1 + (H + 2 * a.padH - a.kh) / a.strideH;
    int64_t Wo = 1 + (W + 2 * a.padW - a.kw) / a.strideW;
    for (bool blocked : {false, true}) {
      TestTensor x({size_t(N), size_t(C), size_t(H), size_t(W)});
      fill(x, ++seed, blocked);
      TestTensor y({size_t(N), size_t(C), size_t(Ho), size_t(Wo)});
      runPool(x.get(), a, KnobSpec{}, y.get());
      std::vector<float> want(y.size());
      ref::pool2d(x.values().data(), N, C, H, W, a, want.data());
      checkClose(y.values(), want, kRtol, kAtol,
                 sh.name() + (blocked ? " blocked" : " host"));
    }
  }
}

TEST_CASE("Kernels: pooling keeps HPVM's output size when the last window "
          "does not reach the padding") {
  // H = 5, window 2, stride 2, no padding: 2 rows out, the last input row
  // unused (oneDNN needs a negative bottom padding for this).
  TestTensor x({1, 2, 5, 5});
  std::vector<float> v(50);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = float(i);
  x.set(v);
  PoolArgs a;
  a.kh = a.kw = a.strideH = a.strideW = 2;
  TestTensor y({1, 2, 2, 2});
  runPool(x.get(), a, KnobSpec{}, y.get());
  CHECK(y.values() == std::vector<float>{6, 8, 16, 18, 31, 33, 41, 43});
}

TEST_CASE("Kernels: batch norm matches the reference with each "
          "activation, in place and not") {
  unsigned seed = 300;
  for (const Shape& sh : readShapes("eltwise.txt")) {
    const size_t N = sh.get("mb", 1), C = sh.get("ic", 1), H = sh.get("ih", 1),
                 W = sh.get("iw", sh.get("ih", 1));
    TestTensor g({1, C, 1, 1}), b({1, C, 1, 1}), m({1, C, 1, 1}),
        v({1, C, 1, 1});
    g.set(randomVec(C, ++seed, 0.5f, 1.5f));
    b.set(randomVec(C, ++seed));
    m.set(randomVec(C, ++seed));
    v.set(randomVec(C, ++seed, 0.01f, 2.f));
    for (Act act :
         {Act::None, Act::Relu, Act::Clip, Act::Tanh, Act::Sigmoid,
          Act::HardSigmoid, Act::HardSwish, Act::LeakyRelu, Act::Silu})
      for (bool blocked : {false, true})
        for (bool inPlace : {false, true}) {
          TestTensor x({N, C, H, W});
          fill(x, ++seed, blocked);
          std::vector<float> want(x.size());
          ref::batchNorm(x.values().data(), N, C, H * W, g.values().data(),
                         b.values().data(), m.values().data(),
                         v.values().data(), 1e-3, want.data());
          ref::act(want.data(), int64_t(want.size()), act, -0.5f, 0.75f,
                   want.data());
          TestTensor y({N, C, H, W});
          Tensor* out = inPlace ? x.get() : y.get();
          runBatchNorm(x.get(), g.get(), b.get(), m.get(), v.get(), 1e-3, act,
                       -0.5f, 0.75f, KnobSpec{}, out);
          std::vector<float> got = inPlace ? x.values() : y.values();
          checkClose(got, want, 1e-5, 1e-6,
                     sh.name() + " act " + std::to_string(int(act)) +
                         (blocked ? " blocked" : " host") +
                         (inPlace ? " in place" : ""));
        }
  }
}

TEST_CASE("Kernels: add matches the reference, elementwise and per "
          "channel, across layouts") {
  unsigned seed = 400;
  for (const Shape& sh : readShapes("eltwise.txt")) {
    const size_t N = sh.get("mb", 1), C = sh.get("ic", 1), H = sh.get("ih", 1),
                 W = sh.get("iw", sh.get("ih", 1));
    for (bool perChannel : {false, true})
      for (bool aBlocked : {false, true})
        for (bool bBlocked : {false, true})
          for (bool inPlace : {false, true}) {
            if (perChannel && bBlocked)
              continue;
            TestTensor a({N, C, H, W});
            fill(a, ++seed, aBlocked);
            std::vector<size_t> bDims = perChannel
                                            ? std::vector<size_t>{1, C, 1, 1}
                                            : std::vector<size_t>{N, C, H, W};
            TestTensor b(bDims);
            fill(b, ++seed, bBlocked);
            std::vector<float> want(a.size());
            ref::add(a.values().data(), b.values().data(), N, C, H * W,
                     perChannel, want.data());
            ref::act(want.data(), int64_t(want.size()), Act::Relu, 0, 0,
                     want.data());
            TestTensor y({N, C, H, W});
            Tensor* out = inPlace ? a.get() : y.get();
            runAdd(a.get(), b.get(), Act::Relu, 0, 0, KnobSpec{}, out);
            std::vector<float> got = inPlace ? a.values() : y.values();
            checkClose(got, want, kRtol, kAtol,
                       sh.name() +
                           (perChannel ? " per channel" : " elementwise") +
                           (aBlocked ? " a blocked" : "") +
                           (bBlocked ? " b blocked" : "") +
                           (inPlace ? " in place" : ""));
          }
  }
}

TEST_CASE("Kernels: a squeeze-and-excitation gate (N x C x 1 x 1, or N x 1 "
          "x 1 x 1) multiplies like the reference across layouts") {
  unsigned seed = 450;
  for (const Shape& sh : readShapes("eltwise.txt")) {
    const size_t N = sh.get("mb", 1), C = sh.get("ic", 1), H = sh.get("ih", 1),
                 W = sh.get("iw", sh.get("ih", 1));
    for (size_t gc : {C, size_t(1)})
      for (bool blocked : {false, true})
        for (bool inPlace : {false, true}) {
          TestTensor a({N, C, H, W}), g({N, gc, 1, 1});
          fill(a, ++seed, blocked);
          fill(g, ++seed, false);
          const int64_t ad[] = {int64_t(N), int64_t(C), int64_t(H), int64_t(W)};
          const int64_t gd[] = {int64_t(N), int64_t(gc), 1, 1};
          std::vector<float> want(a.size());
          ref::multiply(a.values().data(), ad, g.values().data(), gd,
                        want.data());
          TestTensor y({N, C, H, W});
          Tensor* out = inPlace ? a.get() : y.get();
          runMultiply(a.get(), g.get(), Act::None, 0, 0, KnobSpec{}, out);
          std::vector<float> got = inPlace ? a.values() : y.values();
          const std::string what =
              sh.name() + " gate channels " + std::to_string(gc) +
              (blocked ? " blocked" : " host") + (inPlace ? " in place" : "");
          CHECK_MESSAGE(got == want, what);
        }
  }
}

TEST_CASE("Kernels: activations match the reference") {
  unsigned seed = 500;
  for (const Shape& sh : readShapes("eltwise.txt")) {
    const size_t N = sh.get("mb", 1), C = sh.get("ic", 1), H = sh.get("ih", 1),
                 W = sh.get("iw", sh.get("ih", 1));
    for (Act act :
         {Act::None, Act::Relu, Act::Clip, Act::Tanh, Act::Sigmoid,
          Act::HardSigmoid, Act::HardSwish, Act::LeakyRelu, Act::Silu})
      for (bool blocked : {false, true})
        for (bool inPlace : {false, true}) {
          // Parameters and inputs that reach every piece: clip [0, 6],
          // hard sigmoid alpha 0.4, beta 0.45 on [-2, 2], hard swish on
          // [-5, 5], leaky relu alpha 0.1.
          const bool hardSigmoid = act == Act::HardSigmoid;
          const float lo =
              hardSigmoid ? 0.4f : (act == Act::LeakyRelu ? 0.1f : 0.f);
          const float hi = hardSigmoid ? 0.45f : 6.f;
          TestTensor x({N, C, H, W});
          fill(x, ++seed, blocked,
               act == Act::HardSwish || act == Act::Silu ? 5.f : 2.f);
          std::vector<float> want(x.size());
          ref::act(x.values().data(), int64_t(x.size()), act, lo, hi,
                   want.data());
          TestTensor y({N, C, H, W});
          Tensor* out = inPlace ? x.get() : y.get();
          runAct(x.get(), act, lo, hi, KnobSpec{}, out);
          std::vector<float> got = inPlace ? x.values() : y.values();
          // Relu and clip select values; oneDNN's other activations are
          // within a few ulps of the reference (its vectorised tanhf and
          // 1 / (1 + expf(-x)); the hard ones in another order of
          // operations).
          const bool selects =
              act == Act::None || act == Act::Relu || act == Act::Clip;
          checkClose(got, want, selects ? 0.0 : 1e-6, selects ? 0.0 : 1e-6,
                     sh.name() + " act " + std::to_string(int(act)) +
                         (blocked ? " blocked" : "") +
                         (inPlace ? " in place" : ""));
        }
  }
}

TEST_CASE("Kernels: reference activations compute relu, clip, tanh, hard "
          "sigmoid, hard swish and silu") {
  std::vector<float> x{-2.f, -0.5f, 0.f, 0.25f, 3.f, 7.f};
  std::vector<float> y(x.size());
  ref::act(x.data(), 6, Act::Relu, 0, 0, y.data());
  CHECK(y == std::vector<float>{0.f, 0.f, 0.f, 0.25f, 3.f, 7.f});
  ref::act(x.data(), 6, Act::Clip, -1.f, 6.f, y.data());
  CHECK(y == std::vector<float>{-1.f, -0.5f, 0.f, 0.25f, 3.f, 6.f});
  ref::act(x.data(), 6, Act::Tanh, 0, 0, y.data());
  CHECK(y[0] == std::tanh(-2.f));
  CHECK(y[5] == std::tanh(7.f));
  // Hard sigmoid max(0, min(1, alpha x + beta)) with MobileNet v3's alpha
  // 1/6 and beta 1/2, and with ONNX's default alpha 0.2.
  ref::act(x.data(), 6, Act::HardSigmoid, 1.f / 6.f, 0.5f, y.data());
  const double hsig[] = {1 / 6., 5 / 12., 0.5, 0.5 + 0.25 / 6, 1, 1};
  for (int i = 0; i < 6; ++i)
    CHECK(y[i] == doctest::Approx(hsig[i]).epsilon(1e-7));
  ref::act(x.data(), 6, Act::HardSigmoid, 0.2f, 0.5f, y.data());
  CHECK(y[0] == doctest::Approx(0.1).epsilon(1e-7));
  CHECK(y[4] == 1.f);
  std::vector<float> neg{-7.f, -4.f};
  ref::act(neg.data(), 2, Act::HardSigmoid, 0.2f, 0.5f, y.data());
  CHECK(y[0] == 0.f);
  CHECK(y[1] == 0.f);
  // Hard swish x * relu6(x + 3) / 6: 0 below -3, x above 3.
  ref::act(x.data(), 6, Act::HardSwish, 0, 0, y.data());
  const double hswish[] = {-1 / 3., -0.5 * 2.5 / 6, 0, 0.25 * 3.25 / 6, 3, 7};
  for (int i = 0; i < 6; ++i)
    CHECK(y[i] == doctest::Approx(hswish[i]).epsilon(1e-7));
  ref::act(neg.data(), 2, Act::HardSwish, 0, 0, y.data());
  CHECK(y[0] == 0.f);
  CHECK(y[1] == 0.f);
  // SiLU x * sigmoid(x): -0.238 at -2, 0 at 0, close to x far above 0.
  ref::act(x.data(), 6, Act::Silu, 0, 0, y.data());
  for (int i = 0; i < 6; ++i)
    CHECK(y[i] == doctest::Approx(x[i] / (1 + std::exp(-double(x[i])))));
  CHECK(y[0] == doctest::Approx(-0.238405844));
  CHECK(y[2] == 0.f);
}

TEST_CASE("Kernels: softmax normalises each row over dim 1") {
  for (bool blocked : {false, true}) {
    TestTensor x({4, 10, 1, 1});
    fill(x, 600, blocked);
    std::vector<float> want(x.size());
    ref::softmax(x.values().data(), 4, 10, want.data());
    runSoftmax(x.get(), KnobSpec{}, x.get());
    std::vector<float> got = x.values();
    CHECK(got == want);
    for (int n = 0; n < 4; ++n) {
      double sum = 0;
      for (int d = 0; d < 10; ++d)
        sum += got[n * 10 + d];
      CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
    }
  }
  // Large logits: the max is subtracted first, so nothing overflows.
  std::vector<float> big{1000.f, 1001.f}, out(2);
  ref::softmax(big.data(), 1, 2, out.data());
  CHECK(out[0] == doctest::Approx(0.26894142).epsilon(1e-6));
  CHECK(out[1] == doctest::Approx(0.73105858).epsilon(1e-6));
}

TEST_CASE("Kernels: reference conv, pool and dense give hand-computed "
          "values") {
  // 1x1x3x3 input 1..9, 2x2 filter of ones, pad 1 stride 2: sums of the
  // 2x2 windows at (-1,-1), (-1,1), (1,-1), (1,1).
  std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8, 9}, w{1, 1, 1, 1}, y(4);
  ConvArgs a;
  a.padH = a.padW = 1;
  a.strideH = a.strideW = 2;
  ref::conv2d(x.data(), 1, 1, 3, 3, w.data(), 1, 2, 2, a, y.data());
  CHECK(y == std::vector<float>{1, 5, 11, 28});
  // Max pool 2x2 pad 1 ignores the padding; avg divides by 4 always.
  PoolArgs p;
  p.kh = p.kw = 2;
  p.padH = p.padW = 1;
  p.strideH = p.strideW = 2;
  ref::pool2d(x.data(), 1, 1, 3, 3, p, y.data());
  CHECK(y == std::vector<float>{1, 3, 7, 9});
  p.kind = PoolArgs::Avg;
  ref::pool2d(x.data(), 1, 1, 3, 3, p, y.data());
  CHECK(y == std::vector<float>{0.25f, 1.25f, 2.75f, 7.f});
  // Dense: [1 2 3] x [[1 0],[0 1],[1 1]] = [4 5].
  std::vector<float> dx{1, 2, 3}, dw{1, 0, 0, 1, 1, 1}, dy(2);
  ref::dense(dx.data(), 1, 3, dw.data(), 2, dy.data());
  CHECK(dy == std::vector<float>{4, 5});
}

TEST_CASE("Kernels: attention matches the reference") {
  struct Case {
    size_t N, C, heads, H, W;
  };
  // ViT-like (17 tokens), tokens over both spatial dims, one token, one
  // head, and a head dim not a multiple of the vector width.
  for (Case k :
       {Case{2, 48, 3, 17, 1}, Case{3, 12, 4, 3, 4}, Case{2, 8, 2, 1, 1},
        Case{1, 16, 1, 5, 1}, Case{2, 30, 2, 7, 1}}) {
    for (bool blocked : {false, true}) {
      INFO("N " << k.N << " C " << k.C << " heads " << k.heads << " tokens "
                << k.H << "x" << k.W << (blocked ? " blocked" : ""));
      TestTensor qkv({k.N, 3 * k.C, k.H, k.W});
      fill(qkv, 700 + unsigned(k.C), blocked, 3.f);
      std::vector<float> want(k.N * k.C * k.H * k.W);
      ref::attention(qkv.values().data(), int64_t(k.N), int64_t(k.C),
                     int64_t(k.H * k.W), int64_t(k.heads), want.data());
      TestTensor y({k.N, k.C, k.H, k.W});
      runAttention(qkv.get(), int64_t(k.heads), KnobSpec{}, y.get());
      checkClose(y.values(), want, 1e-5, 1e-5, "attention");
    }
  }
}

TEST_CASE("Kernels: token_matmul matches the reference") {
  struct Case {
    size_t N, K, H, W, M, bh, bw;
  };
  // Tokens over both spatial dims, one token, one feature, K tokens of b
  // held as a grid or a column, and sizes off the vector width.
  for (Case k : {Case{2, 8, 4, 4, 8, 8, 1}, Case{3, 6, 3, 5, 10, 2, 3},
                 Case{1, 1, 7, 1, 4, 1, 1}, Case{2, 17, 1, 1, 3, 17, 1},
                 Case{2, 33, 9, 1, 40, 3, 11}}) {
    for (bool blocked : {false, true}) {
      INFO("N " << k.N << " K " << k.K << " tokens " << k.H << "x" << k.W
                << " M " << k.M << (blocked ? " blocked" : ""));
      TestTensor a({k.N, k.K, k.H, k.W}), b({k.N, k.M, k.bh, k.bw});
      fill(a, 800 + unsigned(k.K), blocked, 2.f);
      fill(b, 900 + unsigned(k.M), blocked, 2.f);
      std::vector<float> want(k.N * k.M * k.H * k.W);
      ref::tokenMatMul(a.values().data(), b.values().data(), int64_t(k.N),
                       int64_t(k.K), int64_t(k.H * k.W), int64_t(k.M),
                       want.data());
      TestTensor y({k.N, k.M, k.H, k.W});
      Tensor* in[] = {a.get(), b.get()};
      runTokenMatMul(OpCall{in, 2, nullptr, PostAct{}, KnobSpec{}, y.get()});
      checkClose(y.values(), want, 1e-5, 1e-5, "token_matmul");
    }
  }
}

TEST_CASE("Kernels: attention with equal keys averages the values") {
  // Every key the same: every score of a query is the same, so each
  // output token is the mean of the value tokens (whatever the queries).
  const int64_t N = 2, C = 6, T = 5, heads = 2;
  std::vector<float> v = randomVec(size_t(N * 3 * C * T), 710, -2, 2);
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t t = 0; t < T; ++t)
        v[size_t((b * 3 * C + C + c) * T + t)] = 0.25f * float(c);
  TestTensor qkv({size_t(N), size_t(3 * C), size_t(T), 1});
  qkv.set(v);
  TestTensor y({size_t(N), size_t(C), size_t(T), 1});
  runAttention(qkv.get(), heads, KnobSpec{}, y.get());
  std::vector<float> got = y.values(), want;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c) {
      double mean = 0;
      for (int64_t s = 0; s < T; ++s)
        mean += v[size_t((b * 3 * C + 2 * C + c) * T + s)];
      want.insert(want.end(), size_t(T), float(mean / double(T)));
    }
  checkClose(got, want, 1e-5, 1e-6, "attention of equal keys");
}

namespace {

/// y = window attention of qkv (N x 3C x H x W) by runWindowAttention.
void windowAttention(TestTensor& qkv, TestTensor& bias, TestTensor& mask,
                     std::vector<int64_t> scalars, TestTensor& y) {
  Tensor* in[] = {qkv.get(), bias.get(), mask.get()};
  std::vector<double> s(scalars.begin(), scalars.end());
  runWindowAttention(OpCall{in, 3, s.data(), PostAct{}, KnobSpec{}, y.get()});
}

} // namespace

TEST_CASE("Kernels: window attention matches the reference") {
  struct Case {
    size_t N, C, heads, H, W, wh, ww, sh, sw, masks;
  };
  // Swin-like (7 x 7 windows, shift 3, a mask per window), unshifted with
  // one mask, a single window, and non-square windows shifted unevenly.
  for (Case k :
       {Case{2, 12, 3, 14, 14, 7, 7, 3, 3, 4},
        Case{1, 8, 2, 14, 7, 7, 7, 0, 0, 1}, Case{2, 6, 1, 7, 7, 7, 7, 0, 0, 1},
        Case{1, 10, 2, 6, 8, 3, 4, 1, 2, 4}}) {
    INFO("N " << k.N << " C " << k.C << " heads " << k.heads << " image " << k.H
              << "x" << k.W << " windows " << k.wh << "x" << k.ww << " shift "
              << k.sh << "," << k.sw);
    const size_t T = k.wh * k.ww;
    TestTensor qkv({k.N, 3 * k.C, k.H, k.W});
    fill(qkv, 720 + unsigned(k.C), false, 3.f);
    TestTensor bias({1, k.heads, T, T});
    bias.set(randomVec(k.heads * T * T, 721, -1, 1));
    TestTensor mask({1, k.masks, T, T});
    mask.set(randomVec(k.masks * T * T, 722, -100, 0));
    std::vector<float> want(k.N * k.C * k.H * k.W);
    ref::windowAttention(qkv.values().data(), int64_t(k.N), int64_t(k.C),
                         int64_t(k.H), int64_t(k.W), int64_t(k.wh),
                         int64_t(k.ww), int64_t(k.heads), int64_t(k.sh),
                         int64_t(k.sw), bias.values().data(),
                         mask.values().data(), int64_t(k.masks), want.data());
    TestTensor y({k.N, k.C, k.H, k.W});
    windowAttention(qkv, bias, mask,
                    {int64_t(k.wh), int64_t(k.ww), int64_t(k.heads),
                     int64_t(k.sh), int64_t(k.sw)},
                    y);
    checkClose(y.values(), want, 1e-5, 1e-5, "window attention");
  }
}

TEST_CASE("Kernels: one window over the whole image, unshifted and without "
          "bias, is self-attention") {
  // Whatever the shift: rolling every token the same way and back changes
  // nothing when one window holds them all.
  TestTensor qkv({2, 24, 3, 5});
  fill(qkv, 730, false, 3.f);
  TestTensor bias({1, 2, 15, 15}), mask({1, 1, 15, 15});
  bias.set(std::vector<float>(2 * 15 * 15, 0.f));
  mask.set(std::vector<float>(15 * 15, 0.f));
  TestTensor want({2, 8, 3, 5});
  runAttention(qkv.get(), 2, KnobSpec{}, want.get());
  for (int64_t shift : {0, 1, 2}) {
    INFO("shift " << shift);
    TestTensor y({2, 8, 3, 5});
    windowAttention(qkv, bias, mask, {3, 5, 2, shift, shift}, y);
    checkClose(y.values(), want.values(), 1e-5, 1e-5,
               "whole-image window attention");
  }
}

TEST_CASE("Kernels: class token and token selection match the reference") {
  for (bool blocked : {false, true}) {
    TestTensor x({3, 8, 4, 5});
    fill(x, 720, blocked);
    TestTensor cls({1, 8, 1, 1}), pos({1, 8, 21, 1});
    fill(cls, 721, false);
    fill(pos, 722, false);
    std::vector<float> want(3 * 8 * 21);
    ref::classToken(x.values().data(), 3, 8, 20, cls.values().data(),
                    pos.values().data(), want.data());
    TestTensor y({3, 8, 21, 1});
    runClassToken(x.get(), cls.get(), pos.get(), KnobSpec{}, y.get());
    CHECK(y.values() == want);
    // Token 0 of the result is the class token plus its position.
    for (size_t c = 0; c < 8; ++c)
      CHECK(want[c * 21] == cls.values()[c] + pos.values()[c * 21]);
    for (int64_t index : {0, 7, 20}) {
      TestTensor z({3, 8, 1, 1});
      runSelectToken(y.get(), index, KnobSpec{}, z.get());
      std::vector<float> token(3 * 8);
      ref::selectToken(want.data(), 3, 8, 21, index, token.data());
      CHECK(z.values() == token);
    }
  }
}

TEST_CASE("Kernels: layer norm matches the reference on NCHW, nChw8c and "
          "nChw16c input") {
  using tag = dnnl::memory::format_tag;
  // 32 channels (blocks of 8 or 16), 24 (blocks of 8 only), 20 (none), an
  // odd image.
  for (size_t C : {size_t(32), size_t(24), size_t(20)})
    for (tag layout : {tag::nchw, tag::nChw8c, tag::nChw16c}) {
      INFO("C " << C << ", layout " << int(layout));
      TestTensor x({2, C, 5, 3}), g({1, C, 1, 1}), b({1, C, 1, 1});
      const std::vector<float> v =
          randomVec(2 * C * 15, 740 + unsigned(C), -3.f, 3.f);
      place(x, v, layout);
      g.set(randomVec(C, 741, 0.5f, 1.5f));
      b.set(randomVec(C, 742, -1, 1));
      std::vector<float> want(2 * C * 15);
      ref::layerNorm(v.data(), 2, int64_t(C), 15, g.values().data(),
                     b.values().data(), 1e-5, want.data());
      TestTensor y({2, C, 5, 3});
      runLayerNorm(x.get(), g.get(), b.get(), 1e-5, KnobSpec{}, y.get());
      // Input blocked by whole blocks of channels stays blocked for the
      // next convolution (nChw16c with AVX-512, nChw8c below it); any
      // other is normalized on the host.
      const bool kept = (layout == tag::nChw8c && C % 8 == 0) ||
                        (layout == tag::nChw16c && C % 16 == 0);
      CHECK(kern::implOf(y.get()).memValid == kept);
      checkClose(y.values(), want, 1e-5, 1e-5, "layer norm");
    }
}

TEST_CASE("Kernels: channel softmax and log-softmax match the reference on "
          "every layout, in place and out of place") {
  using tag = dnnl::memory::format_tag;
  // Pixel counts below, at and above the kernel's run of 64; 1 channel;
  // channels padded by a blocked layout; scores far from 0.
  struct Case {
    size_t C, H, W;
  };
  unsigned seed = 760;
  for (const Case& s : {Case{1, 3, 5}, Case{5, 8, 8}, Case{12, 1, 32},
                        Case{21, 9, 15}, Case{16, 13, 11}})
    for (tag layout : {tag::nchw, tag::nhwc, tag::nChw8c, tag::nChw16c})
      for (bool log : {false, true})
        for (bool inPlace : {false, true}) {
          INFO("C " << s.C << ", " << s.H << "x" << s.W << ", layout "
                    << int(layout) << (log ? ", log" : "")
                    << (inPlace ? ", in place" : ""));
          const std::vector<float> v =
              randomVec(2 * s.C * s.H * s.W, ++seed, -30.f, 40.f);
          TestTensor x({2, s.C, s.H, s.W});
          place(x, v, layout);
          std::vector<float> want(v.size());
          ref::channelSoftmax(v.data(), 2, int64_t(s.C), int64_t(s.H * s.W),
                              log, want.data());
          TestTensor y({2, s.C, s.H, s.W});
          Tensor* out = inPlace ? x.get() : y.get();
          runChannelSoftmax(x.get(), log, KnobSpec{}, out);
          checkClose(inPlace ? x.values() : y.values(), want, 1e-5, 1e-5,
                     "channel softmax");
        }
}

TEST_CASE("Kernels: group softmax matches the reference over each group of "
          "channels on every layout, in place and out of place") {
  using tag = dnnl::memory::format_tag;
  // Groups of 16, 4 and 7 channels (one group: channel softmax), one
  // channel a group; a row of 84 pixels (beyond the kernel's run of 64) and
  // a 3 x 5 image; channels padded by a blocked layout.
  struct Case {
    size_t C, groups, H, W;
  };
  unsigned seed = 770;
  for (const Case& s :
       {Case{64, 4, 1, 84}, Case{64, 4, 3, 5}, Case{12, 3, 1, 84},
        Case{12, 3, 3, 5}, Case{7, 1, 1, 84}, Case{7, 1, 3, 5},
        Case{12, 12, 3, 5}})
    for (tag layout : {tag::nchw, tag::nhwc, tag::nChw8c, tag::nChw16c})
      for (bool inPlace : {false, true}) {
        INFO("C " << s.C << ", groups " << s.groups << ", " << s.H << "x" << s.W
                  << ", layout " << int(layout)
                  << (inPlace ? ", in place" : ""));
        const std::vector<float> v =
            randomVec(2 * s.C * s.H * s.W, ++seed, -30.f, 40.f);
        TestTensor x({2, s.C, s.H, s.W});
        place(x, v, layout);
        std::vector<float> want(v.size());
        ref::channelSoftmax(v.data(), 2, int64_t(s.C), int64_t(s.H * s.W),
                            false, want.data(), int64_t(s.groups));
        TestTensor y({2, s.C, s.H, s.W});
        Tensor* out = inPlace ? x.get() : y.get();
        runGroupSoftmax(x.get(), int64_t(s.groups), KnobSpec{}, out);
        const std::vector<float> got = inPlace ? x.values() : y.values();
        checkClose(got, want, 1e-5, 1e-5, "group softmax");
        // Each group of each pixel sums to 1.
        const size_t K = s.C / s.groups, HW = s.H * s.W;
        double worst = 0;
        for (size_t g = 0; g < 2 * s.groups; ++g)
          for (size_t p = 0; p < HW; ++p) {
            double sum = 0;
            for (size_t c = 0; c < K; ++c)
              sum += got[(g * K + c) * HW + p];
            worst = std::max(worst, std::fabs(sum - 1));
          }
        CHECK(worst <= 1e-5);
        // One group is channel softmax, value for value.
        if (s.groups == 1) {
          TestTensor z({2, s.C, s.H, s.W});
          place(z, v, layout);
          TestTensor zy({2, s.C, s.H, s.W});
          runChannelSoftmax(z.get(), false, KnobSpec{}, zy.get());
          CHECK(zy.values() == got);
        }
      }
}

TEST_CASE("Kernels: concat_width puts each part's columns after the "
          "previous part's, bit for bit, from every layout") {
  using tag = dnnl::memory::format_tag;
  // Widths 64, 16 and 4 of 67 channels (no layout's whole blocks), in one
  // row (on this thread) and in 3 rows (over the threads), each part in
  // its own layout.
  unsigned seed = 790;
  for (size_t H : {size_t(1), size_t(3)})
    for (tag first : {tag::nchw, tag::nhwc, tag::nChw8c, tag::nChw16c}) {
      const size_t N = 2, C = 67;
      const size_t widths[] = {64, 16, 4};
      const tag layouts[] = {first, tag::nchw,
                             first == tag::nchw ? tag::nChw16c : tag::nhwc};
      INFO("H " << H << ", first part's layout " << int(first));
      std::vector<std::unique_ptr<TestTensor>> parts;
      std::vector<std::vector<float>> values;
      for (int i = 0; i < 3; ++i) {
        parts.push_back(std::make_unique<TestTensor>(
            std::vector<size_t>{N, C, H, widths[i]}));
        values.push_back(randomVec(parts.back()->size(), ++seed, -5, 5));
        place(*parts.back(), values.back(), layouts[i]);
      }
      const float* from[] = {values[0].data(), values[1].data(),
                             values[2].data()};
      const int64_t w[] = {64, 16, 4};
      std::vector<float> want(N * C * H * 84);
      ref::concatWidth(from, w, 3, int64_t(N * C * H), want.data());
      // The reference by hand at a few places: part 2's first column
      // follows part 1's last, part 3's last ends the row.
      CHECK(want[64] == values[1][0]);
      CHECK(want[83] == values[2][3]);
      CHECK(want[84] == values[0][64]);
      TestTensor y({N, C, H, 84});
      Tensor* in[] = {parts[0]->get(), parts[1]->get(), parts[2]->get()};
      runConcatWidth(in, 3, KnobSpec{}, y.get());
      CHECK(y.values() == want);
      // The parts keep their values.
      for (int i = 0; i < 3; ++i)
        CHECK(parts[size_t(i)]->values() == values[size_t(i)]);
    }
}

TEST_CASE("Kernels: channels_last and channels_first move every value from "
          "every layout") {
  using tag = dnnl::memory::format_tag;
  unsigned seed = 780;
  for (size_t C : {size_t(1), size_t(3), size_t(20), size_t(32)})
    for (tag layout : {tag::nchw, tag::nhwc, tag::nChw8c, tag::nChw16c}) {
      INFO("C " << C << ", layout " << int(layout));
      const size_t H = 5, W = 7;
      const std::vector<float> v = randomVec(2 * C * H * W, ++seed, -1, 1);
      TestTensor x({2, C, H, W});
      place(x, v, layout);
      std::vector<float> want(v.size());
      ref::channelsLast(v.data(), 2, int64_t(C), int64_t(H * W), want.data());
      TestTensor y({2, H, W, C});
      runChannelsLast(x.get(), KnobSpec{}, y.get());
      CHECK(y.values() == want);
      // Back: y's N x H x W x C read as an NHWC input.
      TestTensor z({2, C, H, W});
      runChannelsFirst(y.get(), KnobSpec{}, z.get());
      CHECK(z.values() == v);
    }
}
