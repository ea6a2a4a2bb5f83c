// GatedConvTest.cpp - a squeeze-and-excitation gate folded into a
// convolution (PostOps::gate, ConvGated.h): the result equals the
// convolution of the gated input, with every post-op chain of the kernel
// tests, on 1x1 and 3x3 filters, output channels that do not
// fill a block of 16 (padding elements in the filter's layout), a shape
// the ungated convolution runs as Winograd, and a new gate on the same
// filter.
#include "KernelTestUtil.h"
#include "kernels/ConvGated.h"

#include <string>
#include <vector>

using namespace hpvm::rt;
using namespace hpvm::rt::test;

TEST_CASE("Kernels: a convolution with a folded gate equals the "
          "convolution of the gated input") {
  struct Case {
    const char* name;
    size_t C, K, H, KH;
    int pad;
  };
  const KnobSpec fp32 = knobOf(Variant::Exact, Precision::FP32);
  for (const Case& c : std::vector<Case>{
           {"pointwise 32 -> 24", 32, 24, 16, 1, 0},
           {"pointwise 64 -> 64", 64, 64, 16, 1, 0},
           {"3x3 16 -> 4", 16, 4, 12, 3, 1},
           {"3x3 32 -> 32, Winograd-shaped", 32, 32, 36, 3, 1},
       }) {
    const size_t Ho = c.H + 2 * c.pad - c.KH + 1;
    REQUIRE(kern::gateFoldsIntoFilter(
        {1, int64_t(c.C), 1, 1}, {1, int64_t(c.C), int64_t(c.H), int64_t(c.H)},
        {int64_t(c.K), int64_t(c.C), int64_t(c.KH), int64_t(c.KH)}));
    const ConvArgs args{c.pad, c.pad, 1, 1, 1};
    TestTensor x({1, c.C, c.H, c.H}), w({c.K, c.C, c.KH, c.KH});
    x.set(randomVec(x.size(), 2500));
    w.set(randomVec(w.size(), 2501, -0.3f, 0.3f));
    // Every post-op chain of the kernel tests; two gates in turn on the
    // same filter (the gated filter scaled anew each time).
    for (int chain = 0; chain < TestPost::kVariants; ++chain)
      for (unsigned seed : {2510u, 2520u}) {
        const std::string what = std::string(c.name) + " chain " +
                                 std::to_string(chain) + " gate seed " +
                                 std::to_string(seed);
        TestPost post(chain, int64_t(c.K), {1, c.K, Ho, Ho}, 2530 + chain);
        TestTensor gate({1, c.C, 1, 1}), gated({1, c.C, c.H, c.H});
        const std::vector<float> g = randomVec(c.C, seed, 0.f, 1.f);
        gate.set(g);
        std::vector<float> xg = x.values();
        for (size_t i = 0; i < xg.size(); ++i)
          xg[i] *= g[i / (c.H * c.H)];
        gated.set(xg);
        TestTensor want({1, c.K, Ho, Ho}), got({1, c.K, Ho, Ho});
        runConv(gated.get(), w.get(), args, post.ops, fp32, want.get());
        // Our F(4x4, 3x3) Winograd kernel (ConvWinograd.h, below AVX-512)
        // rounds its sums within 5e-5 here (inputs in [-1, 1], filter in
        // [-0.3, 0.3]: outputs up to 3); the gated filter runs direct.
        const double tol =
            std::string(lastConvVariant()) == "exact-winograd" ? 5e-5 : 1e-5;
        PostOps withGate = post.ops;
        withGate.gate = gate.get();
        runConv(x.get(), w.get(), args, withGate, fp32, got.get());
        checkClose(got.values(), want.values(), tol, tol, what);
      }
  }
}

TEST_CASE("Kernels: a gate folds where the filter is at most a quarter of "
          "the activation, for one image") {
  // 1 x C x 1 x 1 gate; K x KH x KW values per input channel against
  // H x W pixels.
  CHECK(kern::gateFoldsIntoFilter({1, 32, 1, 1}, {1, 32, 16, 16},
                                  {64, 32, 1, 1}));
  CHECK_FALSE(kern::gateFoldsIntoFilter({1, 32, 1, 1}, {1, 32, 16, 16},
                                        {65, 32, 1, 1}));
  CHECK_FALSE(kern::gateFoldsIntoFilter({2, 32, 1, 1}, {2, 32, 16, 16},
                                        {16, 32, 1, 1}));
  CHECK_FALSE(
      kern::gateFoldsIntoFilter({1, 1, 1, 1}, {1, 32, 16, 16}, {16, 32, 1, 1}));
  CHECK_FALSE(kern::gateFoldsIntoFilter({1, 32, 2, 1}, {1, 32, 16, 16},
                                        {16, 32, 1, 1}));
}
