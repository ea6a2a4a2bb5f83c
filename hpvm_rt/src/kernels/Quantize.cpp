// Quantize.cpp - quantize and quantize_dynamic: x rounded to the grid of a
// linear quantization (ONNX QuantizeLinear followed by its
// DequantizeLinear; DynamicQuantizeLinear followed by the dequantization
// the ConvInteger or MatMulInteger reading it implies), the values a
// pre-quantized model's next layer reads. Element-wise, so they run on the
// input's stored layout, padding included: a zero point inside the range
// maps 0 to 0 and the padding stays zero (and a dynamic range always
// includes 0, so the padding does not change it).
#include "base/Errors.h"
#include "kernels/Numerics.h"
#include "kernels/TensorImpl.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hpvm::rt {
using namespace kern;

namespace {

/// c.out = the grid values of c.in[0] for scale, zero point and integer
/// range lo..hi: ONNX's QuantizeLinear, saturate(round_half_even(x /
/// scale) + zero), then DequantizeLinear, (q - zero) * scale (nearbyint
/// rounds half to even in the default rounding mode). scale 0: zeros.
void onGrid(const OpCall& c, float scale, float zero, float lo, float hi) {
  dnnl::memory src = currentMemory(c.in[0]);
  dnnl::memory dst = sameLayoutOutput(c.in[0], src, c.out);
  const auto* x = static_cast<const float*>(src.get_data_handle());
  auto* y = static_cast<float*>(dst.get_data_handle());
  const auto n =
      static_cast<int64_t>(src.get_desc().get_size() / sizeof(float));
  if (scale == 0.f) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
      y[i] = 0.f;
  } else {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      float q = std::nearbyint(x[i] / scale) + zero;
      q = q < lo ? lo : (q > hi ? hi : q);
      y[i] = (q - zero) * scale;
    }
  }
  markInPlace(c.out, dst);
  roundResult(c.knob.precision, c.out);
}

} // namespace

void runQuantize(const OpCall& c) {
  applyThreads();
  const auto scale = static_cast<float>(c.scalars[0]);
  const auto zero = static_cast<float>(c.scalars[1]);
  const auto lo = static_cast<float>(c.scalars[2]);
  const auto hi = static_cast<float>(c.scalars[3]);
  HPVM_ASSERT(scale > 0.f && lo <= zero && zero <= hi,
              "quantize scalars unchecked");
  onGrid(c, scale, zero, lo, hi);
}

void runQuantizeDynamic(const OpCall& c) {
  applyThreads();
  // ONNX's DynamicQuantizeLinear: uint8, over the whole tensor (here the
  // whole call), the range always including 0.
  const dnnl::memory src = currentMemory(c.in[0]);
  const auto* x = static_cast<const float*>(src.get_data_handle());
  const auto n =
      static_cast<int64_t>(src.get_desc().get_size() / sizeof(float));
  float lo = 0.f, hi = 0.f;
#pragma omp parallel for reduction(min                                         \
                                   : lo) reduction(max                         \
                                                   : hi) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  float scale = (hi - lo) / 255.f;
  // All zeros: zeros (NaN or infinite values, which ONNX leaves undefined,
  // give NaNs).
  if (!std::isfinite(scale))
    scale = std::numeric_limits<float>::quiet_NaN();
  const float zero =
      scale > 0.f ? std::clamp(std::nearbyint(-lo / scale), 0.f, 255.f) : 0.f;
  onGrid(c, scale, zero, 0.f, 255.f);
}

} // namespace hpvm::rt
