// ConvGeometry.h - shared shape checks and index rules of the approximate
// convolutions (perforation and filter sampling, reference sections 6.2-6.3).
#ifndef HPVM_RT_APPROX_CONVGEOMETRY_H
#define HPVM_RT_APPROX_CONVGEOMETRY_H

#include "base/KnobSpec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hpvm::rt::approx {

/// The fully checked geometry of one NCHW convolution call.
struct ConvGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0; ///< Input N x C x H x W.
  int64_t k = 0, kh = 0, kw = 0;      ///< Filter K x (C/groups) x KH x KW.
  int64_t groups = 1;
  int64_t cg = 0, kg = 0; ///< Channels per group: in, out.
  int64_t ho = 0, wo = 0; ///< Output height and width.
  int64_t padH = 0, padW = 0, strideH = 1, strideW = 1;
};

/// Checks the operands of an approximate convolution and computes the output
/// shape. The executor validates shapes and knobs first, so a failed check
/// is a bug: an internal assertion naming `who` and what is wrong (a
/// non-positive extent, a bad stride or padding, groups not dividing C and
/// K, a filter larger than the padded input, a rate outside 1..4 or an
/// offset outside 0..rate-1, a knob of another variant). Rate 1 keeps
/// everything: the exact convolution.
ConvGeometry checkConv(const char* who, int64_t N, int64_t C, int64_t H,
                       int64_t W, int64_t K, int64_t KH, int64_t KW,
                       const ConvArgs& a, const KnobSpec& knob,
                       Variant expected1, Variant expected2);

/// For perforation along one output axis of length `len` with rate r and
/// offset s: kept[i] is true for the positions computed exactly (section
/// 6.2: i is skipped iff i >= s and (i - s) mod r == 0; a length-1 axis is
/// always computed).
std::vector<bool> perforationKept(int64_t len, int rate, int offset);

/// Where a skipped position i of a perforated axis of length len (>= 2)
/// takes its value from: the average of positions lo and hi, index 0 from
/// index 1 and the last from the one before it (lo == hi: a copy).
struct SkippedSource {
  int64_t lo, hi;
};
inline SkippedSource skippedSource(int64_t i, int64_t len) {
  return {i == 0 ? 1 : i - 1, i == len - 1 ? len - 2 : i + 1};
}

/// out[0..n) = (a + b) * 0.5, the interpolation of a skipped position.
inline void averageInto(const float* a, const float* b, float* out, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    out[i] = (a[i] + b[i]) * 0.5f;
}

/// For filter sampling over one output channel's filter of cg x kh x kw
/// elements, flattened (c, i, j): the indices of the kept elements in
/// increasing order (section 6.3; regular variant when kh*kw is divisible
/// by the rate, irregular otherwise).
std::vector<int64_t> samplingKept(int64_t cg, int64_t kh, int64_t kw, int rate,
                                  int offset);

/// The scale applied to kept weights: rate / (rate - 1) in float (1 for
/// rate 1).
inline float samplingScale(int rate) {
  if (rate == 1)
    return 1.f;
  return static_cast<float>(rate) / static_cast<float>(rate - 1);
}

/// How perforated convolutions compute (Auto: by output size; the others
/// force one engine so that tests cover each).
enum class PerforationPath : uint8_t {
  Auto,        ///< From runConv: the blocked engine where it applies
               ///< (PerforationBlocked.cpp). Otherwise GEMM for tiny
               ///< outputs, 1x1 and few-channel filters, oneDNN with the
               ///< fused output pass for the rest.
  DnnlFused,   ///< oneDNN per class, fused NHWC output pass.
  DnnlGeneric, ///< oneDNN per class, scatter reorders and a fill pass.
  Gemm,        ///< Reduced im2col + GEMM over the kept positions.
  /// As Auto, except that perforation and filter sampling always run on
  /// their engines, never as an exact convolution (ConvSampledExact.h,
  /// ConvPerforatedExact.h): the tests of the engines.
  AutoEngines,
};
/// Auto or AutoEngines: runConv picks the engine.
inline bool autoPath(PerforationPath p) {
  return p == PerforationPath::Auto || p == PerforationPath::AutoEngines;
}
/// Test hook: selects the engine of later perforated convolutions.
void setPerforationPath(PerforationPath path);
/// The engine setPerforationPath() selected (Auto by default).
PerforationPath perforationPath();
/// Test hook: how many convolutions the blocked engines
/// (convPerforatedBlocked, convSampledBlocked) have computed in this
/// process; a call they decline does not count.
uint64_t blockedRuns();

} // namespace hpvm::rt::approx

#endif // HPVM_RT_APPROX_CONVGEOMETRY_H
