// Approx.h - the approximate convolutions on NCHW float32 data and the
// reduced-precision rounding, as the layers and the tests call them.
#ifndef HPVM_RT_APPROX_APPROX_H
#define HPVM_RT_APPROX_APPROX_H

#include "base/KnobSpec.h"

#include <cstdint>

namespace hpvm::rt::approx {

/// Row or column perforation (KnobSpec.variant PerfRow/PerfCol): computes
/// only the kept output rows/columns, at proportionally lower cost, and
/// interpolates the skipped ones as HPVM does (reference section 6.2).
void convPerforated(const float* x, int64_t N, int64_t C, int64_t H, int64_t W,
                    const float* w, int64_t K, int64_t KH, int64_t KW,
                    const ConvArgs& a, const KnobSpec& knob, float* y);
/// Filter sampling (reference section 6.3), regular and irregular variants.
void convSampled(const float* x, int64_t N, int64_t C, int64_t H, int64_t W,
                 const float* w, int64_t K, int64_t KH, int64_t KW,
                 const ConvArgs& a, const KnobSpec& knob, float* y);
/// Rounds every element to IEEE binary16 and back (round to nearest even).
void roundToHalf(float* data, int64_t n);
/// Rounds every element to bfloat16 and back (round to nearest even).
void roundToBf16(float* data, int64_t n);

} // namespace hpvm::rt::approx

#endif // HPVM_RT_APPROX_APPROX_H
