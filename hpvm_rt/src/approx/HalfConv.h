// HalfConv.h - convolutions in IEEE half-precision arithmetic with
// AVX512-FP16 (Intel Sapphire Rapids and later): HPVM's fp16 knobs computed
// in half precision, as HPVM computes them on the GPU, where the CPU has it.
//
// Numerics: the input and the (batch-norm folded) filter rounded to half
// (nearest even), products and their sums in half (fused multiply-adds)
// within blocks of kHalfSumTerms products per output value, the blocks'
// sums and the bias added in fp32. The result is fp32; the caller's
// epilogue runs the remaining post-ops and rounds it to half.
#ifndef HPVM_RT_APPROX_HALFCONV_H
#define HPVM_RT_APPROX_HALFCONV_H

#include "approx/Epilogue.h"

#include <cstdint>

namespace hpvm::rt::approx {

/// Products summed in one half-precision accumulator at most: half's
/// 11-bit significand keeps such a sum within a few units in its last
/// place, where one sum over a whole 3x3x512 window would drop the small
/// terms (fp32 sums the blocks).
constexpr int64_t kHalfSumTerms = 128;

/// True where convHalf runs: the CPU has AVX512-FP16 (haveAvx512Fp16())
/// and this build has the kernels (GCC 12 or later, or a build for such a
/// CPU).
bool halfConvAvailable();

/// A convolution convHalf computes.
struct HalfConv {
  int64_t n = 0, c = 0, h = 0, w = 0; ///< Input N x C x H x W.
  int64_t k = 0, kh = 0, kw = 0;      ///< Filter K x C x KH x KW.
  int64_t padH = 0, padW = 0, strideH = 1, strideW = 1;
  /// Perforation (reference section 6.2) at rate perfRate > 1: only the
  /// output rows (perfCols: columns) perforationKept() keeps are computed;
  /// each skipped one is then the average (a + b) * 0.5 of its neighbours'
  /// sums (row 0 copies row 1, the last row the one before), as the
  /// perforation engines fill it, before the epilogue runs.
  int perfRate = 1, perfOffset = 0;
  bool perfCols = false;
  int64_t ho() const { return (h + 2 * padH - kh) / strideH + 1; }
  int64_t wo() const { return (w + 2 * padW - kw) / strideW + 1; }
};

/// True when convHalf computes hc: C and K multiples of 16, a window that
/// fits the padded input, positive strides.
bool halfConvApplies(const HalfConv& hc);

/// uint16_t elements of hc's packed filter.
int64_t packedHalfFilterSize(const HalfConv& hc);

/// Packs the OIHW fp32 filter w for convHalf, each value rounded to half
/// (nearest even).
void packHalfFilter(const HalfConv& hc, const float* w, uint16_t* packed);

/// Where convHalf reads its input and writes its output: one of each.
struct HalfConvIo {
  const float* x = nullptr;        ///< N x C x H x W, nChw16c fp32;
  const uint16_t* xHalf = nullptr; ///< or NHWC half.
  float* y = nullptr;              ///< N x K x Ho x Wo, nChw16c fp32;
  /// or NHWC half: the fp32 rows are staged per work item, given to the
  /// epilogue there, then converted (nearest even).
  uint16_t* yHalf = nullptr;
};

/// y = conv(x, filter) + bias with the numerics above, `packed` from
/// packHalfFilter, bias K floats; epi->applyRow() (unless null) runs once
/// on every output row (fp32, nChw16c rows), in cache, before a half
/// output is converted (a perforated one: after the skipped rows or
/// columns are filled; its output is io.y). Only where halfConvAvailable()
/// and halfConvApplies(hc).
void convHalf(const HalfConv& hc, const HalfConvIo& io, const uint16_t* packed,
              const float* bias, const BlockedEpilogue* epi);

} // namespace hpvm::rt::approx

#endif // HPVM_RT_APPROX_HALFCONV_H
