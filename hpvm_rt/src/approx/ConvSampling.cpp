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
#include "approx/ConvGeometry.h"
#include "approx/Scratch.h"
#include "kernels/Kernels.h"

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace hpvm::rt::approx {

namespace {

/// Output positions per GEMM below which images are batched together.
constexpr int64_t kMinGemmColumns = 256;

/// Writes row `t` of the reduced im2col matrix for images n0..n0+nb-1 of
/// group `grp`: the input value under kept element kept[t] for every output
/// position (0 in the padding); image ni starts at column ni*HW.
void im2colRow(const float* x, const ConvGeometry& g, int64_t grp,
               int64_t elem, int64_t n0, int64_t nb, float* row) {
  const int64_t area = g.kh * g.kw;
  const int64_t c = elem / area, i = (elem % area) / g.kw, j = elem % g.kw;
  const int64_t hw = g.ho * g.wo;
  // Output columns whose window column j falls inside the input.
  int64_t owLo = 0, owHi = g.wo; // [owLo, owHi)
  while (owLo < g.wo && owLo * g.strideW - g.padW + j < 0)
    ++owLo;
  while (owHi > owLo && (owHi - 1) * g.strideW - g.padW + j >= g.w)
    --owHi;
  for (int64_t ni = 0; ni < nb; ++ni) {
    const float* plane =
        x + ((n0 + ni) * g.c + grp * g.cg + c) * g.h * g.w;
    float* dst = row + ni * hw;
    // One output row at a time: zeros, the strided input row, zeros.
    for (int64_t oh = 0; oh < g.ho; ++oh) {
      float* d = dst + oh * g.wo;
      const int64_t ih = oh * g.strideH - g.padH + i;
      if (ih < 0 || ih >= g.h) {
        std::memset(d, 0, g.wo * sizeof(float));
        continue;
      }
      const float* src = plane + ih * g.w - g.padW + j;
      for (int64_t ow = 0; ow < owLo; ++ow)
        d[ow] = 0.f;
      if (g.strideW == 1) {
        std::memcpy(d + owLo, src + owLo, (owHi - owLo) * sizeof(float));
      } else {
        for (int64_t ow = owLo; ow < owHi; ++ow)
          d[ow] = src[ow * g.strideW];
      }
      for (int64_t ow = owHi; ow < g.wo; ++ow)
        d[ow] = 0.f;
    }
  }
}

/// C (m x n, row stride ldc) = A (m x k) * B (k x n), single or multi
/// threaded as the caller's context allows.
void gemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
          float* c, int64_t ldc) {
  const dnnl_status_t st =
      dnnl_sgemm('N', 'N', m, n, k, 1.f, a, k, b, n, 0.f, c, ldc);
  if (st != dnnl_success)
    throw std::runtime_error("convSampled: dnnl_sgemm failed with status " +
                             std::to_string(static_cast<int>(st)));
}

/// Copies a Kg x (nb*HW) GEMM result into the NCHW output planes of images
/// n0.. of group grp.
void scatterImages(const float* tmp, const ConvGeometry& g, int64_t grp,
                   int64_t n0, int64_t nb, float* y) {
  const int64_t hw = g.ho * g.wo;
  for (int64_t k = 0; k < g.kg; ++k)
    for (int64_t ni = 0; ni < nb; ++ni)
      std::memcpy(y + ((n0 + ni) * g.k + grp * g.kg + k) * hw,
                  tmp + k * nb * hw + ni * hw, hw * sizeof(float));
}

} // namespace

void convSampled(const float* x, int64_t N, int64_t C, int64_t H, int64_t W,
                 const float* w, int64_t K, int64_t KH, int64_t KW,
                 const ConvArgs& a, const KnobSpec& knob, float* y) {
  const ConvGeometry g = checkConv("convSampled", N, C, H, W, K, KH, KW, a,
                                   knob, Variant::Samp, Variant::Samp);
  const std::vector<int64_t> kept =
      samplingKept(g.cg, g.kh, g.kw, knob.rate, knob.offset);
  const int64_t r = static_cast<int64_t>(kept.size());
  const int64_t hw = g.ho * g.wo;
  const int64_t filterLen = g.cg * g.kh * g.kw;
  ScratchPool::Lease lease(scratchPool());

  // 1. The reduced, scaled filter: K x R, kept elements in order.
  const float scale = samplingScale(knob.rate);
  float* wr = static_cast<float*>(lease.slot(0, K * r * sizeof(float)));
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < K; ++k)
    for (int64_t t = 0; t < r; ++t)
      wr[k * r + t] = w[k * filterLen + kept[t]] * scale;

  // 2. Chunks of nb images: one reduced im2col matrix (R x nb*HW) and one
  //    GEMM per chunk and group.
  const int64_t nb =
      std::min<int64_t>(N, std::max<int64_t>(1, kMinGemmColumns / hw));
  const int64_t chunks = (N + nb - 1) / nb;
  const int64_t cols = nb * hw;
  const int64_t jobs = chunks * g.groups;
  const int threads = omp_get_max_threads();
  const size_t colBytes = static_cast<size_t>(r * cols) * sizeof(float);
  const size_t tmpBytes =
      nb > 1 ? static_cast<size_t>(g.kg * cols) * sizeof(float) : 0;

  if (jobs >= threads) {
    // 2a. Enough jobs: one per thread, each with its own buffers and a
    //     single-threaded GEMM.
    std::vector<float*> colBuf(threads), tmpBuf(threads);
    for (int t = 0; t < threads; ++t) {
      colBuf[t] = static_cast<float*>(lease.slot(1 + 2 * t, colBytes));
      tmpBuf[t] = tmpBytes ? static_cast<float*>(
                                 lease.slot(2 + 2 * t, tmpBytes))
                           : nullptr;
    }
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t job = 0; job < jobs; ++job) {
      const int tid = omp_get_thread_num();
      const int64_t grp = job % g.groups, n0 = job / g.groups * nb;
      const int64_t cnt = std::min(nb, N - n0);
      float* col = colBuf[tid];
      for (int64_t t = 0; t < r; ++t)
        im2colRow(x, g, grp, kept[t], n0, cnt, col + t * cnt * hw);
      const float* wg = wr + grp * g.kg * r;
      if (cnt == 1) {
        gemm(g.kg, hw, r, wg, col, y + (n0 * g.k + grp * g.kg) * hw, hw);
      } else {
        gemm(g.kg, cnt * hw, r, wg, col, tmpBuf[tid], cnt * hw);
        scatterImages(tmpBuf[tid], g, grp, n0, cnt, y);
      }
    }
  } else {
    // 2b. Few wide jobs: parallel im2col, then a multi-threaded GEMM.
    float* col = static_cast<float*>(lease.slot(1, colBytes));
    float* tmp =
        tmpBytes ? static_cast<float*>(lease.slot(2, tmpBytes)) : nullptr;
    for (int64_t job = 0; job < jobs; ++job) {
      const int64_t grp = job % g.groups, n0 = job / g.groups * nb;
      const int64_t cnt = std::min(nb, N - n0);
#pragma omp parallel for schedule(static)
      for (int64_t t = 0; t < r; ++t)
        im2colRow(x, g, grp, kept[t], n0, cnt, col + t * cnt * hw);
      const float* wg = wr + grp * g.kg * r;
      if (cnt == 1) {
        gemm(g.kg, hw, r, wg, col, y + (n0 * g.k + grp * g.kg) * hw, hw);
      } else {
        gemm(g.kg, cnt * hw, r, wg, col, tmp, cnt * hw);
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < g.kg; ++k)
          for (int64_t ni = 0; ni < cnt; ++ni)
            std::memcpy(y + ((n0 + ni) * g.k + grp * g.kg + k) * hw,
                        tmp + k * cnt * hw + ni * hw, hw * sizeof(float));
      }
    }
  }
}

} // namespace hpvm::rt::approx
