// ConvWinograd.cpp - F(4x4, 3x3) Winograd convolutions (ConvWinograd.h).
#include "kernels/ConvWinograd.h"

#include "approx/Isa.h"
#include "base/Errors.h"
#include "kernels/DerivedWeights.h"
#include "kernels/HostPostOps.h"
#include "kernels/Primitives.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

namespace hpvm::rt::kern {

namespace {

constexpr int64_t kTile = 4;                 ///< Output pixels a tile side.
constexpr int64_t kAlpha = 6;                ///< Input pixels a patch side.
constexpr int64_t kPoints = kAlpha * kAlpha; ///< Matrix products.
constexpr int64_t kBlock = 8;                ///< Channels a block (nChw8c).
constexpr int64_t kChannelsMin = 32;

/// Where the direct kernel wins, measured on AMD EPYC (AVX2), batch 1:
/// fewer tiles per image than this (512 channels at 7x7, 4 tiles: 0.5x
/// on 1 thread, 0.7x on 2; the transformed filter is 4x the filter's
/// bytes, read for few products) ...
constexpr int64_t kMinTiles = 9;
/// ... or fewer direct products per image than this (the transforms' and the
/// matmul's fixed costs: 32 channels at 16x16, 4.7 MFLOP, 0.6x on 2
/// threads; 128 at 8x8, 19 MFLOP, 1.3x; 64 at 12x12, 11 MFLOP: even).
constexpr double kMinFlops = 16e6;

/// Bytes of transformed input and products a matmul round works on: an
/// image's tiles are taken in rounds of this size (at least
/// kMinRoundTiles), so that a large image does not stream through memory
/// three times. A round never spans two images, and the choice of this
/// kernel depends on an image's geometry only: an image's result does not
/// depend on the batch it is in (oneDNN's matmul rounds a row's sums
/// differently with the rows around it), as the direct kernel's does not.
constexpr int64_t kRoundBytes = int64_t(8) << 20;
constexpr int64_t kMinRoundTiles = 128;

/// d = Bt d along one axis of a patch, for a block of channels: six
/// inputs \p in (\p inStep floats apart) to six outputs (\p outStep apart).
inline void inputTransform(const float* in, int64_t inStep, float* out,
                           int64_t outStep) {
#pragma omp simd
  for (int64_t l = 0; l < kBlock; ++l) {
    const float d0 = in[l], d1 = in[inStep + l], d2 = in[2 * inStep + l];
    const float d3 = in[3 * inStep + l], d4 = in[4 * inStep + l];
    const float d5 = in[5 * inStep + l];
    out[l] = 4.f * d0 - 5.f * d2 + d4;
    out[outStep + l] = (d3 + d4) - 4.f * (d1 + d2);
    out[2 * outStep + l] = (d4 - d3) + 4.f * (d1 - d2);
    out[3 * outStep + l] = (d4 - d2) + 2.f * (d3 - d1);
    out[4 * outStep + l] = (d4 - d2) + 2.f * (d1 - d3);
    out[5 * outStep + l] = 4.f * d1 - 5.f * d3 + d5;
  }
}

/// o = At m along one axis: six products (\p inStep floats apart) to four
/// outputs (\p outStep apart), for a block of channels.
inline void outputTransform(const float* in, int64_t inStep, float* out,
                            int64_t outStep) {
#pragma omp simd
  for (int64_t l = 0; l < kBlock; ++l) {
    const float m0 = in[l], m1 = in[inStep + l], m2 = in[2 * inStep + l];
    const float m3 = in[3 * inStep + l], m4 = in[4 * inStep + l];
    const float m5 = in[5 * inStep + l];
    const float s12 = m1 + m2, d12 = m1 - m2, s34 = m3 + m4, d34 = m3 - m4;
    out[l] = m0 + s12 + s34;
    out[outStep + l] = d12 + 2.f * d34;
    out[2 * outStep + l] = s12 + 4.f * s34;
    out[3 * outStep + l] = d12 + 8.f * d34 + m5;
  }
}

/// u = G g along one axis: three taps to six points (in double: the
/// filter is transformed once).
inline std::array<double, kAlpha> filterTransform(double g0, double g1,
                                                  double g2) {
  return {g0 / 4,
          -(g0 + g1 + g2) / 6,
          -(g0 - g1 + g2) / 6,
          g0 / 24 + g1 / 12 + g2 / 6,
          g0 / 24 - g1 / 12 + g2 / 6,
          g2};
}

/// The filter (K x C x 3 x 3, bias and batch norm folded in) as the 36
/// matrices C x K of its transform, point-major.
void packFilter(const float* w, int64_t K, int64_t C, float* u) {
#pragma omp parallel for
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < C; ++c) {
      const float* g = w + (k * C + c) * 9;
      std::array<std::array<double, kAlpha>, 3> rows; // G g per filter row
      for (int64_t r = 0; r < 3; ++r)
        rows[r] = filterTransform(g[r * 3], g[r * 3 + 1], g[r * 3 + 2]);
      for (int64_t j = 0; j < kAlpha; ++j) {
        const std::array<double, kAlpha> col =
            filterTransform(rows[0][j], rows[1][j], rows[2][j]);
        for (int64_t i = 0; i < kAlpha; ++i)
          u[((i * kAlpha + j) * C + c) * K + k] = static_cast<float>(col[i]);
      }
    }
}

/// The tiles along one output axis of \p out pixels at dilation \p dil:
/// per phase (the pixels congruent modulo dil), runs of up to kTile
/// pixels, dil apart.
struct TileAxis {
  std::vector<int64_t> first; ///< The tile's first output pixel.
  std::vector<int64_t> count; ///< Its pixels (kTile but at a phase's end).
};

/// The number of tiles tileAxis(out, dil) lists, without listing them.
int64_t tileCount(int64_t out, int64_t dil) {
  int64_t n = 0;
  for (int64_t phase = 0; phase < std::min(dil, out); ++phase)
    n += ((out - phase + dil - 1) / dil + kTile - 1) / kTile;
  return n;
}

TileAxis tileAxis(int64_t out, int64_t dil) {
  TileAxis axis;
  for (int64_t phase = 0; phase < std::min(dil, out); ++phase) {
    const int64_t len = (out - phase + dil - 1) / dil;
    for (int64_t t = 0; t < len; t += kTile) {
      axis.first.push_back(phase + t * dil);
      axis.count.push_back(std::min(kTile, len - t));
    }
  }
  return axis;
}

/// The batched matmul of a round of \p tiles: 36 products (tiles x C) *
/// (C x K), all row-major.
const Prim& roundMatmul(int64_t tiles, int64_t C, int64_t K) {
  return cachedPrim(
      fmt::format(FMT_COMPILE("winograd|{}|{}|{}"), tiles, C, K), [&] {
        const dnnl::memory::desc src({kPoints, tiles, C}, dt::f32, tag::abc);
        const dnnl::memory::desc wts({kPoints, C, K}, dt::f32, tag::abc);
        const dnnl::memory::desc dst({kPoints, tiles, K}, dt::f32, tag::abc);
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wts, dst),
                                        engine());
        return Prim{dnnl::matmul(pd), src, wts, dst};
      });
}

} // namespace

bool convWinogradApplies(const KnobSpec& knob, const ConvArgs& a,
                         const PostOps& post, const Dims4& xd, const Dims4& wd,
                         const Dims4& yd) {
  if (knob.precision != Precision::FP32 || knob.variant != Variant::Exact ||
      approx::isaLevel() != approx::IsaLevel::Avx2 || a.groups != 1 ||
      post.gate || wd[2] != 3 || wd[3] != 3 || a.strideH != 1 ||
      a.strideW != 1 || xd[1] % kBlock != 0 || wd[0] % kBlock != 0 ||
      xd[1] < kChannelsMin || wd[0] < kChannelsMin ||
      (post.residual && dims4(post.residual) != yd))
    return false;
  const int64_t tiles = tileCount(yd[2], a.dilH) * tileCount(yd[3], a.dilW);
  const double flops =
      2.0 * double(xd[1]) * double(wd[0]) * 9 * double(yd[2] * yd[3]);
  return tiles >= kMinTiles && flops >= kMinFlops;
}

void runConvWinograd(const Tensor* x, const Tensor* w, const ConvArgs& a,
                     const PostOps& post, Tensor* y, const Dims4& xd,
                     const Dims4& wd, const Dims4& yd, int64_t roundTiles) {
  const int64_t N = xd[0], C = xd[1], H = xd[2], W = xd[3];
  const int64_t K = wd[0], Ho = yd[2], Wo = yd[3];
  HPVM_ASSERT(wd[1] == C && wd[2] == 3 && wd[3] == 3 && a.groups == 1 &&
                  a.strideH == 1 && a.strideW == 1 && C % kBlock == 0 &&
                  K % kBlock == 0 && !post.gate,
              "a convolution the Winograd kernel does not compute");
  const TileAxis rows = tileAxis(Ho, a.dilH), cols = tileAxis(Wo, a.dilW);
  const auto rowTiles = static_cast<int64_t>(rows.first.size());
  const auto colTiles = static_cast<int64_t>(cols.first.size());
  HPVM_ASSERT(rowTiles == tileCount(Ho, a.dilH) &&
                  colTiles == tileCount(Wo, a.dilW),
              "tileCount() disagrees with tileAxis()");
  const int64_t tiles = rowTiles * colTiles; // per image
  const TensorImpl::Derived& filter =
      packedFilter(w, post, "winograd-f4x4", K, C * 9, dt::f32, kPoints * C * K,
                   [&](const float* folded, void* packed) {
                     packFilter(folded, K, C, static_cast<float*>(packed));
                   });
  const dnnl::memory u = filter.weights;
  const auto* bias = static_cast<const float*>(filter.bias.get_data_handle());
  std::unique_ptr<PoolBuffer> xHold, residualHold;
  const dnnl::memory::desc xDesc({N, C, H, W}, dt::f32, tag::nChw8c);
  const dnnl::memory::desc yDesc({N, K, Ho, Wo}, dt::f32, tag::nChw8c);
  const auto* xp =
      static_cast<const float*>(memoryAs(x, xDesc, xHold).get_data_handle());
  const float* rp =
      post.residual
          ? static_cast<const float*>(
                memoryAs(post.residual, yDesc, residualHold).get_data_handle())
          : nullptr;
  auto* yp = static_cast<float*>(outputMemory(y, yDesc).get_data_handle());
  // The rounds: their transformed inputs and products in pooled buffers.
  const int64_t perTile = kPoints * (C + K) * int64_t(sizeof(float));
  if (roundTiles <= 0)
    roundTiles = std::max(kMinRoundTiles, kRoundBytes / perTile);
  roundTiles = std::min(tiles, roundTiles);
  PoolBuffer vBuf(static_cast<size_t>(kPoints * roundTiles * C) *
                  sizeof(float));
  PoolBuffer mBuf(static_cast<size_t>(kPoints * roundTiles * K) *
                  sizeof(float));
  auto* v = static_cast<float*>(vBuf.get());
  auto* m = static_cast<float*>(mBuf.get());
  const int64_t CB = C / kBlock, KB = K / kBlock;
  const int64_t padH = a.padH, padW = a.padW, dh = a.dilH, dw = a.dilW;
  for (int64_t img = 0; img < N; ++img)
    for (int64_t t0 = 0; t0 < tiles; t0 += roundTiles) {
      const int64_t n = std::min(roundTiles, tiles - t0);
      // 1. The patches' transforms: v[point][tile][c].
#pragma omp parallel for collapse(2) schedule(static)
      for (int64_t t = 0; t < n; ++t)
        for (int64_t cb = 0; cb < CB; ++cb) {
          const int64_t tile = t0 + t, col = tile % colTiles;
          const int64_t row = tile / colTiles;
          const float* plane = xp + (img * CB + cb) * H * W * kBlock;
          const int64_t ih0 = rows.first[row] - padH;
          const int64_t iw0 = cols.first[col] - padW;
          alignas(64) float d[kAlpha][kAlpha][kBlock];
          alignas(64) float s[kAlpha][kAlpha][kBlock];
          for (int64_t i = 0; i < kAlpha; ++i) {
            const int64_t ih = ih0 + i * dh;
            for (int64_t j = 0; j < kAlpha; ++j) {
              const int64_t iw = iw0 + j * dw;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                std::fill(d[i][j], d[i][j] + kBlock, 0.f);
              else
                std::copy(plane + (ih * W + iw) * kBlock,
                          plane + (ih * W + iw + 1) * kBlock, d[i][j]);
            }
          }
          for (int64_t j = 0; j < kAlpha; ++j)
            inputTransform(d[0][j], kAlpha * kBlock, s[0][j], kAlpha * kBlock);
          for (int64_t i = 0; i < kAlpha; ++i)
            inputTransform(s[i][0], kBlock,
                           v + (i * kAlpha * n + t) * C + cb * kBlock, n * C);
        }
      // 2. The 36 sums over the channels: m[point] = v[point] * u[point].
      const Prim& mm = roundMatmul(n, C, K);
      mm.prim.execute(
          stream(), {{DNNL_ARG_SRC, dnnl::memory(mm.src, engine(), v)},
                     {DNNL_ARG_WEIGHTS,
                      dnnl::memory(mm.weights, engine(), u.get_data_handle())},
                     {DNNL_ARG_DST, dnnl::memory(mm.dst, engine(), m)}});
      stream().wait();
      // 3. The products transformed back, the post-ops applied, the tile's
      // pixels written.
#pragma omp parallel for collapse(2) schedule(static)
      for (int64_t t = 0; t < n; ++t)
        for (int64_t kb = 0; kb < KB; ++kb) {
          const int64_t tile = t0 + t, col = tile % colTiles;
          const int64_t row = tile / colTiles;
          alignas(64) float s[kTile][kAlpha][kBlock];
          alignas(64) float o[kTile][kTile][kBlock];
          for (int64_t j = 0; j < kAlpha; ++j)
            outputTransform(m + (j * n + t) * K + kb * kBlock, kAlpha * n * K,
                            s[0][j], kAlpha * kBlock);
          for (int64_t i = 0; i < kTile; ++i)
            outputTransform(s[i][0], kBlock, o[i][0], kBlock);
          float* flat = o[0][0];
          const float* b = bias + kb * kBlock;
          for (int64_t p = 0; p < kTile * kTile; ++p)
#pragma omp simd
            for (int64_t l = 0; l < kBlock; ++l)
              flat[p * kBlock + l] += b[l];
          actInPlace(flat, kTile * kTile * kBlock, post.act, post.actLo,
                     post.actHi);
          const int64_t oh0 = rows.first[row], ow0 = cols.first[col];
          const int64_t plane = (img * KB + kb) * Ho * Wo;
          if (rp) {
            for (int64_t i = 0; i < rows.count[row]; ++i)
              for (int64_t j = 0; j < cols.count[col]; ++j) {
                const float* r =
                    rp + (plane + (oh0 + i * dh) * Wo + ow0 + j * dw) * kBlock;
#pragma omp simd
                for (int64_t l = 0; l < kBlock; ++l)
                  o[i][j][l] += r[l];
              }
            actInPlace(flat, kTile * kTile * kBlock, post.act2, post.act2Lo,
                       post.act2Hi);
          }
          for (int64_t i = 0; i < rows.count[row]; ++i)
            for (int64_t j = 0; j < cols.count[col]; ++j)
              std::copy(o[i][j], o[i][j] + kBlock,
                        yp + (plane + (oh0 + i * dh) * Wo + ow0 + j * dw) *
                                 kBlock);
        }
    }
}

} // namespace hpvm::rt::kern
