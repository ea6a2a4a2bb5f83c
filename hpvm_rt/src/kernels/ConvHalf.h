// ConvHalf.h - exact convolutions under an fp16 knob in half-precision
// arithmetic (approx/HalfConv.h), where the CPU has AVX512-FP16: the layer
// around the kernel (folded, packed filter cached on the tensor; layouts;
// post-ops).
#ifndef HPVM_RT_KERNELS_CONVHALF_H
#define HPVM_RT_KERNELS_CONVHALF_H

#include "kernels/Kernels.h"
#include "kernels/TensorImpl.h"

namespace hpvm::rt::kern {

/// True when runConvHalf computes this fp16 convolution under \p knob:
/// exact (fp16) or perforated (perf_fp16); the CPU has AVX512-FP16, no
/// groups, C and K multiples of 16, a residual (if any) of the output's
/// shape.
bool convHalfApplies(const KnobSpec& knob, const ConvArgs& a,
                     const PostOps& post, const Dims4& xd, const Dims4& wd,
                     const Dims4& yd);

/// The convolution with HalfConv.h's numerics: the input, the filter with
/// bias and batch norm folded in and the folded bias rounded to half; the
/// activation, residual and second activation on the fp32 sums, then the
/// result rounded to half (the emulated fp16 knob's steps). Perforated:
/// the kept rows (columns) only, the skipped ones averaged from their
/// neighbours' sums before those post-ops. y is nChw16c, or NHWC half with
/// post.halfOut (exact only; the executor asks it of no perforated one); x
/// is read as NHWC half where it is stored so.
void runConvHalf(const Tensor* x, const Tensor* w, const ConvArgs& a,
                 const PostOps& post, const KnobSpec& knob, Tensor* y,
                 const Dims4& xd, const Dims4& wd, const Dims4& yd);

} // namespace hpvm::rt::kern

#endif // HPVM_RT_KERNELS_CONVHALF_H
