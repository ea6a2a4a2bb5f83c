// KnobSpec.h - the vocabulary every part of hpvm_rt shares: a resolved
// approximation knob (algorithm, numerics, rate, offset, int8 range) and a
// convolution's geometry. It depends on nothing else of hpvm_rt, so that
// the parts stay layered: approx (the approximate engines) sees only this,
// kernels (the layers, which choose among the engines) see approx, and core
// sees kernels.
#ifndef HPVM_RT_KNOBSPEC_H
#define HPVM_RT_KNOBSPEC_H

#include <cstdint>

namespace hpvm::rt {

/// Numerics of a knob (Ops.def Precision column). INT8: 8-bit operands
/// (per-output-channel weight scales, an activation scale from a
/// calibration), 32-bit accumulation; INT8DYN: the same with the activation
/// scale taken from each batch's own range (no calibration).
enum class Precision : uint8_t { FP32, FP16, BF16, INT8, INT8DYN };

/// True for the 8-bit integer precisions.
inline bool isInt8(Precision p) {
  return p == Precision::INT8 || p == Precision::INT8DYN;
}
/// Algorithm of a knob (Ops.def Variant column).
enum class Variant : uint8_t { Exact, PerfRow, PerfCol, Samp };

/// One knob as the kernels need it (resolved from an Ops.def HPVM_KNOB row).
struct KnobSpec {
  int id = 11;
  Variant variant = Variant::Exact;
  Precision precision = Precision::FP32;
  int rate = 1;   ///< Perforation/sampling rate r; 1 means exact.
  int offset = 0; ///< Offset 0..r-1.
  /// INT8: the calibrated range [inLo, inHi] of the op's input, quantized
  /// unsigned (0..255) when inLo >= 0, else signed with the symmetric scale
  /// max(-inLo, inHi) / 127 (saturating at -128..127).
  /// Filled by the executor from the active calibration.
  bool hasRange = false;
  float inLo = 0.f, inHi = 0.f;
};

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

#endif // HPVM_RT_KNOBSPEC_H
