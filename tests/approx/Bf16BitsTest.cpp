// Bf16BitsTest.cpp - the bf16 rounding rule (approx/Bf16Bits.h): exact
// results on the cases that decide it, and its scalar and AVX-512 forms
// in agreement, bit for bit.
#include "approx/Bf16Bits.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using hpvm::rt::approx::bf16RoundedBits;

namespace {

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

/// The bf16 (upper 16 bits) of f.
uint32_t bf16Of(float f) { return bf16RoundedBits(bitsOf(f)) >> 16; }

HPVM_TARGET_AVX512 void roundVector(const uint32_t* in, uint32_t* out) {
  const __m512i v = _mm512_loadu_si512(in);
  _mm512_storeu_si512(out, bf16RoundedBits(v));
}

} // namespace

TEST_CASE("Bf16Bits: nearest, ties to even, NaN quiet, no flush") {
  CHECK(bf16Of(1.0f) == 0x3f80u);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to the even one, 1.
  CHECK(bf16Of(1.0f + 0x1p-8f) == 0x3f80u);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up.
  CHECK(bf16Of(1.0f + 3 * 0x1p-8f) == 0x3f82u);
  CHECK(bf16Of(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81u); // past half: up
  CHECK(bf16Of(-2.5f) == 0xc020u);
  CHECK(bf16Of(std::numeric_limits<float>::infinity()) == 0x7f80u);
  CHECK(bf16Of(std::numeric_limits<float>::max()) == 0x7f80u); // overflows
  // The smallest subnormal stays (the AVX512-BF16 instruction flushes it).
  CHECK(bf16Of(std::numeric_limits<float>::denorm_min()) == 0x0000u);
  CHECK(bf16Of(0x1p-130f) == 0x0008u);
  // A NaN whose payload is all in the low half stays a NaN (cut off, it
  // would be infinity), made quiet.
  CHECK((bf16RoundedBits(0x7f800001u) >> 16) == 0x7fc0u);
  CHECK(bf16Of(std::numeric_limits<float>::signaling_NaN()) == 0x7fe0u);
  CHECK((bf16RoundedBits(0xffc00001u) >> 16) == 0xffc0u);
}

TEST_CASE("Bf16Bits: the AVX-512 form equals the scalar form") {
  if (!__builtin_cpu_supports("avx512f")) {
    MESSAGE("no AVX-512 on this CPU: only the scalar form runs here");
    return;
  }
  std::vector<uint32_t> in = {
      0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u,
      0x7f800001u, 0x7fc00000u, 0xffffffffu, 0x7f7fffffu,
      0x3f808000u, 0x3f818000u, 0x3f807fffu, 0x00008000u,
      0x00018000u, 0x7f7f8000u, 0x807fffffu, 0x3f80ffffu};
  std::mt19937 rng(7);
  while (in.size() < 16 * 4096)
    in.push_back(rng());
  std::vector<uint32_t> out(16);
  size_t differ = 0;
  for (size_t i = 0; i < in.size(); i += 16) {
    roundVector(&in[i], out.data());
    for (size_t j = 0; j < 16; ++j)
      differ += out[j] != bf16RoundedBits(in[i + j]);
  }
  CHECK(differ == 0);
}
