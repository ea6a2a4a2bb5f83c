// Bf16Bits.h - rounding a float to bfloat16 on its bits: one rule, in the
// scalar form the portable loops vectorise and in the AVX-512 form our
// kernels call on registers (Bf16BitsTest checks that they agree).
//
// Round to nearest, ties to even, by integer arithmetic on the float's
// bits; a NaN stays a (quiet) NaN. Not the AVX512-BF16 conversion
// instruction, which flushes subnormals to zero.
#ifndef HPVM_RT_APPROX_BF16BITS_H
#define HPVM_RT_APPROX_BF16BITS_H

#include "approx/Isa.h"

#include <immintrin.h>

#include <cstdint>

namespace hpvm::rt::approx {

/// The bits of a float rounded to bf16 in their upper half; the lower
/// half is what the rounding sum left there: mask it (0xffff0000) for the
/// rounded float, shift it out for the bf16.
constexpr uint32_t bf16RoundedBits(uint32_t bits) {
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return bits | 0x00400000u; // NaN: keep it a (quiet) NaN.
  return bits + 0x7fffu + ((bits >> 16) & 1u);
}

// GCC 12's shift intrinsics trip -W(maybe-)uninitialized on their internal
// undefined-value operand (a false positive, as in Rounding.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

/// bf16RoundedBits of 16 floats' bits.
HPVM_TARGET_AVX512 inline __m512i bf16RoundedBits(__m512i bits) {
  const __m512i magnitude =
      _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff));
  const __mmask16 nan =
      _mm512_cmpgt_epu32_mask(magnitude, _mm512_set1_epi32(0x7f800000));
  const __m512i lsb =
      _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
  return _mm512_mask_or_epi32(rounded, nan, bits,
                              _mm512_set1_epi32(0x00400000));
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

} // namespace hpvm::rt::approx

#endif // HPVM_RT_APPROX_BF16BITS_H
