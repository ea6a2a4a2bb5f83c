// SamplingBlocked.cpp - filter-sampled convolution (reference section 6.3)
// on the layer kernels' blocked activations: nChw16c in, nChw16c out, for
// small outputs (the deeper layers of CIFAR-sized networks), where the
// NCHW engine's layout conversions cost more than its GEMM saves.
//
// The kept filter elements are the same for every output channel, so the
// convolution is a GEMM of a position-major reduced im2col matrix
// (positions x R, R kept elements per output channel) with the reduced,
// scaled filter (K x R): (r - 1) / r of the exact arithmetic. The im2col
// rows are gathered straight from the blocked input: for each filter tap,
// each 16-channel vector is loaded once and its kept channels compressed
// into the row (one masked compress per vector with AVX-512). Images go
// through in chunks whose im2col matrix stays in cache; the GEMM result
// (positions x K) is written out as nChw16c rows with the caller's
// epilogue, 16 channels at a time.
#include "approx/Epilogue.h"
#include "approx/PerforationPlan.h"
#include "approx/Scratch.h"

#include <oneapi/dnnl/dnnl.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace hpvm::rt::approx {

namespace {

using namespace detail;
using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

/// Where this engine beats the NCHW one (measured with
/// scripts/bench/knob_e2e.sh, batch 64): 1x1 filters; outputs of at most
/// 8x8 positions with up to 128 input channels (ResNet-18-CIFAR's last
/// stage, VGG16-CIFAR's conv5), or of at most 2x2 (VGG16's last layers).
/// Larger outputs, and 4x4-8x8 ones with 256+ channels, are faster through
/// the NCHW engine's channel-major GEMM.
bool preferred(const ConvGeometry& g) {
  const int64_t positions = g.ho * g.wo;
  return g.kh * g.kw == 1 || (positions <= 64 && g.c <= 128) || positions <= 4;
}

/// Bytes of one chunk's im2col matrix (kept in the cores' L2 caches).
constexpr int64_t kIm2colChunkBytes = int64_t(2) << 20;

/// Which channels of each 16-channel block every filter tap keeps, and
/// where they go in an im2col row (tap-major, then block, then channel).
struct TapLayout {
  int64_t area = 0, blocks = 0, r = 0;
  std::vector<uint16_t> mask; ///< [tap * blocks + block]: kept lanes.
  std::vector<int64_t> start; ///< [tap * blocks + block]: first column.
  std::vector<int64_t> elem;  ///< [column]: filter element c * area + tap.
};

TapLayout tapLayout(const ConvGeometry& g, const std::vector<int64_t>& kept) {
  TapLayout t;
  t.area = g.kh * g.kw;
  t.blocks = g.c / 16;
  t.mask.assign(t.area * t.blocks, 0);
  for (int64_t e : kept) {
    const int64_t c = e / t.area, tap = e % t.area;
    t.mask[tap * t.blocks + c / 16] |= static_cast<uint16_t>(1u << (c % 16));
  }
  t.start.resize(t.mask.size());
  for (int64_t tap = 0; tap < t.area; ++tap)
    for (int64_t b = 0; b < t.blocks; ++b) {
      const uint16_t m = t.mask[tap * t.blocks + b];
      t.start[tap * t.blocks + b] = t.r;
      for (int l = 0; l < 16; ++l)
        if (m & (1u << l))
          t.elem.push_back((b * 16 + l) * t.area + tap);
      t.r += __builtin_popcount(m);
    }
  return t;
}

/// Writes the kept lanes (mask m, cnt of them) of the 16 floats at `from`
/// contiguously at `to`; zeros when from is null (padding).
inline void gatherLanes(const float* from, uint16_t m, int cnt, float* to) {
  if (!from) {
    std::memset(to, 0, static_cast<size_t>(cnt) * sizeof(float));
    return;
  }
#if defined(__AVX512F__)
  const __m512 v = _mm512_maskz_compress_ps(m, _mm512_loadu_ps(from));
  _mm512_mask_storeu_ps(to, static_cast<__mmask16>((1u << cnt) - 1u), v);
#else
  for (int l = 0; l < 16; ++l)
    if (m & (1u << l))
      *to++ = from[l];
#endif
}

/// The im2col rows of images n0 .. n0 + count - 1 of the dense nChw16c
/// input x: row (n, oh, ow) holds the kept elements in TapLayout order.
void im2colBlocked(const float* x, const ConvGeometry& g, const TapLayout& t,
                   int64_t n0, int64_t count, float* a) {
  const int64_t positions = count * g.ho * g.wo;
#pragma omp parallel for schedule(static)
  for (int64_t pos = 0; pos < positions; ++pos) {
    const int64_t n = n0 + pos / (g.ho * g.wo);
    const int64_t oh = pos / g.wo % g.ho, ow = pos % g.wo;
    float* row = a + pos * t.r;
    for (int64_t i = 0; i < g.kh; ++i) {
      const int64_t ih = oh * g.strideH - g.padH + i;
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t iw = ow * g.strideW - g.padW + j;
        const bool inside = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
        const int64_t tap = i * g.kw + j;
        for (int64_t b = 0; b < t.blocks; ++b) {
          const uint16_t m = t.mask[tap * t.blocks + b];
          if (!m)
            continue;
          const float* from =
              inside ? x + (((n * t.blocks + b) * g.h + ih) * g.w + iw) * 16
                     : nullptr;
          gatherLanes(from, m, __builtin_popcount(m),
                      row + t.start[tap * t.blocks + b]);
        }
      }
    }
  }
}

} // namespace

bool convSampledBlocked(const BlockedConv& bc) {
  const ConvGeometry g =
      checkConv("convSampledBlocked", bc.n, bc.c, bc.h, bc.w, bc.k, bc.kh,
                bc.kw, bc.args, bc.knob, Variant::Samp, Variant::Samp);
  if (bc.bf16 || g.groups != 1 || g.c % 16 != 0 || g.k % 16 != 0 ||
      !preferred(g))
    return false;
  const TapLayout t = tapLayout(
      g, samplingKept(g.cg, g.kh, g.kw, bc.knob.rate, bc.knob.offset));

  dnnl::engine& eng = cpuEngine();
  dnnl::stream strm(eng);
  ScratchPool::Lease lease(scratchPool());

  // The input as dense nChw16c, rounded when the caller asks.
  const float* x = blockedInput(
      bc, memory::desc({g.n, g.c, g.h, g.w}, dt::f32, tag::nChw16c), lease,
      strm);

  // The reduced, scaled filter: K x R, columns in TapLayout order.
  const float scale = samplingScale(bc.knob.rate);
  const int64_t filterLen = g.cg * g.kh * g.kw;
  float* wr = static_cast<float*>(lease.slot(2, g.k * t.r * sizeof(float)));
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < g.k; ++k)
    for (int64_t col = 0; col < t.r; ++col)
      wr[k * t.r + col] = bc.weights[k * filterLen + t.elem[col]] * scale;

  const int64_t perImage = g.ho * g.wo;
  const int64_t chunk = std::clamp<int64_t>(
      kIm2colChunkBytes / (perImage * t.r * int64_t(sizeof(float))), 1, g.n);
  float* a = static_cast<float*>(
      lease.slot(3, chunk * perImage * t.r * sizeof(float)));
  float* c = static_cast<float*>(
      lease.slot(4, chunk * perImage * g.k * sizeof(float)));
  float* y = bc.output();
  const BlockedEpilogue* epi = bc.epilogue;
  const int64_t kb = g.k / 16;
  for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
    const int64_t count = std::min(chunk, g.n - n0);
    im2colBlocked(x, g, t, n0, count, a);
    // C (positions x K) = A (positions x R) * wr^T.
    const dnnl_status_t st = dnnl_sgemm('N', 'T', count * perImage, g.k, t.r,
                                        1.f, a, t.r, wr, t.r, 0.f, c, g.k);
    if (st != dnnl_success)
      throw std::runtime_error("convSampledBlocked: dnnl_sgemm failed with "
                               "status " +
                               std::to_string(static_cast<int>(st)));
    // Rows (n, block, oh) of the chunk, 16 channels of C at a time.
    float* yc = y + n0 * g.k * perImage;
#pragma omp parallel for schedule(static)
    for (int64_t nbh = 0; nbh < count * kb * g.ho; ++nbh) {
      const int64_t oh = nbh % g.ho, nb = nbh / g.ho, n = nb / kb, b = nb % kb;
      float* out = yc + nbh * g.wo * 16;
      const float* from = c + (n * perImage + oh * g.wo) * g.k + b * 16;
      for (int64_t w = 0; w < g.wo; ++w)
        std::memcpy(out + w * 16, from + w * g.k, 16 * sizeof(float));
      if (epi)
        epi->applyRow(n0 + n, b, oh, out, g.wo);
    }
    if (epi && epi->wantsImages())
      epi->applyImages(yc, n0, count);
  }
  countBlockedRun();
  return true;
}

} // namespace hpvm::rt::approx
