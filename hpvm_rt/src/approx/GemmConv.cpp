// GemmConv.cpp - convolution as reduced im2col + GEMM over selected filter
// elements and output positions. Images are processed in chunks, each
// with its own im2col matrix and one sgemm; chunks of tiny outputs hold
// several images so that the GEMM stays wide.
#include "approx/GemmConv.h"

#include "approx/Scratch.h"
#include "base/Errors.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace hpvm::rt::approx {

namespace {

/// Output positions per GEMM below which images are batched together.
constexpr int64_t kMinGemmColumns = 256;

/// The selected output positions of one convolution.
struct Positions {
  const std::vector<int64_t>& rows;
  const std::vector<int64_t>& cols;
  bool allRows, allCols;
  int64_t count() const {
    return static_cast<int64_t>(rows.size() * cols.size());
  }
};

/// Writes row `t` of the reduced im2col matrix for images n0..n0+nb-1 of
/// group `grp`: the input value under filter element `elem` at every
/// selected output position (0 in the padding); image ni starts at column
/// ni * pos.count().
void im2colRow(const float* x, const ConvGeometry& g, const Positions& pos,
               int64_t grp, int64_t elem, int64_t n0, int64_t nb, float* row) {
  const int64_t area = g.kh * g.kw;
  const int64_t c = elem / area, i = (elem % area) / g.kw, j = elem % g.kw;
  const int64_t wc = static_cast<int64_t>(pos.cols.size());
  // Output columns whose window column j falls inside the input (when all
  // columns are selected, as a contiguous range [owLo, owHi)).
  int64_t owLo = 0, owHi = g.wo;
  while (owLo < g.wo && owLo * g.strideW - g.padW + j < 0)
    ++owLo;
  while (owHi > owLo && (owHi - 1) * g.strideW - g.padW + j >= g.w)
    --owHi;
  float* d = row;
  for (int64_t ni = 0; ni < nb; ++ni) {
    const float* plane = x + ((n0 + ni) * g.c + grp * g.cg + c) * g.h * g.w;
    // One selected output row at a time: zeros, the input row, zeros.
    for (int64_t oh : pos.rows) {
      const int64_t ih = oh * g.strideH - g.padH + i;
      if (ih < 0 || ih >= g.h) {
        std::memset(d, 0, wc * sizeof(float));
        d += wc;
        continue;
      }
      const float* src = plane + ih * g.w - g.padW + j;
      if (!pos.allCols) {
        for (int64_t b = 0; b < wc; ++b) {
          const int64_t iw = pos.cols[b] * g.strideW - g.padW + j;
          d[b] = iw >= 0 && iw < g.w ? src[pos.cols[b] * g.strideW] : 0.f;
        }
      } else {
        for (int64_t ow = 0; ow < owLo; ++ow)
          d[ow] = 0.f;
        if (g.strideW == 1)
          std::memcpy(d + owLo, src + owLo, (owHi - owLo) * sizeof(float));
        else
          for (int64_t ow = owLo; ow < owHi; ++ow)
            d[ow] = src[ow * g.strideW];
        for (int64_t ow = owHi; ow < g.wo; ++ow)
          d[ow] = 0.f;
      }
      d += wc;
    }
  }
}

/// C (m x n, row stride ldc) = A (m x k) * B (k x n), single or multi
/// threaded as the caller's context allows.
void gemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
          float* c, int64_t ldc) {
  const dnnl_status_t st =
      dnnl_sgemm('N', 'N', m, n, k, 1.f, a, k, b, n, 0.f, c, ldc);
  HPVM_ASSERT(st == dnnl_success, "gemmConv: dnnl_sgemm failed with status " +
                                      std::to_string(static_cast<int>(st)));
}

/// Copies output channel k's row of a Kg x (nb * P) GEMM result into the
/// selected positions of image n0 + ni's NCHW plane.
void scatterPlane(const float* tmp, const ConvGeometry& g, const Positions& pos,
                  int64_t grp, int64_t n0, int64_t nb, int64_t k, int64_t ni,
                  float* y) {
  const int64_t p = pos.count(), wc = static_cast<int64_t>(pos.cols.size());
  const float* s = tmp + k * nb * p + ni * p;
  float* plane = y + ((n0 + ni) * g.k + grp * g.kg + k) * g.ho * g.wo;
  if (pos.allRows && pos.allCols) {
    std::memcpy(plane, s, p * sizeof(float));
    return;
  }
  for (size_t a = 0; a < pos.rows.size(); ++a) {
    float* out = plane + pos.rows[a] * g.wo;
    const float* in = s + a * wc;
    if (pos.allCols)
      std::memcpy(out, in, wc * sizeof(float));
    else
      for (int64_t b = 0; b < wc; ++b)
        out[pos.cols[b]] = in[b];
  }
}

} // namespace

void gemmConv(const float* x, const ConvGeometry& g,
              const std::vector<int64_t>& elems, const float* wr,
              const std::vector<int64_t>& rows,
              const std::vector<int64_t>& cols, float* y,
              ScratchPool::Lease& lease, size_t firstSlot,
              const PlaneFinish& finish) {
  const Positions pos{rows, cols, int64_t(rows.size()) == g.ho,
                      int64_t(cols.size()) == g.wo};
  const int64_t r = static_cast<int64_t>(elems.size());
  const int64_t p = pos.count();
  if (r == 0 || p == 0)
    return;
  const bool direct = pos.allRows && pos.allCols; // GEMM writes into y.

  // Chunks of nb images: one reduced im2col matrix (R x nb*P) and one GEMM
  // per chunk and group.
  const int64_t nb =
      std::min<int64_t>(g.n, std::max<int64_t>(1, kMinGemmColumns / p));
  const int64_t chunks = (g.n + nb - 1) / nb;
  const int64_t jobs = chunks * g.groups;
  const int threads = omp_get_max_threads();
  const size_t colBytes = static_cast<size_t>(r * nb * p) * sizeof(float);
  const size_t tmpBytes = static_cast<size_t>(g.kg * nb * p) * sizeof(float);

  // Runs one job; `tmp` receives the GEMM result unless it goes to y.
  auto gemmJob = [&](int64_t job, float* col, float* tmp, bool parallel) {
    const int64_t grp = job % g.groups, n0 = job / g.groups * nb;
    const int64_t cnt = std::min(nb, g.n - n0);
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t t = 0; t < r; ++t)
      im2colRow(x, g, pos, grp, elems[t], n0, cnt, col + t * cnt * p);
    const float* wg = wr + grp * g.kg * r;
    // `finish` on the job's planes once they are written.
    auto done = [&](int64_t k, int64_t ni) {
      const int64_t n = n0 + ni, ch = grp * g.kg + k;
      finish(n, ch, y + (n * g.k + ch) * g.ho * g.wo);
    };
    if (direct && cnt == 1) {
      gemm(g.kg, p, r, wg, col, y + (n0 * g.k + grp * g.kg) * p, p);
      if (finish) {
#pragma omp parallel for schedule(static) if (parallel)
        for (int64_t k = 0; k < g.kg; ++k)
          done(k, 0);
      }
      return;
    }
    gemm(g.kg, cnt * p, r, wg, col, tmp, cnt * p);
#pragma omp parallel for collapse(2) schedule(static) if (parallel)
    for (int64_t k = 0; k < g.kg; ++k)
      for (int64_t ni = 0; ni < cnt; ++ni) {
        scatterPlane(tmp, g, pos, grp, n0, cnt, k, ni, y);
        if (finish)
          done(k, ni);
      }
  };

  if (jobs >= threads) {
    // Enough jobs: one per thread at a time, each with its own buffers and
    // a single-threaded GEMM.
    std::vector<float*> colBuf(threads), tmpBuf(threads);
    for (int t = 0; t < threads; ++t) {
      colBuf[t] = static_cast<float*>(lease.slot(firstSlot + 2 * t, colBytes));
      tmpBuf[t] =
          static_cast<float*>(lease.slot(firstSlot + 2 * t + 1, tmpBytes));
    }
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t job = 0; job < jobs; ++job) {
      const int tid = omp_get_thread_num();
      gemmJob(job, colBuf[tid], tmpBuf[tid], false);
    }
  } else {
    // Few wide jobs: parallel im2col and scatter, multi-threaded GEMM.
    float* col = static_cast<float*>(lease.slot(firstSlot, colBytes));
    float* tmp = static_cast<float*>(lease.slot(firstSlot + 1, tmpBytes));
    for (int64_t job = 0; job < jobs; ++job)
      gemmJob(job, col, tmp, true);
  }
}

} // namespace hpvm::rt::approx
