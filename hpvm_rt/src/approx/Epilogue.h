// Epilogue.h - elementwise work (the layer's post-ops) that the approximate
// convolutions apply to their output while it is still in cache, instead
// of the caller making extra passes over the whole output.
#ifndef HPVM_RT_APPROX_EPILOGUE_H
#define HPVM_RT_APPROX_EPILOGUE_H

#include "kernels/Kernels.h"

#include <cstdint>

namespace hpvm::rt::approx {

/// Elementwise work on final output values. The convolutions call apply()
/// exactly once for every output value, on contiguous runs of one NCHW
/// output plane, from several threads at once (apply must be thread safe).
class Epilogue {
public:
  virtual ~Epilogue() = default;
  /// Transforms v[0..len), the values at offsets off..off+len-1 of output
  /// plane (n, k), in place.
  virtual void apply(int64_t n, int64_t k, int64_t off, float* v,
                     int64_t len) const = 0;
};

/// convPerforated of Kernels.h, then `epi` on every output value (none if
/// null).
void convPerforated(const float* x, int64_t N, int64_t C, int64_t H, int64_t W,
                    const float* w, int64_t K, int64_t KH, int64_t KW,
                    const ConvArgs& a, const KnobSpec& knob, float* y,
                    const Epilogue* epi);

/// convSampled of Kernels.h, then `epi` on every output value (none if
/// null).
void convSampled(const float* x, int64_t N, int64_t C, int64_t H, int64_t W,
                 const float* w, int64_t K, int64_t KH, int64_t KW,
                 const ConvArgs& a, const KnobSpec& knob, float* y,
                 const Epilogue* epi);

} // namespace hpvm::rt::approx

#endif // HPVM_RT_APPROX_EPILOGUE_H
