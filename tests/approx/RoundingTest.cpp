// RoundingTest.cpp - fp16 and bf16 rounding against numpy's float16 and a
// bit-exact NumPy bf16 rounding, on random bit patterns and special values.
#include "approx/Approx.h"

#include "Oracle.h"

#include <doctest/doctest.h>

#include <cstring>
#include <limits>

using namespace hpvm::rt;
using namespace hpvm::test;

namespace {

uint32_t bitsOf(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

float fromBits(uint32_t b) {
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

/// Special values, rounding ties, the fp16 subnormal and overflow ranges,
/// then random bit patterns of every exponent.
Array roundingInputs() {
  Array a;
  const float specials[] = {0.f,
                            -0.f,
                            1.f,
                            -1.f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            fromBits(0x7f800001u), // Signalling NaN.
                            fromBits(0xff812345u),
                            65504.f,
                            65519.f,
                            65520.f,
                            1e9f,
                            6.1035156e-05f, // Smallest normal half.
                            5.9604645e-08f, // Smallest subnormal half.
                            2.9802322e-08f, // Tie to zero.
                            8.9406967e-08f, // Tie between subnormals.
                            1.f + 1.f / 2048.f,
                            1.f + 3.f / 2048.f,
                            1.f + 1.f / 256.f,
                            1.f + 3.f / 256.f,
                            std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min(),
                            fromBits(0x7f7f8000u),
                            fromBits(0x3f808000u),
                            fromBits(0x3f818000u)};
  for (float v : specials)
    a.data.push_back(v);
  uint32_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 1664525u + 1013904223u;
    uint32_t b = state;
    // Half of them near the fp16 range, to exercise its rounding.
    if (i % 2)
      b = (b & 0x807fffffu) | ((100u + (b >> 24) % 50u) << 23);
    a.data.push_back(fromBits(b));
  }
  a.shape = {static_cast<int64_t>(a.data.size())};
  return a;
}

int64_t firstBitMismatch(const std::vector<float>& got,
                         const std::vector<float>& want) {
  if (got.size() != want.size())
    return 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool nanGot = got[i] != got[i], nanWant = want[i] != want[i];
    if (nanGot || nanWant) {
      if (nanGot != nanWant)
        return static_cast<int64_t>(i);
      continue; // NaN payloads may differ between conversions.
    }
    if (bitsOf(got[i]) != bitsOf(want[i]))
      return static_cast<int64_t>(i);
  }
  return -1;
}

} // namespace

TEST_CASE("Approx: fp16 and bf16 rounding match NumPy bit for bit") {
  const Array in = roundingInputs();
  OracleBatch batch;
  const size_t half = batch.addRound("half", in);
  const size_t bf16 = batch.addRound("bf16", in);
  batch.run();

  std::vector<float> gotHalf = in.data;
  approx::roundToHalf(gotHalf.data(), static_cast<int64_t>(gotHalf.size()));
  const std::vector<float> wantHalf = batch.result(half);
  const int64_t badHalf = firstBitMismatch(gotHalf, wantHalf);
  INFO("fp16 element " << badHalf << " input bits " << std::hex
                       << (badHalf >= 0 ? bitsOf(in.data[badHalf]) : 0u));
  CHECK(badHalf == -1);
  // One element at a time takes the portable (non-vector) path.
  std::vector<float> scalarHalf = in.data;
  for (float& v : scalarHalf)
    approx::roundToHalf(&v, 1);
  const int64_t badScalar = firstBitMismatch(scalarHalf, wantHalf);
  INFO("scalar fp16 element "
       << badScalar << " input bits " << std::hex
       << (badScalar >= 0 ? bitsOf(in.data[badScalar]) : 0u));
  CHECK(badScalar == -1);

  std::vector<float> gotBf = in.data;
  approx::roundToBf16(gotBf.data(), static_cast<int64_t>(gotBf.size()));
  const std::vector<float> wantBf = batch.result(bf16);
  CHECK(firstBitMismatch(gotBf, wantBf) == -1);
  // bf16 rounding keeps NaN payload rules exactly too.
  for (size_t i = 0; i < in.data.size(); ++i)
    if (in.data[i] != in.data[i])
      CHECK(bitsOf(gotBf[i]) == bitsOf(wantBf[i]));
}

TEST_CASE("Approx: rounding handles tails and known values") {
  // Lengths around the vector width exercise the remainder loops.
  for (int64_t n : {0, 1, 7, 15, 16, 17, 33}) {
    std::vector<float> v(n, 1.f + 1.f / 4096.f);
    approx::roundToHalf(v.data(), n);
    for (float f : v)
      CHECK(f == 1.f);
    std::vector<float> b(n, 1.f + 3.f / 256.f);
    approx::roundToBf16(b.data(), n);
    for (float f : b)
      CHECK(f == 1.015625f);
  }
  float big[] = {70000.f, -70000.f, 3.14159265f};
  approx::roundToHalf(big, 3);
  CHECK(big[0] == std::numeric_limits<float>::infinity());
  CHECK(big[1] == -std::numeric_limits<float>::infinity());
  CHECK(big[2] == 3.140625f);
}
