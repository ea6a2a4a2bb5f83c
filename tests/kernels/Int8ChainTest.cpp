// Int8ChainTest.cpp - int8 convolutions that hand their result on quantized
// (PostOps::quantizeOut, u8 or s8 by quantizeS8) as the int8 layers reading
// it would quantize it themselves: after any post-op chain, with a residual
// arriving quantized (oneDNN's sum post-op) or in fp32 (a binary add).
#include "KernelTestUtil.h"
#include "kernels/TensorImpl.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace hpvm::rt;
using namespace hpvm::rt::test;

namespace {

using dt = dnnl::memory::data_type;

/// The largest magnitude of v (of its values when \p unsignedRange).
float rangeOf(const std::vector<float>& v, bool unsignedRange) {
  float m = 0.f;
  for (float f : v)
    m = std::max(m, unsignedRange ? f : std::fabs(f));
  return m;
}

/// Codes of a quantized result against quantizing the fp32 result \p want
/// at scale \p s: each a whole multiple of s (the stored code times s),
/// within one code of want / s saturated (a near tie may round either
/// way, where the fused epilogue and a separate quantization differ by an
/// ulp), and rarely off. Returns how many codes saturate (at the top of
/// the range, or at either end for s8).
int checkCodes(const std::vector<float>& got, const std::vector<float>& want,
               float s, bool s8, const std::string& what) {
  // (oneDNN saturates s8 at -128, the separate quantization too.)
  const double lo = s8 ? -128.0 : 0.0, hi = s8 ? 127.0 : 255.0;
  int top = 0, off = 0;
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double q = std::nearbyint(got[i] / s);
    INFO(what << ": element " << i << ": " << got[i] << " vs " << want[i]);
    REQUIRE(got[i] == static_cast<float>(q) * s);
    const double exact = std::clamp(double(want[i]) / s, lo, hi);
    REQUIRE(std::fabs(q - exact) <= 1.0);
    off += q != std::nearbyint(exact);
    top += q == hi || (s8 && q == lo);
  }
  INFO(what);
  CHECK(off * 100 < static_cast<int>(got.size()));
  return top;
}

} // namespace

TEST_CASE("Kernels: an int8 conv hands on, after any post-op chain, the u8 "
          "or s8 codes its readers would quantize its fp32 result to") {
  // Every post-op chain of the tests (activations of every kind, a batch
  // norm, an fp32 residual and a second activation), quantized u8 or s8
  // at a scale leaving the largest tenth of the range saturated.
  const ConvArgs args{1, 1, 1, 1, 1};
  const size_t N = 2, C = 16, K = 32, H = 10;
  TestTensor x({N, C, H, H}), w({K, C, 3, 3});
  x.set(randomVec(x.size(), 2300));
  w.set(randomVec(w.size(), 2301, -1.f / 12, 1.f / 12));
  for (int v = 0; v < 2 * TestPost::kVariants; ++v) {
    // The writer int8 with a calibrated input, then int8_dyn.
    const bool dyn = v >= TestPost::kVariants;
    const KnobSpec knob = int8Knob(dyn, -1.f, 1.f);
    TestPost post(v % TestPost::kVariants, K, {N, K, H, H}, 2302 + 10 * v);
    TestTensor y32({N, K, H, H});
    runConv(x.get(), w.get(), args, post.ops, knob, y32.get());
    const std::vector<float> want = y32.values();
    for (bool s8 : {false, true}) {
      const std::string what =
          "post-op chain " + std::to_string(v % TestPost::kVariants) +
          (dyn ? " (int8_dyn)" : "") + (s8 ? ", s8" : ", u8");
      const float m = rangeOf(want, !s8);
      const float s = m > 0.f ? 0.9f * m / (s8 ? 127.f : 255.f) : 0.01f;
      PostOps chained = post.ops;
      chained.quantizeOut = s;
      chained.quantizeS8 = s8;
      TestTensor y({N, K, H, H});
      runConv(x.get(), w.get(), args, chained, knob, y.get());
      INFO(what);
      CHECK(kern::storedMemory(y.get()).get_desc().data_type() ==
            (s8 ? dt::s8 : dt::u8));
      CHECK(kern::implOf(y.get()).memScale == s);
      const int top = checkCodes(y.values(), want, s, s8, what);
      if (m > 0.f)
        CHECK(top > 0);
    }
  }
}

TEST_CASE("Kernels: an int8 conv adding a quantized or fp32 residual hands "
          "on the codes of quantizing its fp32 result") {
  // A: x -> int8 conv + bias + ReLU, stored quantized at scale sA (as the
  // next layers take it) or fp32. B: y = act2(act(conv(x2) + bias) + A's
  // result), stored quantized at scale sB. A residual stored in B's output
  // type goes through the sum post-op (scaled), any other through a binary
  // add, or on AMX into a small output (H 10: 6,400 values) by a sum into
  // fp32 and a quantization after (convInt8's Chain::Requant).
  const ConvArgs args{1, 1, 1, 1, 1};
  const size_t N = 2, C = 16, K = 32;
  for (const size_t H : {size_t{10}, size_t{30}}) {
    INFO("H " << H);
    TestTensor x({N, C, H, H}), x2({N, K, H, H}), wA({K, C, 3, 3}),
        wB({K, K, 3, 3}), bA({1, K, 1, 1}), bB({1, K, 1, 1});
    x.set(randomVec(x.size(), 2100));
    x2.set(randomVec(x2.size(), 2101, 0.f, 1.f));
    wA.set(randomVec(wA.size(), 2102, -1.f / 12, 1.f / 12));
    wB.set(randomVec(wB.size(), 2103, -1.f / 17, 1.f / 17));
    bA.set(randomVec(bA.size(), 2104, -0.2f, 0.2f));
    bB.set(randomVec(bB.size(), 2105, -0.4f, 0.1f));
    const KnobSpec knobA = int8Knob(false, -1.f, 1.f),
                   knobB = int8Knob(false, 0.f, 1.f);

    PostOps postA;
    postA.bias = bA.get();
    postA.act = Act::Relu;
    TestTensor a32({N, K, H, H});
    runConv(x.get(), wA.get(), args, postA, knobA, a32.get());

    for (bool s8 : {false, true}) {
      for (bool quantizedResidual : {true, false}) {
        for (Act act : {Act::None, Act::Relu}) {
          for (Act act2 : {Act::Relu, Act::None}) {
            const std::string what =
                std::string(s8 ? "s8" : "u8") + " result, " +
                (quantizedResidual ? "quantized" : "fp32") +
                " residual, activation before the add " +
                (act == Act::Relu ? "relu" : "none") + ", after it " +
                (act2 == Act::Relu ? "relu" : "none");
            INFO(what);
            const float sA =
                rangeOf(a32.values(), !s8) * 0.9f / (s8 ? 127.f : 255.f);
            TestTensor a({N, K, H, H});
            PostOps chainA = postA;
            if (quantizedResidual) {
              chainA.quantizeOut = sA;
              chainA.quantizeS8 = s8;
            }
            runConv(x.get(), wA.get(), args, chainA, knobA, a.get());
            const dt aType = kern::storedMemory(a.get()).get_desc().data_type();
            REQUIRE(aType == (!quantizedResidual ? dt::f32
                              : s8               ? dt::s8
                                                 : dt::u8));
            // The residual's values as B reads them (q * sA when quantized).
            const std::vector<float> res = a.values();
            TestTensor resF({N, K, H, H});
            resF.set(res);

            PostOps postB;
            postB.bias = bB.get();
            postB.act = act;
            postB.residual = resF.get();
            postB.act2 = act2;
            TestTensor y32({N, K, H, H});
            runConv(x2.get(), wB.get(), args, postB, knobB, y32.get());
            const std::vector<float> want = y32.values();
            const float sB = rangeOf(want, !s8) * 0.8f / (s8 ? 127.f : 255.f);

            postB.residual = a.get();
            postB.quantizeOut = sB;
            postB.quantizeS8 = s8;
            TestTensor y({N, K, H, H});
            runConv(x2.get(), wB.get(), args, postB, knobB, y.get());
            CHECK(kern::storedMemory(y.get()).get_desc().data_type() ==
                  (s8 ? dt::s8 : dt::u8));
            CHECK(kern::implOf(y.get()).memScale == sB);
            CHECK(checkCodes(y.values(), want, sB, s8, what) > 0);
          }
        }
      }
    }
  }
}
