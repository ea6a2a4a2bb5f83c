// WinogradTest.cpp - F(4x4, 3x3) Winograd convolutions (ConvWinograd.h)
// against the reference loops: plain and dilated windows, padding smaller
// or larger than the window's reach, partial tiles, several matmul rounds,
// every post-op chain; and where runConv picks them.
#include "KernelTestUtil.h"
#include "approx/Isa.h"
#include "kernels/ConvWinograd.h"

using namespace hpvm::rt;
using namespace hpvm::rt::test;

namespace {

/// The sums are rounded differently from the direct products' (as in
/// oneDNN's Winograd kernels): within a few ulps of the accumulated
/// magnitude, as ConvTest's oneDNN kernels.
constexpr double kRtol = 1e-5, kAtol = 2e-5;

struct Case {
  const char* name;
  int64_t N, C, H, W, K;
  ConvArgs args;
};

const Case kCases[] = {
    // Partial tiles along both axes (13 = 4 + 4 + 4 + 1, 17 = 4 * 4 + 1).
    {"same 13x17", 2, 32, 13, 17, 40, {1, 1, 1, 1, 1, 1, 1}},
    // No padding: a 14x14 output of a 16x16 input.
    {"valid 16x16", 1, 40, 16, 16, 32, {0, 0, 1, 1, 1, 1, 1}},
    // Padding beyond the window's reach on one side: rows of zeros.
    {"wide padding", 1, 32, 9, 11, 32, {3, 2, 1, 1, 1, 1, 1}},
    // FCN-ResNet50's layer4 at 28x28 (dilation 4) and layer3 (2), scaled
    // down in channels: 4 x 4 phase grids of 7x7.
    {"dilation 4", 1, 32, 28, 28, 48, {4, 4, 1, 1, 1, 4, 4}},
    {"dilation 2", 2, 48, 20, 20, 32, {2, 2, 1, 1, 1, 2, 2}},
    // Unequal dilations and paddings: a 15 x 12 output.
    {"dilation 3x1", 1, 32, 15, 14, 40, {3, 0, 1, 1, 1, 3, 1}},
};

std::vector<float> refConv(const Case& c, int64_t Ho, int64_t Wo,
                           const std::vector<float>& x,
                           const std::vector<float>& w, const TestPost& post) {
  std::vector<float> y(c.N * c.K * Ho * Wo);
  ref::conv2d(x.data(), c.N, c.C, c.H, c.W, w.data(), c.K, 3, 3, c.args,
              y.data());
  post.reference(y, c.N, c.K, Ho * Wo);
  return y;
}

} // namespace

TEST_CASE("Winograd: F(4x4, 3x3) convolutions match the reference, "
          "dilated or not, in one matmul round or several, with every "
          "post-op chain") {
  unsigned seed = 500;
  for (const Case& c : kCases) {
    const int64_t Ho = c.H + 2 * c.args.padH - 2 * c.args.dilH;
    const int64_t Wo = c.W + 2 * c.args.padW - 2 * c.args.dilW;
    const kern::Dims4 xd{c.N, c.C, c.H, c.W}, wd{c.K, c.C, 3, 3},
        yd{c.N, c.K, Ho, Wo};
    TestTensor x({size_t(c.N), size_t(c.C), size_t(c.H), size_t(c.W)});
    TestTensor w({size_t(c.K), size_t(c.C), 3, 3});
    x.set(randomVec(x.size(), ++seed));
    const float ws = 1.f / std::sqrt(float(c.C * 9));
    w.set(randomVec(w.size(), ++seed, -ws, ws));
    const std::vector<size_t> yDims{size_t(c.N), size_t(c.K), size_t(Ho),
                                    size_t(Wo)};
    for (int v = 0; v < TestPost::kVariants; ++v) {
      TestPost post(v, c.K, yDims, ++seed);
      const std::vector<float> want =
          refConv(c, Ho, Wo, x.values(), w.values(), post);
      // Automatic rounds (one here), and rounds of 7 tiles: the last one
      // partial.
      for (const int64_t rounds : {int64_t(0), int64_t(7)}) {
        TestTensor y(yDims);
        kern::runConvWinograd(x.get(), w.get(), c.args, post.ops, y.get(), xd,
                              wd, yd, rounds);
        checkClose(y.values(), want, kRtol, kAtol,
                   std::string(c.name) + " post-op chain " + std::to_string(v) +
                       " rounds " + std::to_string(rounds));
      }
    }
  }
}

TEST_CASE("Winograd: runConv takes it for 3x3 windows at stride 1 of 32 or "
          "more channels with enough tiles and products, on AVX2 only") {
  struct Want {
    const char* what;
    int64_t N, C, H, K;
    ConvArgs args;
    bool winograd; ///< On an AVX2-level CPU.
  };
  const Want cases[] = {
      {"3x3 on 14x14", 1, 128, 14, 128, {1, 1, 1, 1, 1, 1, 1}, true},
      {"dilated 2 on 28x28", 1, 64, 28, 64, {2, 2, 1, 1, 1, 2, 2}, true},
      {"8x8: 4 tiles", 1, 256, 8, 256, {1, 1, 1, 1, 1, 1, 1}, false},
      // (Tiles and products per image: the choice, and so an image's
      // result, does not depend on the batch.)
      {"8x8 at batch 4", 4, 256, 8, 256, {1, 1, 1, 1, 1, 1, 1}, false},
      {"12x12: 9 tiles", 1, 64, 12, 64, {1, 1, 1, 1, 1, 1, 1}, false},
      {"32 channels at 16x16: 4.7 MFLOP",
       1,
       32,
       16,
       32,
       {1, 1, 1, 1, 1, 1, 1},
       false},
      {"16 input channels", 1, 16, 28, 128, {1, 1, 1, 1, 1, 1, 1}, false},
      {"stride 2", 1, 128, 28, 128, {1, 1, 2, 2, 1, 1, 1}, false},
      {"grouped", 1, 128, 28, 128, {1, 1, 1, 1, 2, 1, 1}, false},
  };
  const bool avx2 = approx::isaLevel() == approx::IsaLevel::Avx2;
  for (const Want& c : cases) {
    INFO(c.what);
    const int64_t Ho =
        (c.H + 2 * c.args.padH - 2 * c.args.dilH - 1) / c.args.strideH + 1;
    TestTensor x({size_t(c.N), size_t(c.C), size_t(c.H), size_t(c.H)});
    TestTensor w({size_t(c.K), size_t(c.C / c.args.groups), 3, 3});
    TestTensor y({size_t(c.N), size_t(c.K), size_t(Ho), size_t(Ho)});
    x.set(randomVec(x.size(), 3));
    w.set(randomVec(w.size(), 4, -0.1f, 0.1f));
    runConv(x.get(), w.get(), c.args, PostOps{}, KnobSpec{}, y.get());
    CHECK((std::string(lastConvVariant()) == "exact-winograd") ==
          (c.winograd && avx2));
  }
}

TEST_CASE("Winograd: an image's result does not depend on its batch or "
          "the thread count") {
  const int before = numThreads();
  const int64_t C = 64, H = 20, K = 48, N = 3;
  const ConvArgs args{1, 1, 1, 1, 1, 1, 1};
  TestTensor x({size_t(N), size_t(C), size_t(H), size_t(H)});
  TestTensor w({size_t(K), size_t(C), 3, 3});
  x.set(randomVec(x.size(), 41));
  w.set(randomVec(w.size(), 42, -0.1f, 0.1f));
  const std::vector<float> all = x.values();
  std::vector<std::vector<float>> images; // image 1's result, per run
  for (const int64_t batch : {int64_t(N), int64_t(1)})
    for (const int threads : {1, 2}) {
      setNumThreads(threads);
      // Image 1 alone, or the whole batch.
      TestTensor xb({size_t(batch), size_t(C), size_t(H), size_t(H)});
      const size_t image = size_t(C * H * H);
      xb.set(batch == N ? all
                        : std::vector<float>(all.begin() + image,
                                             all.begin() + 2 * image));
      TestTensor y({size_t(batch), size_t(K), size_t(H), size_t(H)});
      kern::runConvWinograd(xb.get(), w.get(), args, PostOps{}, y.get(),
                            {batch, C, H, H}, {K, C, 3, 3}, {batch, K, H, H});
      const std::vector<float> out = y.values();
      const size_t at = batch == N ? size_t(K * H * H) : 0;
      images.emplace_back(out.begin() + long(at),
                          out.begin() + long(at + size_t(K * H * H)));
    }
  setNumThreads(before);
  for (size_t i = 1; i < images.size(); ++i)
    CHECK_MESSAGE(images[i] == images[0], "run " << i);
}
