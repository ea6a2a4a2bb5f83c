// HalfConv.cpp - convolutions in half-precision arithmetic (HalfConv.h).
//
// An implicit GEMM on a zero-padded NHWC half copy of the input: rows are
// output pixels, columns output channels, the reduction runs over the
// window's taps and the input channels. Each 512-bit accumulator holds 16
// output channels as pairs of lanes, one summing the even input channels'
// products and one the odd ones', so that one 32-bit broadcast feeds the
// multiply-add two input channels (AVX512-FP16 has no half broadcast that
// is a plain load). A tile of MR pixels x NR vectors of 16 channels sums a
// block of kHalfSumTerms products per output value (half of them in each
// lane of its pair, the two lanes then added in half), and adds the block's
// sum to the fp32 output; the filter of one block (a chunk: 64 channel
// pairs) stays in L1 while every tile of a work item passes over it.
#include "approx/HalfConv.h"

#include "approx/ConvGeometry.h"
#include "approx/Isa.h"
#include "approx/Scratch.h"
#include "base/Errors.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

// The kernels need the compiler's AVX512-FP16 intrinsics under a target
// attribute (GCC 12 and later), or the whole build targeting a CPU with
// AVX512-FP16 (clang 14's headers declare them only then).
#if (defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12) ||            \
    defined(__AVX512FP16__)
#define HPVM_HALF_KERNELS 1
#else
#define HPVM_HALF_KERNELS 0
#endif

namespace hpvm::rt::approx {

namespace {

/// Output channels per work item: four vectors of 16.
constexpr int64_t kOcBlock = 64;
/// Half (binary16) bits of f, rounded to nearest even.
uint16_t halfBits(float f) {
  return static_cast<uint16_t>(
      _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

#if HPVM_HALF_KERNELS

/// Output pixels per work item at least (whole rows): the tiles that share
/// a chunk of the filter while it is in L1.
constexpr int64_t kItemPixels = 64;
/// Channel pairs per chunk: kHalfSumTerms products per output channel,
/// half of them in each lane of its pair.
constexpr int64_t kChunkPairs = kHalfSumTerms / 2;

/// Pixels per tile with nr vectors of 16 channels: at most 28 accumulators,
/// with nr filter vectors and a broadcast in the 32 registers.
constexpr int mrFor(int nr) { return nr <= 2 ? 12 : nr == 3 ? 9 : 6; }

/// Part of the reduction summed in half: taps [t0, t1), channel pairs
/// [cp0, cp1) of each; consecutive in the packed filter.
struct Chunk {
  int64_t t0, t1, cp0, cp1;
};

std::vector<Chunk> chunksOf(const HalfConv& hc) {
  const int64_t taps = hc.kh * hc.kw, pairs = hc.c / 2;
  std::vector<Chunk> out;
  if (pairs >= kChunkPairs) {
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t cp = 0; cp < pairs; cp += kChunkPairs)
        out.push_back({t, t + 1, cp, std::min(pairs, cp + kChunkPairs)});
  } else {
    const int64_t perChunk = kChunkPairs / pairs;
    for (int64_t t = 0; t < taps; t += perChunk)
      out.push_back({t, std::min(taps, t + perChunk), 0, pairs});
  }
  return out;
}

/// Everything a tile needs besides its pixels.
struct TileArgs {
  const int64_t* tapOff; ///< Element offset of each tap in the padded input.
  Chunk chunk;
  const uint16_t* w; ///< The chunk's filter: [tap][pair][nr][16][2].
  int64_t jStride;   ///< Floats between the output's channel blocks.
  const float* bias; ///< The block's bias on the first chunk, else null.
};

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

/// M pixels (input at x0 + offs[m], output at py[m]) x NR vectors of 16
/// output channels: the chunk's products summed in half, then added (or,
/// with a bias, stored with it) into the fp32 output.
template <int M, int NR>
HPVM_TARGET_AVX512_FP16 void tile(const uint16_t* x0, const int64_t* offs,
                                  float* const* py, const TileArgs& ta) {
  __m512h acc[M][NR];
#pragma GCC unroll 32
  for (int m = 0; m < M; ++m)
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j)
      acc[m][j] = _mm512_setzero_ph();
  const uint16_t* w = ta.w;
  for (int64_t t = ta.chunk.t0; t < ta.chunk.t1; ++t) {
    const uint16_t* a = x0 + ta.tapOff[t];
    for (int64_t cp = ta.chunk.cp0; cp < ta.chunk.cp1; ++cp, w += NR * 32) {
      __m512h wv[NR];
#pragma GCC unroll 4
      for (int j = 0; j < NR; ++j)
        wv[j] = _mm512_castsi512_ph(_mm512_loadu_si512(w + j * 32));
#pragma GCC unroll 32
      for (int m = 0; m < M; ++m) {
        int32_t pair;
        std::memcpy(&pair, a + offs[m] + 2 * cp, sizeof pair);
        const __m512h b = _mm512_castsi512_ph(_mm512_set1_epi32(pair));
#pragma GCC unroll 4
        for (int j = 0; j < NR; ++j)
          acc[m][j] = _mm512_fmadd_ph(b, wv[j], acc[m][j]);
      }
    }
  }
  // Lane 2l holds channel l's even-channel sum, lane 2l + 1 its odd one:
  // added in half (lane 2l), then widened and added to the fp32 output.
#pragma GCC unroll 32
  for (int m = 0; m < M; ++m)
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) {
      const __m512i bits = _mm512_castph_si512(acc[m][j]);
      const __m512h odd = _mm512_castsi512_ph(_mm512_srli_epi32(bits, 16));
      const __m512h both = _mm512_add_ph(acc[m][j], odd);
      const __m512 sum =
          _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_castph_si512(both)));
      float* out = py[m] + j * ta.jStride;
      const __m512 base =
          ta.bias ? _mm512_loadu_ps(ta.bias + j * 16) : _mm512_loadu_ps(out);
      _mm512_storeu_ps(out, _mm512_add_ps(base, sum));
    }
}

using TileFn = void (*)(const uint16_t*, const int64_t*, float* const*,
                        const TileArgs&);

/// tile<m, NR> for m in 1..mrFor(NR), at index m - 1 (the rest null).
template <int NR, int... Ms>
std::array<TileFn, 12> tilesFor(std::integer_sequence<int, Ms...>) {
  return {{&tile<Ms + 1, NR>...}};
}

/// kTiles[nr - 1][m - 1]: tile<m, nr>.
const std::array<TileFn, 12> kTiles[4] = {
    tilesFor<1>(std::make_integer_sequence<int, mrFor(1)>{}),
    tilesFor<2>(std::make_integer_sequence<int, mrFor(2)>{}),
    tilesFor<3>(std::make_integer_sequence<int, mrFor(3)>{}),
    tilesFor<4>(std::make_integer_sequence<int, mrFor(4)>{}),
};

/// wo x 16 fp32 values (one channel block of an output row) to half, the
/// 16 of column x at to[x * stride].
HPVM_TARGET_AVX512_FP16 void halfRow(const float* row, int64_t wo, uint16_t* to,
                                     int64_t stride) {
  for (int64_t x = 0; x < wo; ++x)
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(to + x * stride),
        _mm512_cvtps_ph(_mm512_loadu_ps(row + x * 16),
                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

/// A perforated convolution's skipped rows (columns) of y, nChw16c fp32,
/// filled from their computed neighbours; then the epilogue on every row.
void fillPerforated(const HalfConv& hc, const std::vector<bool>& keptRows,
                    const std::vector<bool>& keptCols, float* y,
                    const BlockedEpilogue* epi) {
  const int64_t Ho = hc.ho(), Wo = hc.wo(), KB = hc.k / 16;
#pragma omp parallel for schedule(static)
  for (int64_t plane = 0; plane < hc.n * KB; ++plane) {
    float* base = y + plane * Ho * Wo * 16;
    for (int64_t oh = 0; oh < Ho; ++oh)
      if (!keptRows[oh]) {
        const SkippedSource from = skippedSource(oh, Ho);
        averageInto(base + from.lo * Wo * 16, base + from.hi * Wo * 16,
                    base + oh * Wo * 16, Wo * 16);
      }
    for (int64_t oh = 0; oh < Ho; ++oh) {
      float* row = base + oh * Wo * 16;
      for (int64_t ow = 0; ow < Wo; ++ow)
        if (!keptCols[ow]) {
          const SkippedSource from = skippedSource(ow, Wo);
          averageInto(row + from.lo * 16, row + from.hi * 16, row + ow * 16,
                      16);
        }
      if (epi)
        epi->applyRow(plane / KB, plane % KB, oh, row, Wo);
    }
  }
}

/// The input (nChw16c fp32 or NHWC half) as zero-padded NHWC half: rows
/// [row0, row1) of the N x Hp padded rows.
HPVM_TARGET_AVX512_FP16 void padHalfRows(const HalfConv& hc,
                                         const HalfConvIo& io, uint16_t* xp,
                                         int64_t row0, int64_t row1) {
  const int64_t Hp = hc.h + 2 * hc.padH, Wp = hc.w + 2 * hc.padW;
  const int64_t C = hc.c, CB = C / 16;
  for (int64_t r = row0; r < row1; ++r) {
    const int64_t n = r / Hp, hp = r % Hp, h = hp - hc.padH;
    uint16_t* out = xp + r * Wp * C;
    if (h < 0 || h >= hc.h) {
      std::fill(out, out + Wp * C, uint16_t{0});
      continue;
    }
    std::fill(out, out + hc.padW * C, uint16_t{0});
    std::fill(out + (hc.padW + hc.w) * C, out + Wp * C, uint16_t{0});
    if (io.xHalf) {
      const uint16_t* from = io.xHalf + (n * hc.h + h) * hc.w * C;
      std::copy(from, from + hc.w * C, out + hc.padW * C);
      continue;
    }
    for (int64_t cb = 0; cb < CB; ++cb)
      halfRow(io.x + ((n * CB + cb) * hc.h + h) * hc.w * 16, hc.w,
              out + hc.padW * C + cb * 16, C);
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif // HPVM_HALF_KERNELS

} // namespace

bool halfConvAvailable() { return HPVM_HALF_KERNELS && haveAvx512Fp16(); }

bool halfConvApplies(const HalfConv& hc) {
  return hc.c > 0 && hc.c % 16 == 0 && hc.k > 0 && hc.k % 16 == 0 &&
         hc.kh >= 1 && hc.kw >= 1 && hc.strideH >= 1 && hc.strideW >= 1 &&
         hc.padH >= 0 && hc.padW >= 0 && hc.h + 2 * hc.padH >= hc.kh &&
         hc.w + 2 * hc.padW >= hc.kw && hc.n >= 1 && hc.perfRate >= 1 &&
         hc.perfOffset >= 0 && hc.perfOffset < hc.perfRate;
}

int64_t packedHalfFilterSize(const HalfConv& hc) {
  return hc.k * hc.c * hc.kh * hc.kw;
}

void packHalfFilter(const HalfConv& hc, const float* w, uint16_t* packed) {
  const int64_t taps = hc.kh * hc.kw, pairs = hc.c / 2;
  for (int64_t ob = 0; ob * kOcBlock < hc.k; ++ob) {
    const int64_t nr = std::min<int64_t>(4, (hc.k - ob * kOcBlock) / 16);
    uint16_t* block = packed + ob * taps * pairs * kOcBlock * 2;
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t cp = 0; cp < pairs; ++cp)
        for (int64_t j = 0; j < nr; ++j)
          for (int64_t l = 0; l < 16; ++l)
            for (int64_t e = 0; e < 2; ++e) {
              const int64_t oc = ob * kOcBlock + j * 16 + l, c = 2 * cp + e;
              block[(((t * pairs + cp) * nr + j) * 16 + l) * 2 + e] =
                  halfBits(w[(oc * hc.c + c) * taps + t]);
            }
  }
}

#if !HPVM_HALF_KERNELS
void convHalf(const HalfConv&, const HalfConvIo&, const uint16_t*, const float*,
              const BlockedEpilogue*) {
  HPVM_UNREACHABLE("convHalf: built without AVX512-FP16 kernels");
}
#else
void convHalf(const HalfConv& hc, const HalfConvIo& io, const uint16_t* packed,
              const float* bias, const BlockedEpilogue* epi) {
  const int64_t Ho = hc.ho(), Wo = hc.wo(), C = hc.c, K = hc.k;
  const int64_t Hp = hc.h + 2 * hc.padH, Wp = hc.w + 2 * hc.padW;
  const int64_t taps = hc.kh * hc.kw, pairs = C / 2, KB = K / 16;
  ScratchPool::Lease lease(scratchPool());
  auto* xp = static_cast<uint16_t*>(
      lease.slot(0, static_cast<size_t>(hc.n * Hp * Wp * C) * 2));
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < hc.n * Hp; r += 4)
    padHalfRows(hc, io, xp, r, std::min(hc.n * Hp, r + 4));

  std::vector<int64_t> tapOff(static_cast<size_t>(taps));
  for (int64_t i = 0; i < hc.kh; ++i)
    for (int64_t j = 0; j < hc.kw; ++j)
      tapOff[i * hc.kw + j] = (i * Wp + j) * C;
  const std::vector<Chunk> chunks = chunksOf(hc);
  const int64_t rows = hc.n * Ho;
  // Rows per item: kItemPixels pixels or more (up to twice), in the count
  // that wastes least of the last tile.
  const int64_t mrAll = mrFor(static_cast<int>(std::min<int64_t>(4, KB)));
  // (Per mille of the last tile's pixels left empty.)
  const auto waste = [&](int64_t rows) {
    return ((rows * Wo + mrAll - 1) / mrAll * mrAll - rows * Wo) * 1000 /
           (rows * Wo);
  };
  int64_t rowsPerItem = std::max<int64_t>(1, (kItemPixels + Wo - 1) / Wo);
  for (int64_t r = rowsPerItem + 1; r * Wo <= 2 * kItemPixels; ++r)
    if (waste(r) < waste(rowsPerItem))
      rowsPerItem = r;
  const int64_t rowGroups = (rows + rowsPerItem - 1) / rowsPerItem;
  const int64_t ocBlocks = (K + kOcBlock - 1) / kOcBlock;
  // Each item's rows go to y, or to a staging buffer ([block][row][column]
  // x 16) before their conversion to half.
  const int64_t jStride = io.y ? Ho * Wo * 16 : rowsPerItem * Wo * 16;
  const bool perforated = hc.perfRate > 1;
  HPVM_ASSERT(!perforated || io.y, "a perforated convHalf writes fp32");
  const std::vector<bool> keptRows =
      perforationKept(Ho, hc.perfCols ? 1 : hc.perfRate, hc.perfOffset);
  const std::vector<bool> keptCols =
      perforationKept(Wo, hc.perfCols ? hc.perfRate : 1, hc.perfOffset);

#pragma omp parallel
  {
    std::vector<int64_t> pixIn, offs;
    std::vector<float*> pixOut;
    std::vector<float> stage;
    if (!io.y)
      stage.resize(static_cast<size_t>(4 * jStride));
#pragma omp for schedule(static)
    for (int64_t item = 0; item < ocBlocks * rowGroups; ++item) {
      const int64_t ob = item / rowGroups, rg = item % rowGroups;
      const int nr = static_cast<int>(std::min<int64_t>(4, KB - ob * 4));
      const int mr = mrFor(nr);
      const int64_t r0 = rg * rowsPerItem,
                    r1 = std::min(rows, r0 + rowsPerItem);
      const int64_t P = (r1 - r0) * Wo;
      // Each pixel's input (tap 0, channel 0) and output (first channel of
      // the block).
      pixIn.resize(P);
      pixOut.resize(P);
      offs.resize(P);
      // (Coordinates stepped, not divided: on small layers the divisions
      // cost as much as the tiles.) A perforated convolution lists its
      // kept pixels only.
      int64_t kept = 0;
      for (int64_t p = 0, n = r0 / Ho, oh = r0 % Ho, ow = 0; p < P; ++p) {
        if (!perforated || (keptRows[oh] && keptCols[ow])) {
          pixIn[kept] = ((n * Hp + oh * hc.strideH) * Wp + ow * hc.strideW) * C;
          pixOut[kept] =
              io.y ? io.y + (((n * KB + ob * 4) * Ho + oh) * Wo + ow) * 16
                   : stage.data() + p * 16;
          ++kept;
        }
        if (++ow == Wo) {
          ow = 0;
          if (++oh == Ho) {
            oh = 0;
            ++n;
          }
        }
      }
      // Tiles of mr pixels: each pixel's input relative to the tile's first.
      for (int64_t p0 = 0; p0 < kept; p0 += mr)
        for (int64_t p = p0; p < std::min(kept, p0 + mr); ++p)
          offs[p] = pixIn[p] - pixIn[p0];
      const uint16_t* wBlock = packed + ob * taps * pairs * kOcBlock * 2;
      for (size_t ci = 0; ci < chunks.size(); ++ci) {
        const Chunk& ch = chunks[ci];
        const TileArgs ta{tapOff.data(), ch,
                          wBlock + (ch.t0 * pairs + ch.cp0) * nr * 32, jStride,
                          ci == 0 ? bias + ob * kOcBlock : nullptr};
        for (int64_t p0 = 0; p0 < kept; p0 += mr) {
          const int m = static_cast<int>(std::min<int64_t>(mr, kept - p0));
          kTiles[nr - 1][m - 1](xp + pixIn[p0], offs.data() + p0,
                                pixOut.data() + p0, ta);
        }
      }
      if (perforated)
        continue; // (The rows are finished below, once all are computed.)
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / Ho, oh = r % Ho;
        for (int j = 0; j < nr; ++j) {
          const int64_t cb = ob * 4 + j;
          float* row = io.y ? io.y + ((n * KB + cb) * Ho + oh) * Wo * 16
                            : stage.data() + j * jStride + (r - r0) * Wo * 16;
          if (epi)
            epi->applyRow(n, cb, oh, row, Wo);
          if (io.yHalf)
            halfRow(row, Wo, io.yHalf + (r * Wo * KB + cb) * 16, K);
        }
      }
    }
  }
  if (perforated)
    fillPerforated(hc, keptRows, keptCols, io.y, epi);
}

#endif // HPVM_HALF_KERNELS

} // namespace hpvm::rt::approx
