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

/// How an int8 layer quantizes an input of range [lo, hi]: unsigned
/// 0..255 when the range is nonnegative (after a ReLU), else signed
/// symmetric -127..127; real value = q * scale (1 when the range is empty
/// or not finite).
struct Int8Quant {
  bool u8 = true;
  float scale = 1.f;
};
inline Int8Quant int8QuantOf(float lo, float hi) {
  Int8Quant q;
  q.u8 = lo >= 0.f;
  const float m = q.u8 ? hi : (-lo > hi ? -lo : hi);
  if (m > 0.f && m <= 3.0e38f)
    q.scale = m / (q.u8 ? 255.f : 127.f);
  return q;
}

/// The input quantization of an INT8 knob from its calibrated range;
/// scale 0 for any other knob or one without a range.
inline Int8Quant int8Calibrated(const KnobSpec& k) {
  if (k.precision != Precision::INT8 || !k.hasRange)
    return {true, 0.f};
  return int8QuantOf(k.inLo, k.inHi);
}

/// The scale of an INT8 knob's input quantization when it is unsigned
/// (real = q * scale, q in 0..255), or 0 when the knob's calibrated range
/// is not nonnegative.
inline float int8UnsignedScale(const KnobSpec& k) {
  const Int8Quant q = int8Calibrated(k);
  return q.u8 ? q.scale : 0.f;
}

/// Convolution geometry (NCHW input, OIHW filter, zero padding). groups ==
/// C == K is depthwise. Dilation d spreads the filter's taps d pixels
/// apart (1: adjacent), so a window of k taps spans (k - 1) * d + 1 pixels.
struct ConvArgs {
  int padH = 0, padW = 0, strideH = 1, strideW = 1, groups = 1;
  int dilH = 1, dilW = 1;

  bool dilated() const { return dilH != 1 || dilW != 1; }
  /// The pixels a window of \p taps spans along H (W).
  int64_t spanH(int64_t taps) const { return (taps - 1) * dilH + 1; }
  int64_t spanW(int64_t taps) const { return (taps - 1) * dilW + 1; }
};

/// Transposed convolution geometry (conv_transpose: NCHW input, filter
/// C x K/groups x KH x KW): output pixel (i, j) sums input pixel (h, w)
/// times tap (r, t) where i = h * strideH - padTop + r * dilH (and so on
/// for j); pads remove output rows and columns at either end (an ONNX
/// output_padding is a negative bottom or right pad).
struct TransposeArgs {
  int padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  int strideH = 1, strideW = 1, dilH = 1, dilW = 1, groups = 1;

  int64_t outH(int64_t h, int64_t taps) const {
    return (h - 1) * strideH + (taps - 1) * dilH + 1 - padTop - padBottom;
  }
  int64_t outW(int64_t w, int64_t taps) const {
    return (w - 1) * strideW + (taps - 1) * dilW + 1 - padLeft - padRight;
  }
};

} // namespace hpvm::rt

#endif // HPVM_RT_BASE_KNOBSPEC_H
