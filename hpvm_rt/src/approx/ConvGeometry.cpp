// ConvGeometry.cpp - operand checks and the skip rules shared by the
// perforated and sampled convolutions.
#include "approx/ConvGeometry.h"

#include "base/Errors.h"

#include <string>

namespace hpvm::rt::approx {

namespace {

const char* describeVariant(Variant v) {
  switch (v) {
  case Variant::Exact:
    return "exact";
  case Variant::PerfRow:
    return "row perforation";
  case Variant::PerfCol:
    return "column perforation";
  case Variant::Samp:
    return "filter sampling";
  }
  return "unknown";
}

} // namespace

ConvGeometry checkConv(const char* who, int64_t N, int64_t C, int64_t H,
                       int64_t W, int64_t K, int64_t KH, int64_t KW,
                       const ConvArgs& a, const KnobSpec& knob,
                       Variant expected1, Variant expected2) {
  HPVM_ASSERT(knob.variant == expected1 || knob.variant == expected2,
              std::string(who) + ": knob " + std::to_string(knob.id) + " is " +
                  describeVariant(knob.variant) + ", expected " +
                  describeVariant(expected1) +
                  (expected2 != expected1
                       ? std::string(" or ") + describeVariant(expected2)
                       : std::string()));
  HPVM_ASSERT(knob.rate >= 1 && knob.rate <= 4,
              std::string(who) + ": knob " + std::to_string(knob.id) +
                  " has rate " + std::to_string(knob.rate) +
                  ", expected 1 to 4");
  HPVM_ASSERT(knob.offset >= 0 && knob.offset < knob.rate,
              std::string(who) + ": knob " + std::to_string(knob.id) +
                  " has offset " + std::to_string(knob.offset) +
                  ", expected 0.." + std::to_string(knob.rate - 1));
  HPVM_ASSERT(N > 0 && C > 0 && H > 0 && W > 0,
              std::string(who) + ": input shape " + std::to_string(N) + "x" +
                  std::to_string(C) + "x" + std::to_string(H) + "x" +
                  std::to_string(W) + " has a non-positive extent");
  HPVM_ASSERT(K > 0 && KH > 0 && KW > 0,
              std::string(who) + ": filter with " + std::to_string(K) +
                  " output channels and a " + std::to_string(KH) + "x" +
                  std::to_string(KW) + " window has a non-positive extent");
  HPVM_ASSERT(a.strideH > 0 && a.strideW > 0,
              std::string(who) + ": strides " + std::to_string(a.strideH) +
                  "," + std::to_string(a.strideW) + " must be positive");
  HPVM_ASSERT(a.padH >= 0 && a.padW >= 0,
              std::string(who) + ": paddings " + std::to_string(a.padH) + "," +
                  std::to_string(a.padW) + " must not be negative");
  HPVM_ASSERT(a.groups > 0 && C % a.groups == 0 && K % a.groups == 0,
              std::string(who) + ": " + std::to_string(a.groups) +
                  " groups do not divide " + std::to_string(C) + " input and " +
                  std::to_string(K) + " output channels");
  HPVM_ASSERT(H + 2 * a.padH >= KH && W + 2 * a.padW >= KW,
              std::string(who) + ": filter " + std::to_string(KH) + "x" +
                  std::to_string(KW) + " is larger than the padded input " +
                  std::to_string(H + 2 * a.padH) + "x" +
                  std::to_string(W + 2 * a.padW));
  ConvGeometry g;
  g.n = N;
  g.c = C;
  g.h = H;
  g.w = W;
  g.k = K;
  g.kh = KH;
  g.kw = KW;
  g.groups = a.groups;
  g.cg = C / a.groups;
  g.kg = K / a.groups;
  g.padH = a.padH;
  g.padW = a.padW;
  g.strideH = a.strideH;
  g.strideW = a.strideW;
  g.ho = 1 + (H + 2 * a.padH - KH) / a.strideH;
  g.wo = 1 + (W + 2 * a.padW - KW) / a.strideW;
  return g;
}

std::vector<bool> perforationKept(int64_t len, int rate, int offset) {
  std::vector<bool> kept(len, true);
  if (len == 1 || rate == 1)
    return kept;
  for (int64_t i = offset; i < len; i += rate)
    kept[i] = false;
  return kept;
}

std::vector<int64_t> samplingKept(int64_t cg, int64_t kh, int64_t kw, int rate,
                                  int offset) {
  const int64_t area = kh * kw;
  std::vector<int64_t> kept;
  kept.reserve(cg * area);
  if (rate == 1) {
    for (int64_t e = 0; e < cg * area; ++e)
      kept.push_back(e);
  } else if (area % rate == 0) {
    // Regular: channel c skips positions p == (offset + c) mod rate.
    for (int64_t c = 0; c < cg; ++c) {
      const int64_t o = (offset + c) % rate;
      for (int64_t p = 0; p < area; ++p)
        if (p % rate != o)
          kept.push_back(c * area + p);
    }
  } else {
    // Irregular: one offset over the flattened filter.
    for (int64_t e = 0; e < cg * area; ++e)
      if (e < offset || (e - offset) % rate != 0)
        kept.push_back(e);
  }
  return kept;
}

} // namespace hpvm::rt::approx
