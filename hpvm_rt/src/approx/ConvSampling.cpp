// ConvSampling.cpp - filter-sampled convolution (reference section 6.3):
// skipped filter elements are dropped, the kept ones are scaled by
// rate / (rate - 1).
//
// How the saving is made real: the kept filter elements are the same for
// every output channel, so the convolution is a GEMM of the reduced filter
// (K x R, R kept elements per output channel) with a reduced im2col matrix
// (R x output positions) that gathers only the input values the kept
// elements touch: (r - 1) / r of the exact arithmetic and of the im2col
// traffic. Images are processed in chunks; chunks of tiny outputs are
// batched so that the GEMM stays wide.
#include "approx/Approx.h"
#include "approx/ConvGeometry.h"
#include "approx/Epilogue.h"
#include "approx/GemmConv.h"
#include "approx/Scratch.h"

#include <numeric>

namespace hpvm::rt::approx {

void convSampled(const float* x, int64_t N, int64_t C, int64_t H, int64_t W,
                 const float* w, int64_t K, int64_t KH, int64_t KW,
                 const ConvArgs& a, const KnobSpec& knob, float* y) {
  convSampled(x, N, C, H, W, w, K, KH, KW, a, knob, y, nullptr);
}

void convSampled(const float* x, int64_t N, int64_t C, int64_t H, int64_t W,
                 const float* w, int64_t K, int64_t KH, int64_t KW,
                 const ConvArgs& a, const KnobSpec& knob, float* y,
                 const Epilogue* epi) {
  const ConvGeometry g = checkConv("convSampled", N, C, H, W, K, KH, KW, a,
                                   knob, Variant::Samp, Variant::Samp);
  const std::vector<int64_t> kept =
      samplingKept(g.cg, g.kh, g.kw, knob.rate, knob.offset);
  const int64_t r = static_cast<int64_t>(kept.size());
  const int64_t filterLen = g.cg * g.kh * g.kw;
  ScratchPool::Lease lease(scratchPool());

  // 1. The reduced, scaled filter: K x R, kept elements in order.
  const float scale = samplingScale(knob.rate);
  float* wr = static_cast<float*>(lease.slot(0, K * r * sizeof(float)));
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < K; ++k)
    for (int64_t t = 0; t < r; ++t)
      wr[k * r + t] = w[k * filterLen + kept[t]] * scale;

  // 2. Reduced im2col + GEMM over every output position, the epilogue on
  //    each plane as soon as it is computed.
  std::vector<int64_t> rows(g.ho), cols(g.wo);
  std::iota(rows.begin(), rows.end(), 0);
  std::iota(cols.begin(), cols.end(), 0);
  PlaneFinish finish;
  if (epi)
    finish = [&](int64_t n, int64_t k, float* plane) {
      epi->apply(n, k, 0, plane, g.ho * g.wo);
    };
  gemmConv(x, g, kept, wr, rows, cols, y, lease, 1, finish);
}

} // namespace hpvm::rt::approx
