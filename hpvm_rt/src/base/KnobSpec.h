// KnobSpec.h - the knob vocabulary every part of hpvm_rt shares: a resolved
// approximation knob (KnobSpec, with the table: hpvm_rt/OpTable.h), its
// int8 input scale, and a convolution's geometry. Below every other part,
// so that approx (the approximate engines) sees only this and the table,
// kernels (the layers, which choose among the engines) see approx, and
// core sees kernels.
#ifndef HPVM_RT_BASE_KNOBSPEC_H
#define HPVM_RT_BASE_KNOBSPEC_H

#include "hpvm_rt/OpTable.h"

#include <cstdint>

namespace hpvm::rt {

/// The scale of an INT8 knob's input quantization when it is unsigned
/// (real = q * scale, q in 0..255), or 0 when the knob's calibrated range
/// is not nonnegative.
inline float int8UnsignedScale(const KnobSpec& k) {
  if (k.precision != Precision::INT8 || !k.hasRange || k.inLo < 0.f)
    return 0.f;
  return k.inHi > 0.f && k.inHi <= 3.0e38f ? k.inHi / 255.f : 1.f;
}

/// Convolution geometry (NCHW input, OIHW filter, zero padding, no
/// dilation). groups == C == K is depthwise.
struct ConvArgs {
  int padH = 0, padW = 0, strideH = 1, strideW = 1, groups = 1;
};

} // namespace hpvm::rt

#endif // HPVM_RT_BASE_KNOBSPEC_H
