// DepthwiseConv.cpp - depthwise convolutions with AVX-512 (DepthwiseConv.h).
//
// One work item is one output row of one 16-channel block: the columns
// whose window lies inside the input run in tiles of kTile pixels (one
// 512-bit accumulator per pixel, the filter tap broadcast to none: each
// lane is its own channel), the border columns one by one with the taps
// outside the input skipped.
#include "approx/DepthwiseConv.h"

#include "approx/Approx.h"
#include "approx/Bf16Bits.h"
#include "approx/Isa.h"

#include <immintrin.h>

#include <algorithm>

// GCC 12's min/max intrinsics trip -W(maybe-)uninitialized on their
// internal undefined-value operand (a false positive, as in Rounding.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace hpvm::rt::approx {

namespace {

/// Output pixels per tile: 8 accumulators, a filter tap and an input
/// vector stay in registers.
constexpr int kTile = 8;

/// Element strides of a 16-channel-block layout.
struct Strides {
  int64_t n, cb, h, w;
};

Strides stridesOf(bool nhwc, int64_t C, int64_t H, int64_t W) {
  if (nhwc)
    return {H * W * C, 16, W * C, C};
  return {C * H * W, H * W * 16, W * 16, 16};
}

struct Job {
  DepthwiseConv d;
  int64_t ho, wo;
  Strides xs, ys;
  const void* x;
  void* y;
  const float* packed;
  const float* bias;
  DwEpilogue epi;
};

/// The bits of v rounded to bf16 in their upper half (Bf16Bits.h).
HPVM_TARGET_AVX512 inline __m512i bf16Bits(__m512 v) {
  return bf16RoundedBits(_mm512_castps_si512(v));
}

template <bool Bf16In, bool RoundIn>
HPVM_TARGET_AVX512 inline __m512 load16(const void* base, int64_t off) {
  if constexpr (Bf16In) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
        static_cast<const uint16_t*>(base) + off));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  } else {
    const __m512 v = _mm512_loadu_ps(static_cast<const float*>(base) + off);
    if constexpr (RoundIn)
      return _mm512_castsi512_ps(_mm512_and_si512(
          bf16Bits(v), _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
    return v;
  }
}

template <bool Bf16Out>
HPVM_TARGET_AVX512 inline void store16(void* base, int64_t off, __m512 v) {
  if constexpr (Bf16Out) {
    const __m256i h = _mm512_cvtepi32_epi16(_mm512_srli_epi32(bf16Bits(v), 16));
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(static_cast<uint16_t*>(base) + off), h);
  } else {
    _mm512_storeu_ps(static_cast<float*>(base) + off, v);
  }
}

HPVM_TARGET_AVX512 inline __m512 activate(const DwEpilogue& e, __m512 v) {
  switch (e.act) {
  case DwAct::None:
    return v;
  case DwAct::Relu:
    return _mm512_max_ps(v, _mm512_setzero_ps());
  case DwAct::Clip:
    return _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(e.lo)),
                         _mm512_set1_ps(e.hi));
  case DwAct::LeakyRelu: {
    const __mmask16 negative =
        _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
    return _mm512_mask_mul_ps(v, negative, v, _mm512_set1_ps(e.lo));
  }
  case DwAct::HardSwish: {
    const __m512 gate =
        _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(v, _mm512_set1_ps(3.f)),
                                    _mm512_setzero_ps()),
                      _mm512_set1_ps(6.f));
    return _mm512_div_ps(_mm512_mul_ps(v, gate), _mm512_set1_ps(6.f));
  }
  }
  return v;
}

/// T output pixels from column ow on, taps [khLo, khHi) x [kwLo, kwHi).
template <int T, bool Bf16In, bool RoundIn, bool Bf16Out>
HPVM_TARGET_AVX512 inline void
tile(const Job& j, int64_t xRow, int64_t khLo, int64_t khHi, int64_t kwLo,
     int64_t kwHi, const float* taps, __m512 bias, int64_t ow, int64_t yRow) {
  const int64_t KW = j.d.kw, sw = j.d.strideW;
  const int64_t iw0 = ow * sw - j.d.padW;
  __m512 acc[T];
  for (int t = 0; t < T; ++t)
    acc[t] = bias;
  for (int64_t kh = khLo; kh < khHi; ++kh) {
    const int64_t row = xRow + kh * j.xs.h;
    for (int64_t kw = kwLo; kw < kwHi; ++kw) {
      const __m512 tap = _mm512_loadu_ps(taps + (kh * KW + kw) * 16);
      for (int t = 0; t < T; ++t)
        acc[t] = _mm512_fmadd_ps(
            load16<Bf16In, RoundIn>(j.x, row + (iw0 + t * sw + kw) * j.xs.w),
            tap, acc[t]);
    }
  }
  for (int t = 0; t < T; ++t)
    store16<Bf16Out>(j.y, yRow + (ow + t) * j.ys.w, activate(j.epi, acc[t]));
}

/// T output pixels from column ow on, all of whose taps lie inside the
/// input's columns, for a KW-wide window at stride S: per window row, the
/// (T - 1) * S + KW input pixels the tile reads are loaded (and widened)
/// once and stay in registers for all KW taps.
template <int T, int KW, int S, bool Bf16In, bool RoundIn, bool Bf16Out>
HPVM_TARGET_AVX512 inline void
fixedTile(const Job& j, int64_t xRow, int64_t khLo, int64_t khHi,
          const float* taps, __m512 bias, int64_t ow, int64_t yRow) {
  constexpr int kSpan = (T - 1) * S + KW;
  const int64_t iw0 = ow * S - j.d.padW;
  __m512 acc[T];
  for (int t = 0; t < T; ++t)
    acc[t] = bias;
  for (int64_t kh = khLo; kh < khHi; ++kh) {
    int64_t at = xRow + kh * j.xs.h + iw0 * j.xs.w;
    __m512 in[kSpan];
    for (int i = 0; i < kSpan; ++i, at += j.xs.w)
      in[i] = load16<Bf16In, RoundIn>(j.x, at);
    const float* row = taps + kh * KW * 16;
    for (int kw = 0; kw < KW; ++kw) {
      const __m512 tap = _mm512_loadu_ps(row + kw * 16);
      for (int t = 0; t < T; ++t)
        acc[t] = _mm512_fmadd_ps(in[t * S + kw], tap, acc[t]);
    }
  }
  int64_t to = yRow + ow * j.ys.w;
  for (int t = 0; t < T; ++t, to += j.ys.w)
    store16<Bf16Out>(j.y, to, activate(j.epi, acc[t]));
}

/// The inside columns [owLo, owHi) of one output row.
template <int KW, int S, bool Bf16In, bool RoundIn, bool Bf16Out>
HPVM_TARGET_AVX512 void insideColumns(const Job& j, int64_t xRow, int64_t khLo,
                                      int64_t khHi, const float* taps,
                                      __m512 bias, int64_t owLo, int64_t owHi,
                                      int64_t yRow) {
  // Stride 2 reads twice the pixels per tile: half the tile keeps the
  // inputs, accumulators and taps within the 32 registers.
  constexpr int kT = S == 1 ? kTile : kTile / 2;
  int64_t ow = owLo;
  for (; ow + kT <= owHi; ow += kT)
    fixedTile<kT, KW, S, Bf16In, RoundIn, Bf16Out>(j, xRow, khLo, khHi, taps,
                                                   bias, ow, yRow);
  for (; ow < owHi; ++ow)
    fixedTile<1, KW, S, Bf16In, RoundIn, Bf16Out>(j, xRow, khLo, khHi, taps,
                                                  bias, ow, yRow);
}

template <bool Bf16In, bool RoundIn, bool Bf16Out>
HPVM_TARGET_AVX512 void outputRow(const Job& j, int64_t n, int64_t cb,
                                  int64_t oh) {
  const DepthwiseConv& d = j.d;
  const int64_t KH = d.kh, KW = d.kw, sw = d.strideW;
  const float* taps = j.packed + cb * KH * KW * 16;
  const __m512 bias = _mm512_loadu_ps(j.bias + cb * 16);
  // The window's rows inside the input; the row offset of its first.
  const int64_t ih0 = oh * d.strideH - d.padH;
  const int64_t khLo = std::max<int64_t>(0, -ih0);
  const int64_t khHi = std::min<int64_t>(KH, d.h - ih0);
  const int64_t xRow = n * j.xs.n + cb * j.xs.cb + ih0 * j.xs.h;
  const int64_t yRow = n * j.ys.n + cb * j.ys.cb + oh * j.ys.h;
  // Columns whose whole window lies inside the input: [owLo, owHi).
  const int64_t owLo = std::min(j.wo, (d.padW + sw - 1) / sw);
  const int64_t lastFit = d.w - KW + d.padW; // ow * sw may be at most this
  const int64_t owHi =
      std::max(owLo, lastFit < 0 ? 0 : std::min(j.wo, lastFit / sw + 1));
  // The border columns, a tile each (a loop, not a lambda: a lambda does
  // not inherit the AVX-512 target, and clang refuses __m512 arguments
  // across that boundary on a CPU without AVX-512).
  for (int64_t ow = 0; ow < owLo; ++ow) {
    const int64_t iw0 = ow * sw - d.padW;
    tile<1, Bf16In, RoundIn, Bf16Out>(
        j, xRow, khLo, khHi, std::max<int64_t>(0, -iw0),
        std::min<int64_t>(KW, d.w - iw0), taps, bias, ow, yRow);
  }
  // The usual windows with their taps in registers, any other tile by tile.
  const int64_t shape = KW * 10 + sw;
  if (shape == 31)
    insideColumns<3, 1, Bf16In, RoundIn, Bf16Out>(j, xRow, khLo, khHi, taps,
                                                  bias, owLo, owHi, yRow);
  else if (shape == 32)
    insideColumns<3, 2, Bf16In, RoundIn, Bf16Out>(j, xRow, khLo, khHi, taps,
                                                  bias, owLo, owHi, yRow);
  else if (shape == 51)
    insideColumns<5, 1, Bf16In, RoundIn, Bf16Out>(j, xRow, khLo, khHi, taps,
                                                  bias, owLo, owHi, yRow);
  else if (shape == 52)
    insideColumns<5, 2, Bf16In, RoundIn, Bf16Out>(j, xRow, khLo, khHi, taps,
                                                  bias, owLo, owHi, yRow);
  else {
    int64_t ow = owLo;
    for (; ow + kTile <= owHi; ow += kTile)
      tile<kTile, Bf16In, RoundIn, Bf16Out>(j, xRow, khLo, khHi, 0, KW, taps,
                                            bias, ow, yRow);
    for (; ow < owHi; ++ow)
      tile<1, Bf16In, RoundIn, Bf16Out>(j, xRow, khLo, khHi, 0, KW, taps, bias,
                                        ow, yRow);
  }
  for (int64_t ow = owHi; ow < j.wo; ++ow) {
    const int64_t iw0 = ow * sw - d.padW;
    tile<1, Bf16In, RoundIn, Bf16Out>(
        j, xRow, khLo, khHi, std::max<int64_t>(0, -iw0),
        std::min<int64_t>(KW, d.w - iw0), taps, bias, ow, yRow);
  }
}

using RowFn = void (*)(const Job&, int64_t, int64_t, int64_t);

template <bool Bf16In, bool RoundIn> RowFn rowFor(bool bf16Out) {
  return bf16Out ? &outputRow<Bf16In, RoundIn, true>
                 : &outputRow<Bf16In, RoundIn, false>;
}

} // namespace

bool depthwiseApplies(const DepthwiseConv& d) {
  return haveAvx512() && d.n > 0 && d.c > 0 && d.c % 16 == 0 && d.kh > 0 &&
         d.kw > 0 && d.strideH > 0 && d.strideW > 0 && d.padH >= 0 &&
         d.padW >= 0 && d.h + 2 * d.padH >= d.kh && d.w + 2 * d.padW >= d.kw;
}

int64_t packedDepthwiseSize(const DepthwiseConv& d) {
  return d.c * d.kh * d.kw;
}

void packDepthwiseFilter(const DepthwiseConv& d, const float* filter, bool bf16,
                         float* packed) {
  const int64_t taps = d.kh * d.kw;
  for (int64_t c = 0; c < d.c; ++c)
    for (int64_t t = 0; t < taps; ++t)
      packed[(c / 16 * taps + t) * 16 + c % 16] = filter[c * taps + t];
  if (bf16)
    roundToBf16(packed, packedDepthwiseSize(d));
}

void depthwiseConv(const DepthwiseConv& d, const ChannelBlocks& x,
                   const float* packed, const float* bias, bool roundInput,
                   const DwEpilogue& epi, const ChannelBlocks& y) {
  Job j{d,    d.ho(), d.wo(), stridesOf(x.nhwc, d.c, d.h, d.w),
        {},   x.data, y.data, packed,
        bias, epi};
  j.ys = stridesOf(y.nhwc, d.c, j.ho, j.wo);
  const RowFn row = x.bf16       ? rowFor<true, false>(y.bf16)
                    : roundInput ? rowFor<false, true>(y.bf16)
                                 : rowFor<false, false>(y.bf16);
  const int64_t blocks = d.c / 16, ho = j.ho;
  const int64_t items = d.n * blocks * ho;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < items; ++i) {
    const int64_t oh = i % ho, rest = i / ho;
    row(j, rest / blocks, rest % blocks, oh);
  }
}

} // namespace hpvm::rt::approx

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
