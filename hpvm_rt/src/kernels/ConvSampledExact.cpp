// ConvSampledExact.cpp - filter sampling as the exact convolution of the
// sampled filter (ConvSampledExact.h).
#include "kernels/ConvSampledExact.h"

#include "approx/ConvGeometry.h"
#include "kernels/ConvHalf.h"
#include "kernels/DerivedWeights.h"
#include "kernels/Numerics.h"
#include "kernels/Primitives.h"

#include <cstring>
#include <string>
#include <vector>

namespace hpvm::rt::kern {

bool sampledAsExact(const KnobSpec& knob, const ConvArgs& a,
                    const PostOps& post, const Dims4& xd, const Dims4& wd,
                    const Dims4& yd) {
  if (knob.variant != Variant::Samp || knob.rate <= 1 || a.groups != 1)
    return false;
  if (knob.precision == Precision::FP16)
    return convHalfApplies(exactAt(knob), a, post, xd, wd, yd);
  if (!(knob.precision == Precision::FP32 ||
        (knob.precision == Precision::BF16 && knob.rate == 2)))
    return false;
  if (knob.precision == Precision::BF16 && numericsOf(knob).nativeBf16)
    return true;
  // Where the exact convolution runs on the Winograd kernels, it beats the
  // engines' reduced GEMM at every rate (VGG16 (F-MNIST), batch 64, 1
  // thread, Intel Xeon (AMX): the engines ran 0.4-1.2x the Winograd
  // layers' exact time).
  if (knob.precision == Precision::FP32 && winogradApplies(a, xd, wd, yd))
    return true;
  // The engines' reduced GEMM pays where it skips much arithmetic (rate 2)
  // of a wide filter. Batch 64, 1 thread, Intel Xeon (AMX), VGG16- and
  // ResNet-18-CIFAR's layers: rate 2 engines 1.3-1.5x fp32 with C x K of
  // 8192 or more, 0.5-1.0x below; rate 3 1.1x from 8192 to 32768, 0.6-1.0x
  // elsewhere; rate 4 0.4-1.0x everywhere.
  const int64_t wide = wd[0] * wd[1];
  return !((knob.rate == 2 && wide >= 8192) ||
           (knob.rate == 3 && wide >= 8192 && wide <= 32768));
}

std::shared_ptr<const Tensor> sampledFilter(const Tensor* w,
                                            const KnobSpec& knob) {
  std::string key = "sampled|"; // (raw bytes: built on every call)
  appendKey(key, knob.rate, knob.offset);
  const Dims4 wd = dims4(w);
  return derivedTensor(w, key, wd, [&](const float* from, float* to) {
    const int64_t perK = wd[1] * wd[2] * wd[3];
    const std::vector<int64_t> kept =
        approx::samplingKept(wd[1], wd[2], wd[3], knob.rate, knob.offset);
    const float scale = approx::samplingScale(knob.rate);
    std::memset(to, 0, sizeof(float) * size_t(wd[0] * perK));
    for (int64_t k = 0; k < wd[0]; ++k)
      for (const int64_t e : kept)
        to[k * perK + e] = from[k * perK + e] * scale;
  });
}

} // namespace hpvm::rt::kern
