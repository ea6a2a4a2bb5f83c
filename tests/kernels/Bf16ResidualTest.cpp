// Bf16ResidualTest.cpp - bf16 chains across residual adds
// (PostOps::bf16Out with a residual): a bf16 result read as the next
// convolution's input and as its residual, and a convolution adding a
// residual that stores its own result as bf16.
#include "KernelTestUtil.h"
#include "approx/Approx.h"
#include "approx/Isa.h"
#include "kernels/TensorImpl.h"

#include <string>
#include <vector>

using namespace hpvm::rt;
using namespace hpvm::rt::test;

TEST_CASE("Kernels: a bf16 conv adding a bf16 or fp32 residual stores the "
          "bf16 rounding of its fp32 result") {
  // A: x -> bf16 conv + ReLU, stored as bf16 (chained) or fp32. B: y =
  // relu(conv(A) + A), stored as bf16 (chained) or fp32. B's bf16 values
  // must be the rounding of the fp32 result computed from A rounded to bf16
  // (B rounds its input anyway; the residual is carried in bf16).
  const ConvArgs same{1, 1, 1, 1, 1};
  const size_t N = 2, C = 16, K = 32, H = 10;
  TestTensor x({N, C, H, H}), wA({K, C, 3, 3}), wB({K, K, 3, 3});
  x.set(randomVec(x.size(), 2300));
  wA.set(randomVec(wA.size(), 2301, -0.2f, 0.2f));
  wB.set(randomVec(wB.size(), 2302, -0.1f, 0.1f));
  const KnobSpec bf16 = knobOf(Variant::Exact, Precision::BF16);
  const bool native = approx::isaLevel() >= approx::IsaLevel::Avx512Bf16;
  auto storedBf16 = [](TestTensor& t) {
    return kern::storedMemory(t.get()).get_desc().data_type() ==
           dnnl::memory::data_type::bf16;
  };

  // The reference: A in fp32, rounded to bf16; B from it in fp32.
  TestTensor a0({N, K, H, H});
  PostOps relu;
  relu.act = Act::Relu;
  runConv(x.get(), wA.get(), same, relu, bf16, a0.get());
  std::vector<float> aRounded = a0.values();
  approx::roundToBf16(aRounded.data(), int64_t(aRounded.size()));
  TestTensor ar({N, K, H, H}), b0({N, K, H, H});
  ar.set(aRounded);
  PostOps addRelu;
  addRelu.residual = ar.get();
  addRelu.act2 = Act::Relu;
  runConv(ar.get(), wB.get(), same, addRelu, bf16, b0.get());
  std::vector<float> want = b0.values();
  approx::roundToBf16(want.data(), int64_t(want.size()));
  // Without native bf16 kernels nothing is stored as bf16: a "chained" A
  // is B's residual in fp32.
  addRelu.residual = a0.get();
  runConv(ar.get(), wB.get(), same, addRelu, bf16, b0.get());
  std::vector<float> wantFp32Residual = b0.values();
  approx::roundToBf16(wantFp32Residual.data(),
                      int64_t(wantFp32Residual.size()));

  for (bool aChained : {false, true})
    for (bool bChained : {false, true}) {
      const std::string what = std::string("A ") +
                               (aChained ? "bf16" : "fp32") + ", B " +
                               (bChained ? "bf16" : "fp32");
      TestTensor a({N, K, H, H}), b({N, K, H, H});
      PostOps pa = relu;
      pa.bf16Out = aChained;
      runConv(x.get(), wA.get(), same, pa, bf16, a.get());
      PostOps pb;
      pb.residual = aChained ? a.get() : ar.get();
      pb.act2 = Act::Relu;
      pb.bf16Out = bChained;
      runConv(aChained ? a.get() : ar.get(), wB.get(), same, pb, bf16, b.get());
      if (native) {
        CHECK_MESSAGE(storedBf16(a) == aChained, what);
        CHECK_MESSAGE(storedBf16(b) == bChained, what);
      }
      std::vector<float> got = b.values(), rounded = got;
      approx::roundToBf16(rounded.data(), int64_t(rounded.size()));
      if (bChained && native)
        CHECK_MESSAGE(rounded == got, what << ": not bf16 values");
      // fp32 sums in another order may round to the neighbouring bf16.
      checkClose(rounded, aChained && !native ? wantFp32Residual : want,
                 1.0 / 128, 1e-6, what);
    }
}
