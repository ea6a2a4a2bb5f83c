// FastExp.h - e^x for the softmaxes' shifted scores (x <= 0), branch-free
// so that `omp simd` loops vectorize it (libm's expf is a call per value).
#ifndef HPVM_RT_KERNELS_FASTEXP_H
#define HPVM_RT_KERNELS_FASTEXP_H

#include <cmath>
#include <cstdint>

namespace hpvm::rt::kern {

/// e^x for x <= 0 (a softmax's shifted scores), within 2 ulp down to
/// e^-87 (below it: e^-87, which is 0 next to the row's 1): x = n ln 2 + r,
/// |r| <= ln 2 / 2, e^r by its Taylor series to r^6 (error < 2e-7), 2^n by
/// the exponent bits. Branch-free, so that `omp simd` loops vectorize it
/// (with -fno-trapping-math: hpvm_rt/CMakeLists.txt). NaN gives NaN (n
/// reaches the exponent without a float-to-int conversion).
inline float expNonPositive(float x) {
  x = x < -87.f ? -87.f : x;
  const float n = std::floor(x * 1.44269504f + 0.5f);
  const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f;
  float p = 1.f / 720;
  p = p * r + 1.f / 120;
  p = p * r + 1.f / 24;
  p = p * r + 1.f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  // n + 1.5 * 2^23 holds the integer n in its low mantissa bits.
  const uint32_t biased =
      __builtin_bit_cast(uint32_t, n + 12582912.f) - 0x4B400000u + 127u;
  return p * __builtin_bit_cast(float, biased << 23);
}

} // namespace hpvm::rt::kern

#endif // HPVM_RT_KERNELS_FASTEXP_H
