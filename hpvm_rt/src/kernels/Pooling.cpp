// Pooling.cpp - runPool: max and average pooling in the input's layout and
// data type (an int8 layer's u8 or s8 result, a bf16 one): our loops for
// fp32 blocked by 8 or 16 channels and for whole-plane means on the host,
// oneDNN for the rest.
#include "base/Errors.h"
#include "kernels/Kernels.h"
#include "kernels/Numerics.h"
#include "kernels/Primitives.h"
#include "kernels/TensorImpl.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string>

namespace hpvm::rt {
using namespace kern;

namespace {

/// y's \p planes values = the means of x's \p planes planes of \p size
/// floats each (summed in double).
void globalMean(const float* x, int64_t planes, int64_t size, Tensor* y) {
  allocHost(y);
  float* yp = y->impl->host;
#pragma omp parallel for schedule(static) if (planes * size >=                 \
                                              kParallelMinElems)
  for (int64_t i = 0; i < planes; ++i) {
    const float* xi = x + i * size;
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < size; ++j)
      sum += double(xi[j]);
    yp[i] = float(sum / double(size));
  }
  markHostWritten(y);
}

/// Max or average pooling of fp32 \p x held with its channels in blocks of
/// B (nChwBc, a convolution's output) into \p y in the same layout, the B
/// channels of a block the vector (oneDNN 2.6's own kernel for this is 3-4
/// times slower on AVX2). Windows are clipped to the image; an average
/// divides by the whole window (padding included) or by its part inside.
template <int64_t B>
void poolBlocked(const float* x, const Dims4& xd, const PoolArgs& a, int64_t Ho,
                 int64_t Wo, float* y) {
  const int64_t N = xd[0], CB = (xd[1] + B - 1) / B, H = xd[2], W = xd[3];
  const bool max = a.kind == PoolArgs::Max;
#pragma omp parallel for collapse(3)                                           \
    schedule(static) if (N * CB * H * W * B >= kParallelMinElems)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t cb = 0; cb < CB; ++cb)
      for (int64_t oh = 0; oh < Ho; ++oh) {
        const float* plane = x + (n * CB + cb) * H * W * B;
        float* out = y + ((n * CB + cb) * Ho + oh) * Wo * B;
        const int64_t h0 = oh * a.strideH - a.padH;
        const int64_t hs = std::max<int64_t>(h0, 0),
                      he = std::min<int64_t>(h0 + a.kh, H);
        for (int64_t ow = 0; ow < Wo; ++ow) {
          const int64_t w0 = ow * a.strideW - a.padW;
          const int64_t ws = std::max<int64_t>(w0, 0),
                        we = std::min<int64_t>(w0 + a.kw, W);
          float acc[B];
          std::fill(acc, acc + B,
                    max ? -std::numeric_limits<float>::infinity() : 0.f);
          for (int64_t h = hs; h < he; ++h)
            for (int64_t w = ws; w < we; ++w) {
              const float* v = plane + (h * W + w) * B;
              if (max) {
#pragma omp simd
                for (int64_t l = 0; l < B; ++l)
                  acc[l] = std::max(acc[l], v[l]);
              } else {
#pragma omp simd
                for (int64_t l = 0; l < B; ++l)
                  acc[l] += v[l];
              }
            }
          const float scale =
              max ? 1.f
                  : 1.f / float(a.excludePad ? (he - hs) * (we - ws)
                                             : int64_t(a.kh) * a.kw);
#pragma omp simd
          for (int64_t l = 0; l < B; ++l)
            out[ow * B + l] = max ? acc[l] : acc[l] * scale;
        }
      }
}

} // namespace

void runPool(const Tensor* x, const PoolArgs& a, const KnobSpec& knob,
             Tensor* y) {
  applyThreads();
  HPVM_ASSERT(x != y, "pool output must not alias its input");
  Dims4 xd = dims4(x), yd = dims4(y);
  HPVM_ASSERT(a.kh >= 1 && a.kw >= 1 && a.strideH >= 1 && a.strideW >= 1 &&
                  a.padH >= 0 && a.padW >= 0 && a.bottom() >= 0 &&
                  a.right() >= 0 && xd[2] + a.padH + a.bottom() >= a.kh &&
                  xd[3] + a.padW + a.right() >= a.kw && a.padH < a.kh &&
                  a.padW < a.kw && a.bottom() < a.kh && a.right() < a.kw,
              fmt::format("bad pool arguments for x {}: window {}x{} pad "
                          "{}x{} (after {}x{}) stride {}x{}",
                          dimsStr(x), a.kh, a.kw, a.padH, a.padW, a.bottom(),
                          a.right(), a.strideH, a.strideW));
  int64_t Ho = 1 + (xd[2] + a.padH + a.bottom() - a.kh) / a.strideH;
  int64_t Wo = 1 + (xd[3] + a.padW + a.right() - a.kw) / a.strideW;
  HPVM_ASSERT(yd[0] == xd[0] && yd[1] == xd[1] && yd[2] == Ho && yd[3] == Wo,
              fmt::format("pool output dims wrong: x {}, y {}", dimsStr(x),
                          dimsStr(y)));
  // The mean of each whole plane of fp32 values already on the host
  // (a mean over tokens): oneDNN would take its reference kernel for plain
  // NCHW; a sum along each contiguous plane is memory speed.
  if (a.kind == PoolArgs::Avg && Ho == 1 && Wo == 1 && a.kh == xd[2] &&
      a.kw == xd[3] && a.padH == 0 && a.padW == 0 && a.bottom() == 0 &&
      a.right() == 0 && implOf(x).hostValid && implOf(x).memScale == 1.f) {
    globalMean(hostData(x), xd[0] * xd[1], xd[2] * xd[3], y);
    roundResult(knob.precision, y);
    return;
  }
  // fp32 blocked by 8 or 16 channels: our own loop (see poolBlocked).
  if (const int64_t block = heldChannelBlock(x);
      block != 0 && !implOf(x).memBorrowed) {
    const float* xb =
        static_cast<const float*>(implOf(x).mem.get_data_handle());
    float* yb = static_cast<float*>(
        outputMemory(y, channelBlockedDesc(y, block)).get_data_handle());
    if (block == 16)
      poolBlocked<16>(xb, xd, a, Ho, Wo, yb);
    else
      poolBlocked<8>(xb, xd, a, Ho, Wo, yb);
    keepOrRound(a.kind == PoolArgs::Max && alreadyRounded(x, knob.precision),
                knob.precision, y);
    return;
  }
  // oneDNN's padding for the last window: the output size may leave the
  // right/bottom pad partly unused, which oneDNN needs stated exactly.
  int64_t padBottom = (Ho - 1) * a.strideH + a.kh - xd[2] - a.padH;
  int64_t padRight = (Wo - 1) * a.strideW + a.kw - xd[3] - a.padW;
  // A max pool takes an int8 layer's u8 or s8 result (or a bf16 one) as it is
  // (the maximum of rounded values is the rounded maximum) and hands it on.
  dnnl::memory src =
      a.kind == PoolArgs::Max ? storedMemory(x) : currentMemory(x);
  const dt type = src.get_desc().data_type();
  HPVM_ASSERT(type == dt::f32 || type == dt::u8 || type == dt::s8 ||
                  type == dt::bf16,
              "pool input must be f32, u8, s8 or bf16");
  dnnl::memory::desc dstAny({yd[0], yd[1], yd[2], yd[3]}, type, tag::any);
  auto alg = a.kind == PoolArgs::Max ? dnnl::algorithm::pooling_max
             : a.excludePad ? dnnl::algorithm::pooling_avg_exclude_padding
                            : dnnl::algorithm::pooling_avg_include_padding;
  std::string key = "pool";
  appendKey(key, descKey(src.get_desc()), alg, a.kh, a.kw, a.padH, a.padW,
            padBottom, padRight, a.strideH, a.strideW);
  const Prim& p = cachedPrim(key, [&] {
    dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_inference, alg,
                                     src.get_desc(), dstAny,
                                     {a.strideH, a.strideW}, {a.kh, a.kw},
                                     {a.padH, a.padW}, {padBottom, padRight});
    dnnl::pooling_forward::primitive_desc pd(desc, engine());
    return Prim{dnnl::pooling_forward(pd), pd.src_desc(), {}, pd.dst_desc()};
  });
  const float scale = implOf(x).memScale;
  // The maximum of values rounded to the knob's precision is rounded.
  const bool rounded =
      a.kind == PoolArgs::Max && alreadyRounded(x, knob.precision);
  dnnl::memory dst = outputMemory(y, p.dst);
  p.prim.execute(stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  stream().wait();
  if (type != dt::f32) {
    implOf(y).memScale = scale;
    return;
  }
  keepOrRound(rounded, knob.precision, y);
}

} // namespace hpvm::rt
