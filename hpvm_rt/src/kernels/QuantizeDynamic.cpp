// QuantizeDynamic.cpp - quantize_dynamic: x on the uint8 grid of its own
// range (ONNX DynamicQuantizeLinear followed by the dequantization the
// ConvInteger or MatMulInteger reading it implies), over the whole call as
// ONNX Runtime computes it over the whole tensor. Element-wise on the
// stored layout: a blocked layout's zero padding changes neither the range
// (which always includes 0) nor itself (0 maps to 0).
#include "base/Errors.h"
#include "kernels/Numerics.h"
#include "kernels/TensorImpl.h"

#include <algorithm>
#include <cmath>

namespace hpvm::rt {
using namespace kern;

void runQuantizeDynamic(const OpCall& c) {
  applyThreads();
  dnnl::memory src = currentMemory(c.in[0]);
  dnnl::memory dst = sameLayoutOutput(c.in[0], src, c.out);
  const auto* x = static_cast<const float*>(src.get_data_handle());
  auto* y = static_cast<float*>(dst.get_data_handle());
  const auto n =
      static_cast<int64_t>(src.get_desc().get_size() / sizeof(float));
  // ONNX: the range always includes 0.
  float lo = 0.f, hi = 0.f;
#pragma omp parallel for reduction(min                                         \
                                   : lo) reduction(max                         \
                                                   : hi) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  const float scale = (hi - lo) / 255.f;
  if (!(scale > 0.f) || !std::isfinite(scale)) {
    // All zeros (or not finite: NaN or infinities, which ONNX leaves
    // undefined): zeros.
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
      y[i] = std::isfinite(scale) ? 0.f : x[i];
  } else {
    const float zero = std::clamp(std::nearbyint(-lo / scale), 0.f, 255.f);
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      float q = std::nearbyint(x[i] / scale) + zero;
      q = q < 0.f ? 0.f : (q > 255.f ? 255.f : q);
      y[i] = (q - zero) * scale;
    }
  }
  markInPlace(c.out, dst);
  roundResult(c.knob.precision, c.out);
}

} // namespace hpvm::rt
