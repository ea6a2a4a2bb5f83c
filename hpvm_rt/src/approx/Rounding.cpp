// Rounding.cpp - fp16 and bf16 numerics on float32 data: every element is
// rounded to the narrower format (round to nearest, ties to even) and widened
// back, so that accuracy effects of half precision are real on the CPU.
#include "kernels/Kernels.h"

#include <cstring>

namespace hpvm::rt::approx {

void roundToHalf(float* data, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i)
    data[i] = static_cast<float>(static_cast<_Float16>(data[i]));
}

void roundToBf16(float* data, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &data[i], sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u)
      bits |= 0x00400000u; // NaN: keep it a (quiet) NaN.
    else
      bits += 0x7fffu + ((bits >> 16) & 1u);
    bits &= 0xffff0000u;
    std::memcpy(&data[i], &bits, sizeof bits);
  }
}

} // namespace hpvm::rt::approx
