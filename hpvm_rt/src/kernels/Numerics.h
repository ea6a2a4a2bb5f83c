// Numerics.h - the layers' reduced-precision numerics: results and
// operands rounded to fp16/bf16, and how a knob's precision runs on oneDNN
// (natively in bf16, or emulated on rounded operands).
// Non-convolution ops given a reduced-precision knob round their result.
#ifndef HPVM_RT_KERNELS_NUMERICS_H
#define HPVM_RT_KERNELS_NUMERICS_H

#include "approx/Approx.h"
#include "kernels/TensorImpl.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace hpvm::rt::kern {

/// True when oneDNN can run bf16 convolutions natively on this CPU.
bool haveNativeBf16();

/// Rounds n floats to the knob's precision (nothing for fp32).
inline void roundTo(Precision p, float* data, int64_t n) {
  if (p == Precision::FP16)
    approx::roundToHalf(data, n);
  else if (p == Precision::BF16)
    approx::roundToBf16(data, n);
}

/// Rounds y's values to the precision p (the result of a reduced-precision
/// op) on the host.
void roundResult(Precision p, Tensor* y);

/// True when x's values are known to be exactly representable in p (so
/// rounding them to p would change nothing).
bool alreadyRounded(const Tensor* x, Precision p);

/// y's new values are exactly representable in p when \p rounded (say so),
/// else they are rounded to p now.
void keepOrRound(bool rounded, Precision p, Tensor* y);

/// y was just written on the host with values copied from x: x's rounding
/// is y's.
void markHostCopied(const Tensor* x, Precision p, Tensor* y);

/// to[0..n) = from[0..n) rounded to p, in one parallel pass.
void roundCopy(Precision p, const float* from, float* to, int64_t n);

/// How a conv/dense knob is computed on oneDNN: natively in bf16, or in
/// fp32 on operands rounded to fp16/bf16 (emulation).
struct Numerics {
  bool nativeBf16 = false;
  Precision roundOperands = Precision::FP32;
  Precision roundOutput = Precision::FP32;
};

/// The numerics of \p knob's convolutions and inner products on this CPU.
Numerics numericsOf(const KnobSpec& knob);

/// The source as the primitive needs it: x in layout \p want, with its
/// values rounded first when the knob emulates a lower precision.
dnnl::memory sourceFor(const Tensor* x, const dnnl::memory::desc& want,
                       Precision roundOperands, std::vector<float>& scratch,
                       std::unique_ptr<PoolBuffer>& hold);

} // namespace hpvm::rt::kern

#endif // HPVM_RT_KERNELS_NUMERICS_H
