// Normalization.cpp - normalizing layers: batch norm (inference) on
// oneDNN, layer normalization over each pixel's channels, and softmax (of
// each row, or over each pixel's channels, all or in groups).
#include "base/Errors.h"
#include "kernels/Elementwise.h"
#include "kernels/FastExp.h"
#include "kernels/Numerics.h"
#include "kernels/PostOps.h"
#include "kernels/Primitives.h"
#include "kernels/Reference.h"
#include "kernels/TensorImpl.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace hpvm::rt {
using namespace kern;

// --- Batch norm -------------------------------------------------------------

namespace {
dnnl::memory paramMemory(const Tensor* t, int64_t C) {
  return dnnl::memory({{C}, dt::f32, tag::x}, engine(),
                      const_cast<float*>(hostData(t)));
}
} // namespace

void runBatchNorm(const Tensor* x, const Tensor* gamma, const Tensor* beta,
                  const Tensor* mean, const Tensor* var, double eps, Act act,
                  float lo, float hi, const KnobSpec& knob, Tensor* y) {
  applyThreads();
  Dims4 xd = dims4(x);
  HPVM_ASSERT(numElems(y) == numElems(x),
              fmt::format("batch norm output {} differs from input {}",
                          dimsStr(y), dimsStr(x)));
  const int64_t C = xd[1];
  checkPerChannel(gamma, C, "batch norm gamma");
  checkPerChannel(beta, C, "batch norm beta");
  checkPerChannel(mean, C, "batch norm mean");
  checkPerChannel(var, C, "batch norm variance");
  dnnl::memory src = currentMemory(x);
  // ReLU fuses into the primitive; other activations run after it.
  auto flags = dnnl::normalization_flags::use_global_stats |
               dnnl::normalization_flags::use_scale |
               dnnl::normalization_flags::use_shift;
  if (act == Act::Relu)
    flags = flags | dnnl::normalization_flags::fuse_norm_relu;
  std::string key = fmt::format(FMT_COMPILE("bn|{}|{}|{}"),
                                descKey(src.get_desc()), eps, act == Act::Relu);
  const Prim& p = cachedPrim(key, [&] {
    dnnl::batch_normalization_forward::desc desc(
        dnnl::prop_kind::forward_inference, src.get_desc(),
        static_cast<float>(eps), flags);
    dnnl::batch_normalization_forward::primitive_desc pd(desc, engine());
    return Prim{dnnl::batch_normalization_forward(pd),
                pd.src_desc(),
                {},
                pd.dst_desc()};
  });
  // Parameters are read in place from the host buffers; the output takes
  // the input's layout.
  dnnl::memory g = paramMemory(gamma, C), b = paramMemory(beta, C),
               m = paramMemory(mean, C), v = paramMemory(var, C);
  dnnl::memory dst = sameLayoutOutput(x, src, y);
  p.prim.execute(stream(), {{DNNL_ARG_SRC, src},
                            {DNNL_ARG_SCALE, g},
                            {DNNL_ARG_SHIFT, b},
                            {DNNL_ARG_MEAN, m},
                            {DNNL_ARG_VARIANCE, v},
                            {DNNL_ARG_DST, dst}});
  stream().wait();
  if (act != Act::Relu)
    eltwise(dst, dst, act, lo, hi);
  markInPlace(y, dst);
  roundResult(knob.precision, y);
}

// --- Layer normalization ----------------------------------------------------

namespace {

/// Layer norm over the C channels of each pixel of \p xb, held with the
/// channels in blocks of B (nChwBc), into \p yb in the same layout: the B
/// channels of a block are the vector; each pixel sums C/B vectors, then
/// across the lanes.
template <int64_t B>
void layerNormBlocked(const float* xb, const float* g, const float* b,
                      int64_t N, int64_t C, int64_t HW, double eps, float* yb) {
  const int64_t CB = C / B;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < HW; ++p) {
      const float* xp = xb + (n * CB * HW + p) * B;
      float* yp = yb + (n * CB * HW + p) * B;
      float acc[B] = {};
      for (int64_t cb = 0; cb < CB; ++cb)
#pragma omp simd
        for (int64_t l = 0; l < B; ++l)
          acc[l] += xp[cb * HW * B + l];
      float mean = 0;
      for (int64_t l = 0; l < B; ++l)
        mean += acc[l];
      mean /= float(C);
      float sq[B] = {};
      for (int64_t cb = 0; cb < CB; ++cb)
#pragma omp simd
        for (int64_t l = 0; l < B; ++l) {
          const float d = xp[cb * HW * B + l] - mean;
          sq[l] += d * d;
        }
      float var = 0;
      for (int64_t l = 0; l < B; ++l)
        var += sq[l];
      const float inv = float(1 / std::sqrt(double(var) / double(C) + eps));
      for (int64_t cb = 0; cb < CB; ++cb)
#pragma omp simd
        for (int64_t l = 0; l < B; ++l)
          yp[cb * HW * B + l] =
              (xp[cb * HW * B + l] - mean) * inv * g[cb * B + l] +
              b[cb * B + l];
    }
}

} // namespace

void runLayerNorm(const Tensor* x, const Tensor* gamma, const Tensor* beta,
                  double eps, const KnobSpec& knob, Tensor* y) {
  applyThreads();
  const Dims4 xd = dims4(x);
  const int64_t N = xd[0], C = xd[1], HW = xd[2] * xd[3];
  HPVM_ASSERT(
      numElems(y) == numElems(x) && numElems(gamma) == C && numElems(beta) == C,
      fmt::format("layer norm shapes wrong: x {}, gamma {}, beta {}, "
                  "y {}",
                  dimsStr(x), dimsStr(gamma), dimsStr(beta), dimsStr(y)));
  const float* g = hostData(gamma);
  const float* b = hostData(beta);
  // x held in nChw16c or nChw8c (a convolution's output, by the vector
  // width): normalized in that layout, and y left in it for the
  // convolution that follows (ConvNeXt, Swin, ViT), with no reorder either
  // side.
  if (const int64_t block = heldChannelBlock(x);
      block != 0 && y != x && C % block == 0) {
    const float* xb =
        static_cast<const float*>(implOf(x).mem.get_data_handle());
    float* yb = static_cast<float*>(
        outputMemory(y, channelBlockedDesc(y, block)).get_data_handle());
    if (block == 16)
      layerNormBlocked<16>(xb, g, b, N, C, HW, eps, yb);
    else
      layerNormBlocked<8>(xb, g, b, N, C, HW, eps, yb);
    roundResult(knob.precision, y);
    return;
  }
  const float* xp = hostData(x);
  if (y != x)
    allocHost(y);
  float* yp = y->impl->host;
  // Pixels in blocks: each block sums over the channels with the pixels as
  // the contiguous (vectorised) inner loop, in two passes (the mean, then
  // the squared deviations from it, as PyTorch's layer_norm).
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (HW + kBlock - 1) / kBlock;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t p0 = blk * kBlock, len = std::min(kBlock, HW - p0);
      float mean[kBlock], inv[kBlock];
      const float* xb = xp + n * C * HW + p0;
      float* yb = yp + n * C * HW + p0;
      std::fill_n(mean, len, 0.f);
      for (int64_t c = 0; c < C; ++c)
#pragma omp simd
        for (int64_t p = 0; p < len; ++p)
          mean[p] += xb[c * HW + p];
      std::fill_n(inv, len, 0.f);
      for (int64_t p = 0; p < len; ++p)
        mean[p] /= float(C);
      for (int64_t c = 0; c < C; ++c)
#pragma omp simd
        for (int64_t p = 0; p < len; ++p) {
          const float d = xb[c * HW + p] - mean[p];
          inv[p] += d * d;
        }
      for (int64_t p = 0; p < len; ++p)
        inv[p] = float(1 / std::sqrt(double(inv[p]) / double(C) + eps));
      for (int64_t c = 0; c < C; ++c) {
        const float gc = g[c], bc = b[c];
#pragma omp simd
        for (int64_t p = 0; p < len; ++p)
          yb[c * HW + p] = (xb[c * HW + p] - mean[p]) * inv[p] * gc + bc;
      }
    }
  markHostWritten(y);
  roundResult(knob.precision, y);
}

// --- Softmax ----------------------------------------------------------------

void runSoftmax(const Tensor* x, const KnobSpec& knob, Tensor* y) {
  applyThreads();
  Dims4 xd = dims4(x);
  HPVM_ASSERT(numElems(y) == numElems(x),
              fmt::format("softmax output {} differs from input {}", dimsStr(y),
                          dimsStr(x)));
  // A few classes per image: the reference loop on NCHW host data is as
  // fast as a primitive and sums in double as HPVM does.
  const float* xp = hostData(x);
  allocHost(y);
  ref::softmax(xp, xd[0], xd[1] * xd[2] * xd[3], y->impl->host);
  markHostWritten(y);
  roundResult(knob.precision, y);
}

namespace {

/// y = softmax (log-softmax when \p log) over each run of C / \p groups
/// consecutive channels of each pixel of x. On NCHW host data, N x C x HW
/// in G groups is (N * G) x (C / G) x HW: images of C / G channels.
void groupedSoftmax(const Tensor* x, int64_t groups, bool log,
                    const KnobSpec& knob, Tensor* y) {
  applyThreads();
  const Dims4 d = dims4(x);
  HPVM_ASSERT(dims4(y) == d, fmt::format("channel softmax output {} differs "
                                         "from input {}",
                                         dimsStr(y), dimsStr(x)));
  HPVM_ASSERT(groups >= 1 && d[1] % groups == 0,
              fmt::format("softmax groups {} do not divide the channels of {}",
                          groups, dimsStr(x)));
  const int64_t N = d[0] * groups, C = d[1] / groups, HW = d[2] * d[3];
  const float* xp = hostData(x);
  allocHost(y);
  float* yp = y->impl->host;
  // Runs of up to kRun pixels of one image, the channels walked three
  // times (maximum, sum of exponentials, result), each pass contiguous
  // along the pixels and vectorized (expNonPositive: libm's expf would be
  // a call per value). In place is safe: a run reads its pixels before it
  // writes them, each pixel's value before its result.
  constexpr int64_t kRun = 64;
  const int64_t runs = (HW + kRun - 1) / kRun;
#pragma omp parallel for collapse(2)                                           \
    schedule(static) if (N * C * HW >= kParallelMinElems)
  for (int64_t b = 0; b < N; ++b)
    for (int64_t r = 0; r < runs; ++r) {
      const int64_t p0 = r * kRun, n = std::min(kRun, HW - p0);
      const float* xb = xp + b * C * HW + p0;
      float* yb = yp + b * C * HW + p0;
      float mx[kRun], sum[kRun];
      std::fill(mx, mx + n, -std::numeric_limits<float>::infinity());
      std::fill(sum, sum + n, 0.f);
      for (int64_t c = 0; c < C; ++c) {
        const float* xc = xb + c * HW;
#pragma omp simd
        for (int64_t p = 0; p < n; ++p)
          mx[p] = std::max(mx[p], xc[p]);
      }
      for (int64_t c = 0; c < C; ++c) {
        const float* xc = xb + c * HW;
        float* yc = yb + c * HW;
        if (log) {
#pragma omp simd
          for (int64_t p = 0; p < n; ++p)
            sum[p] += expNonPositive(xc[p] - mx[p]);
        } else {
#pragma omp simd
          for (int64_t p = 0; p < n; ++p) {
            const float e = expNonPositive(xc[p] - mx[p]);
            sum[p] += e;
            yc[p] = e;
          }
        }
      }
      if (log) {
        for (int64_t p = 0; p < n; ++p)
          sum[p] = mx[p] + std::log(sum[p]);
        for (int64_t c = 0; c < C; ++c) {
          const float* xc = xb + c * HW;
          float* yc = yb + c * HW;
#pragma omp simd
          for (int64_t p = 0; p < n; ++p)
            yc[p] = xc[p] - sum[p];
        }
      } else {
#pragma omp simd
        for (int64_t p = 0; p < n; ++p)
          sum[p] = 1.f / sum[p];
        for (int64_t c = 0; c < C; ++c) {
          float* yc = yb + c * HW;
#pragma omp simd
          for (int64_t p = 0; p < n; ++p)
            yc[p] *= sum[p];
        }
      }
    }
  markHostWritten(y);
  roundResult(knob.precision, y);
}

} // namespace

void runChannelSoftmax(const Tensor* x, bool log, const KnobSpec& knob,
                       Tensor* y) {
  groupedSoftmax(x, 1, log, knob, y);
}

void runGroupSoftmax(const Tensor* x, int64_t groups, const KnobSpec& knob,
                     Tensor* y) {
  groupedSoftmax(x, groups, false, knob, y);
}

} // namespace hpvm::rt
