// Resize.h - the coordinate rules of the resize ops (Ops.def's
// resize_nearest, resize_linear and resize_cubic rows), shared by the
// exporter (which reads them from ONNX's attribute strings) and the
// runtime (which computes with them): one list of modes, one mapping.
#ifndef HPVM_RT_RESIZE_H
#define HPVM_RT_RESIZE_H

#include <cmath>
#include <cstdint>
#include <string_view>

namespace hpvm::rt {

/// How an output pixel's index maps to an input coordinate along one axis
/// (ONNX Resize's coordinate_transformation_mode; the scalar operand
/// "coord" holds the enumerator's value). o: output index, s: the axis'
/// scale, in/out: input/output extents.
enum class ResizeCoord : uint8_t {
  HalfPixel,             ///< (o + 0.5) / s - 0.5
  PytorchHalfPixel,      ///< as HalfPixel, but 0 where out == 1
  AlignCorners,          ///< o * (in - 1) / (in * s - 1); 0 where out == 1
  Asymmetric,            ///< o / s
  TfHalfPixelForNearest, ///< (o + 0.5) / s
  HalfPixelSymmetric,    ///< HalfPixel about the centre (out / (in * s))
  /// start * (in - 1) + o * (end - start) * (in - 1) / (out - 1): the
  /// region [start, end] of the axis (fractions of in - 1), its centre
  /// where out == 1; the *_crop rows only (their roi scalars).
  TfCropAndResize,
};

/// How resize_nearest rounds a coordinate to an input index (ONNX's
/// nearest_mode; the scalar operand "rounding").
enum class NearestRounding : uint8_t {
  RoundPreferFloor, ///< nearest, halves down
  RoundPreferCeil,  ///< nearest, halves up
  Floor,
  Ceil,
};

/// The ONNX attribute values, in enumerator order.
inline constexpr std::string_view kResizeCoordNames[] = {
    "half_pixel",        "pytorch_half_pixel",        "align_corners",
    "asymmetric",        "tf_half_pixel_for_nearest", "half_pixel_symmetric",
    "tf_crop_and_resize"};
inline constexpr std::string_view kNearestRoundingNames[] = {
    "round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};

/// The input coordinate of output index \p o (float arithmetic, as ONNX
/// Runtime computes it); \p start and \p end: TfCropAndResize's region.
inline float resizeSource(ResizeCoord mode, int64_t o, float scale, int64_t in,
                          int64_t out, float start = 0.f, float end = 1.f) {
  const float x = static_cast<float>(o);
  switch (mode) {
  case ResizeCoord::HalfPixel:
    return (x + 0.5f) / scale - 0.5f;
  case ResizeCoord::PytorchHalfPixel:
    return out > 1 ? (x + 0.5f) / scale - 0.5f : 0.f;
  case ResizeCoord::AlignCorners: {
    // The resized length is in * s, as ONNX's reference takes it: out
    // where that is whole (sizes given), else fractional (a scale 0.6 of
    // 4 pixels: 2.4, of which 2 are computed).
    const float length = static_cast<float>(in) * scale;
    const float resized = std::fabs(length - static_cast<float>(out)) < 1e-3f
                              ? static_cast<float>(out)
                              : length;
    return out > 1 ? x * static_cast<float>(in - 1) / (resized - 1.f) : 0.f;
  }
  case ResizeCoord::Asymmetric:
    return x / scale;
  case ResizeCoord::TfHalfPixelForNearest:
    return (x + 0.5f) / scale;
  case ResizeCoord::HalfPixelSymmetric: {
    const float adjustment =
        static_cast<float>(out) / (static_cast<float>(in) * scale);
    const float centre = static_cast<float>(in) / 2.f;
    return centre * (1.f - adjustment) + (x + 0.5f) / scale - 0.5f;
  }
  case ResizeCoord::TfCropAndResize: {
    const float last = static_cast<float>(in - 1);
    return out > 1 ? start * last +
                         x * (end - start) * last / static_cast<float>(out - 1)
                   : 0.5f * (start + end) * last;
  }
  }
  return 0.f;
}

/// The input index nearest to coordinate \p c under \p r, clamped to
/// [0, in - 1].
inline int64_t nearestIndex(NearestRounding r, float c, int64_t in) {
  float i = 0.f;
  switch (r) {
  case NearestRounding::RoundPreferFloor:
    i = c == std::floor(c) + 0.5f ? std::floor(c) : std::round(c);
    break;
  case NearestRounding::RoundPreferCeil:
    i = c == std::floor(c) + 0.5f ? std::ceil(c) : std::round(c);
    break;
  case NearestRounding::Floor:
    i = std::floor(c);
    break;
  case NearestRounding::Ceil:
    i = std::ceil(c);
    break;
  }
  if (!(i >= 0.f))
    return 0;
  return i >= static_cast<float>(in - 1) ? in - 1 : static_cast<int64_t>(i);
}

/// ONNX's cubic convolution weights (coefficient \p a) of the four taps
/// i - 1 .. i + 2 of a coordinate \p t past tap i, t in (0, 1] (ONNX takes
/// the tap left of a whole coordinate: t = 1 there).
inline void cubicWeights(float t, float a, float w[4]) {
  const float u = t + 1.f, v = 1.f - t, z = 2.f - t;
  w[0] = ((a * u - 5.f * a) * u + 8.f * a) * u - 4.f * a;
  w[1] = ((a + 2.f) * t - (a + 3.f)) * t * t + 1.f;
  w[2] = ((a + 2.f) * v - (a + 3.f)) * v * v + 1.f;
  w[3] = ((a * z - 5.f * a) * z + 8.f * a) * z - 4.f * a;
}

} // namespace hpvm::rt

#endif // HPVM_RT_RESIZE_H
