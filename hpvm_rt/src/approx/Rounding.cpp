// Rounding.cpp - fp16 and bf16 numerics on float32 data: every element is
// rounded to the narrower format (round to nearest, ties to even) and widened
// back, so that accuracy effects of half precision are real on the CPU.
#include "approx/Approx.h"

#include "approx/Bf16Bits.h"
#include "approx/Isa.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hpvm::rt::approx {

namespace {

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

float fromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

/// IEEE binary16 round-to-nearest-even of one float, widened back (the
/// portable path and the tail of the vector loops).
/// Elements below which rounding runs on the calling thread alone.
constexpr int64_t kParallelMin = int64_t(1) << 16;

float roundHalfScalar(float f) {
  const uint32_t x = bitsOf(f);
  const uint32_t sign = x & 0x80000000u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u)
    return fromBits(x | 0x00400000u); // NaN stays a (quiet) NaN.
  if (a >= 0x477ff000u)               // >= 65520 rounds to infinity.
    return fromBits(sign | 0x7f800000u);
  if (a <= 0x33000000u) // <= 2^-25 rounds to zero (the tie goes even).
    return fromBits(sign);
  if (a < 0x38800000u) {
    // Subnormal half: a multiple of 2^-24; scaling by powers of two is
    // exact and nearbyint rounds to nearest even.
    const float q = std::nearbyint(std::fabs(f) * 16777216.f) / 16777216.f;
    return fromBits(sign | bitsOf(q));
  }
  // Normal half: keep 10 of the 23 mantissa bits, ties to even.
  const uint32_t r = (a + 0xfffu + ((a >> 13) & 1u)) & ~0x1fffu;
  return fromBits(sign | r);
}

} // namespace

// GCC 12's conversion intrinsics trip -W(maybe-)uninitialized on their
// internal undefined-value operand (a false positive).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
namespace {

/// Rounds data[i..end) to binary16 and back with AVX-512's conversions
/// (round to nearest even), 16 at a time, the tail (whole short rows, in
/// the epilogues) under a mask.
HPVM_TARGET_AVX512 void roundHalfAvx512(float* data, int64_t i, int64_t end) {
  for (; i + 16 <= end; i += 16) {
    const __m256i h =
        _mm512_cvtps_ph(_mm512_loadu_ps(data + i),
                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm512_storeu_ps(data + i, _mm512_cvtph_ps(h));
  }
  if (i < end) {
    const __mmask16 m = static_cast<__mmask16>((1u << (end - i)) - 1u);
    const __m256i h =
        _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, data + i),
                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm512_mask_storeu_ps(data + i, m, _mm512_cvtph_ps(h));
  }
}

/// Rounds data[b..end) to binary16 and back: AVX-512, or F16C's 8 at a time
/// (the x86-64-v3 baseline has it) and the scalar rounding for the tail;
/// the same results.
void roundHalfRange(float* data, int64_t b, int64_t end) {
  if (haveAvx512()) {
    roundHalfAvx512(data, b, end);
    return;
  }
  int64_t i = b;
#if defined(__F16C__)
  for (; i + 8 <= end; i += 8) {
    const __m128i h =
        _mm256_cvtps_ph(_mm256_loadu_ps(data + i),
                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(data + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < end; ++i)
    data[i] = roundHalfScalar(data[i]);
}

} // namespace

void roundToHalf(float* data, int64_t n) {
  // Short runs (the convolutions' epilogues call this per output row)
  // stay out of OpenMP: even an if(false) region costs a team setup.
  if (n <= kParallelMin) {
    roundHalfRange(data, 0, n);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < n; b += 4096)
    roundHalfRange(data, b, std::min<int64_t>(n, b + 4096));
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace {

/// Rounds data[b..end) to bfloat16 and back.
void roundBf16Range(float* data, int64_t b, int64_t end) {
  // Integer rounding on the float's bits (vectorised by the compiler).
#pragma omp simd
  for (int64_t i = b; i < end; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &data[i], sizeof bits);
    bits = bf16RoundedBits(bits) & 0xffff0000u;
    std::memcpy(&data[i], &bits, sizeof bits);
  }
}

} // namespace

void roundToBf16(float* data, int64_t n) {
  if (n <= kParallelMin) {
    roundBf16Range(data, 0, n);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < n; b += 4096)
    roundBf16Range(data, b, std::min<int64_t>(n, b + 4096));
}

} // namespace hpvm::rt::approx
