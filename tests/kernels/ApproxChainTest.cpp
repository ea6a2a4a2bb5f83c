// ApproxChainTest.cpp - low-precision chains into the approximate engines:
// an int8 convolution's u8 result (PostOps::quantizeOut) read by perforated
// and sampled int8 convolutions, a bf16 convolution's bf16 result
// (PostOps::bf16Out) by perforated and sampled bf16 ones. They take the
// stored codes as they are and compute what they compute from the same
// values in fp32.
#include "KernelTestUtil.h"
#include "approx/ConvGeometry.h"
#include "approx/Isa.h"
#include "kernels/TensorImpl.h"

#include <algorithm>
#include <string>
#include <vector>

using namespace hpvm::rt;
using namespace hpvm::rt::test;

namespace {

constexpr size_t N = 2, C = 16, K = 32, H = 12;
const ConvArgs same{1, 1, 1, 1, 1};

/// A chain's input x, the producer A's filter wA and the reader B's wB,
/// from seeds seed.., with the filters' value ranges +-a and +-b.
struct ChainTensors {
  TestTensor x{{N, C, H, H}}, wA{{K, C, 3, 3}}, wB{{K, K, 3, 3}};
  ChainTensors(unsigned seed, float a, float b) {
    x.set(randomVec(x.size(), seed));
    wA.set(randomVec(wA.size(), seed + 1, -a, a));
    wB.set(randomVec(wB.size(), seed + 2, -b, b));
  }
};

/// B (knob variant v at rate 2, bias and ReLU) on the chained tensor and on
/// an fp32 copy of its values: the same results. Returns whether B ran on
/// a blocked engine.
bool readsAsPlain(TestTensor& chained, ChainTensors& t, KnobSpec knobB,
                  Variant v) {
  knobB.variant = v;
  knobB.rate = 2;
  knobB.offset = 1;
  TestTensor plain({N, K, H, H});
  plain.set(chained.values());
  TestPost post(1, K, {N, K, H, H}, 6003);
  TestTensor yChain({N, K, H, H}), yPlain({N, K, H, H});
  const uint64_t before = approx::blockedRuns();
  runConv(chained.get(), t.wB.get(), same, post.ops, knobB, yChain.get());
  const bool blocked = approx::blockedRuns() > before;
  runConv(plain.get(), t.wB.get(), same, post.ops, knobB, yPlain.get());
  CHECK_MESSAGE(yChain.values() == yPlain.values(), "variant " << int(v));
  return blocked;
}

} // namespace

TEST_CASE("Kernels: perforated and sampled int8 convolutions read a u8 "
          "chained input as the fp32 values it holds") {
  // A (int8, ReLU) writes u8 at B's input scale; B (perf_int8 or
  // samp_int8 with range [0, hiB]) reads it, and reads a copy of its
  // values in fp32: the two must be equal (B's quantization of q * s
  // gives q back).
  ChainTensors t(6100, 1.f / 12, 1.f / 17);
  PostOps relu;
  relu.act = Act::Relu;
  const KnobSpec knobA = int8Knob(false, -1.f, 1.f);
  TestTensor a32({N, K, H, H});
  runConv(t.x.get(), t.wA.get(), same, relu, knobA, a32.get());
  const std::vector<float> a32v = a32.values();
  const float hiB = 0.8f * *std::max_element(a32v.begin(), a32v.end());
  PostOps chained = relu;
  chained.quantizeOut = int8UnsignedScale(int8Knob(false, 0.f, hiB));
  TestTensor aq({N, K, H, H});
  runConv(t.x.get(), t.wA.get(), same, chained, knobA, aq.get());
  REQUIRE(kern::storedMemory(aq.get()).get_desc().data_type() ==
          dnnl::memory::data_type::u8);
  for (Variant v : {Variant::PerfRow, Variant::PerfCol, Variant::Samp}) {
    // (The blocked engines, which take the u8 codes in place.)
    CHECK_MESSAGE(readsAsPlain(aq, t, int8Knob(false, 0.f, hiB), v),
                  "variant " << int(v));
    // (The chained tensor still holds its u8 codes.)
    CHECK(kern::storedMemory(aq.get()).get_desc().data_type() ==
          dnnl::memory::data_type::u8);
  }
}

TEST_CASE("Kernels: perforated and sampled bf16 convolutions read a bf16 "
          "chained input as the fp32 values it holds") {
  ChainTensors t(6200, 0.2f, 0.1f);
  const KnobSpec bf16 = knobOf(Variant::Exact, Precision::BF16);
  PostOps chained;
  chained.act = Act::Relu;
  chained.bf16Out = true;
  TestTensor a({N, K, H, H});
  runConv(t.x.get(), t.wA.get(), same, chained, bf16, a.get());
  const bool native = approx::isaLevel() >= approx::IsaLevel::Avx512Bf16;
  CHECK((kern::storedMemory(a.get()).get_desc().data_type() ==
         dnnl::memory::data_type::bf16) == native);
  for (Variant v : {Variant::PerfRow, Variant::PerfCol, Variant::Samp})
    readsAsPlain(a, t, knobOf(Variant::Exact, Precision::BF16), v);
}
