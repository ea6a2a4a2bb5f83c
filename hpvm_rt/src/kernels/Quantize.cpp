// Quantize.cpp - quantize: x rounded to the grid of a linear quantization
// (ONNX QuantizeLinear followed by its DequantizeLinear), the values a
// pre-quantized model's next layer reads. Element-wise, so it runs on the
// input's stored layout, padding included: a zero point inside the range
// maps 0 to 0 and the padding stays zero.
#include "base/Errors.h"
#include "kernels/Numerics.h"
#include "kernels/TensorImpl.h"

#include <cmath>

namespace hpvm::rt {
using namespace kern;

void runQuantize(const OpCall& c) {
  applyThreads();
  const float scale = static_cast<float>(c.scalars[0]);
  const float zero = static_cast<float>(c.scalars[1]);
  const float lo = static_cast<float>(c.scalars[2]);
  const float hi = static_cast<float>(c.scalars[3]);
  HPVM_ASSERT(scale > 0.f && lo <= zero && zero <= hi,
              "quantize scalars unchecked");
  dnnl::memory src = currentMemory(c.in[0]);
  dnnl::memory dst = sameLayoutOutput(c.in[0], src, c.out);
  const auto* x = static_cast<const float*>(src.get_data_handle());
  auto* y = static_cast<float*>(dst.get_data_handle());
  const auto n =
      static_cast<int64_t>(src.get_desc().get_size() / sizeof(float));
  // ONNX's QuantizeLinear: saturate(round_half_even(x / scale) + zero);
  // DequantizeLinear: (q - zero) * scale. nearbyint rounds half to even
  // in the default rounding mode.
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float q = std::nearbyint(x[i] / scale) + zero;
    q = q < lo ? lo : (q > hi ? hi : q);
    y[i] = (q - zero) * scale;
  }
  markInPlace(c.out, dst);
  roundResult(c.knob.precision, c.out);
}

} // namespace hpvm::rt
