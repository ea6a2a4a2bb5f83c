// Attention.cpp - self-attention layers of vision transformers: global
// multi-head attention as oneDNN matmuls, and (shifted) window attention
// of Swin in L1-resident blocks.
#include "base/Errors.h"
#include "kernels/FastExp.h"
#include "kernels/Kernels.h"
#include "kernels/Numerics.h"
#include "kernels/Primitives.h"
#include "kernels/TensorImpl.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace hpvm::rt {
using namespace kern;

namespace {

/// runAttention(), with \p bias (heads x T x T, query-major: [h][q][k]; or
/// null) added to the scaled scores before the softmax.
void attention(const Tensor* qkv, int64_t heads, const float* bias,
               const KnobSpec& knob, Tensor* y) {
  applyThreads();
  const Dims4 xd = dims4(qkv);
  const int64_t N = xd[0], C = xd[1] / 3, T = xd[2] * xd[3];
  HPVM_ASSERT(heads >= 1 && xd[1] == 3 * C && C % heads == 0 &&
                  numElems(y) == N * C * T,
              fmt::format("attention shapes wrong: qkv {} with {} heads, y {}",
                          dimsStr(qkv), heads, dimsStr(y)));
  const int64_t D = C / heads;
  // Channel-first tokens hold each head's queries, keys and values
  // transposed: token t, channel d of head h at [b, h*D + d, t]. As
  // matrices per (image, head): Q^T, K^T and V^T, D x T row-major, image
  // stride 3C*T, head stride D*T.
  const dims qkvStrides = {3 * C * T, D * T, T, 1};
  const dnnl::memory::desc transposed({N, heads, D, T}, dt::f32, qkvStrides);
  const dnnl::memory::desc rowsQ({N, heads, T, D}, dt::f32,
                                 dims{3 * C * T, D * T, 1, T});
  const dnnl::memory::desc scores({N, heads, T, T}, dt::f32, tag::abcd);
  const dnnl::memory::desc scoresT({N, heads, T, T}, dt::f32,
                                   dims{heads * T * T, T * T, 1, T});
  const dnnl::memory::desc out({N, heads, D, T}, dt::f32, tag::abcd);
  const std::string key =
      fmt::format(FMT_COMPILE("attn|{}|{}|{}|{}"), N, C, T, heads);
  // Step 1: S = Q K^T / sqrt(D), a batched matmul of Q (Q^T read
  // transposed) by K^T, the scale an output scale. (The bias is added
  // after it: as a binary post-op broadcast over the images, oneDNN 2.6
  // takes its reference matmul, 700 times slower.)
  const Prim& qk = cachedPrim(key + "|qk", [&] {
    dnnl::matmul::desc desc(rowsQ, transposed, scores);
    dnnl::primitive_attr attr;
    attr.set_output_scales(0, {float(1 / std::sqrt(double(D)))});
    dnnl::matmul::primitive_desc pd(desc, attr, engine());
    return Prim{dnnl::matmul(pd), rowsQ, transposed, scores};
  });
  // Step 2: softmax over each row of S, in place.
  const Prim& soft = cachedPrim(key + "|softmax", [&] {
    dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_inference, scores,
                                     3);
    dnnl::softmax_forward::primitive_desc pd(desc, engine());
    return Prim{dnnl::softmax_forward(pd), scores, {}, scores};
  });
  // Step 3: the output O = P V, computed transposed as O^T = V^T P^T: it
  // is D x T per (image, head), channel-first tokens again.
  const Prim& pv = cachedPrim(key + "|pv", [&] {
    dnnl::matmul::desc desc(transposed, scoresT, out);
    dnnl::matmul::primitive_desc pd(desc, engine());
    return Prim{dnnl::matmul(pd), transposed, scoresT, out};
  });
  // Memories: queries, keys and values at channel offsets 0, C and 2C of
  // qkv's host data; S in a pooled scratch buffer; O^T y's host buffer.
  float* base = const_cast<float*>(hostData(qkv));
  PoolBuffer scratch(static_cast<size_t>(N * heads * T * T) * sizeof(float));
  allocHost(y);
  dnnl::memory q(rowsQ, engine(), base);
  dnnl::memory k(transposed, engine(), base + C * T);
  dnnl::memory v(transposed, engine(), base + 2 * C * T);
  dnnl::memory s(scores, engine(), scratch.get());
  dnnl::memory sT(scoresT, engine(), scratch.get());
  dnnl::memory o(out, engine(), y->impl->host);
  qk.prim.execute(
      stream(), {{DNNL_ARG_SRC, q}, {DNNL_ARG_WEIGHTS, k}, {DNNL_ARG_DST, s}});
  if (bias) {
    stream().wait();
    const int64_t planes = N * heads, plane = T * T;
    float* sp = static_cast<float*>(scratch.get());
#pragma omp parallel for schedule(static) if (planes * plane >=                \
                                              kParallelMinElems)
    for (int64_t i = 0; i < planes; ++i) {
      float* row = sp + i * plane;
      const float* b = bias + (i % heads) * plane;
#pragma omp simd
      for (int64_t j = 0; j < plane; ++j)
        row[j] += b[j];
    }
  }
  soft.prim.execute(stream(), {{DNNL_ARG_SRC, s}, {DNNL_ARG_DST, s}});
  pv.prim.execute(
      stream(), {{DNNL_ARG_SRC, v}, {DNNL_ARG_WEIGHTS, sT}, {DNNL_ARG_DST, o}});
  stream().wait();
  markHostWritten(y);
  roundResult(knob.precision, y);
}

} // namespace

void runAttention(const Tensor* qkv, int64_t heads, const KnobSpec& knob,
                  Tensor* y) {
  attention(qkv, heads, nullptr, knob, y);
}

// GCC would turn the short run copies below into memcpy calls, each
// costlier than its copy.
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif
void runWindowAttention(const OpCall& c) {
  applyThreads();
  const Tensor *qkv = c.in[0], *bias = c.in[1], *mask = c.in[2];
  const Dims4 xd = dims4(qkv);
  const int64_t wh = int64_t(c.scalars[0]), ww = int64_t(c.scalars[1]),
                heads = int64_t(c.scalars[2]), sh = int64_t(c.scalars[3]),
                sw = int64_t(c.scalars[4]);
  const int64_t N = xd[0], C = xd[1] / 3, H = xd[2], W = xd[3], HW = H * W;
  const int64_t T = wh * ww, D = C / heads, across = W / ww,
                windows = (H / wh) * across, masks = numElems(mask) / (T * T);
  HPVM_ASSERT(
      xd[1] == 3 * C && C % heads == 0 && H % wh == 0 && W % ww == 0 &&
          numElems(bias) == heads * T * T && (masks == 1 || masks == windows) &&
          numElems(c.out) == N * C * HW,
      fmt::format("window attention shapes wrong: qkv {}, bias {}, "
                  "mask {}, y {}",
                  dimsStr(qkv), dimsStr(bias), dimsStr(mask), dimsStr(c.out)));
  const float* xp = hostData(qkv);
  const float* bp = hostData(bias);
  const float* mp = hostData(mask);
  if (windows == 1 && sh == 0 && sw == 0 && masks == 1) {
    // One window of all the tokens, unshifted (global attention with a
    // bias: BEiT's, LeViT's, a mask): oneDNN's matmuls as
    // runAttention(), bias plus mask made query-major for the scores.
    std::vector<float> sum(static_cast<size_t>(heads * T * T));
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t k = 0; k < T; ++k)
        for (int64_t q = 0; q < T; ++q)
          sum[size_t((h * T + q) * T + k)] =
              bp[(h * T + k) * T + q] + mp[k * T + q];
    attention(qkv, heads, sum.data(), c.knob, c.out);
    return;
  }
  allocHost(c.out);
  float* yp = c.out->impl->host;
  const float scale = float(1 / std::sqrt(double(D)));
  // KB: 4 vectors of 16 floats, the queries a loop takes at a time: 4
  // independent FMA chains, one broadcast per 4 FMAs. Token rows are
  // padded with zeros to whole blocks (Tp).
  constexpr int64_t KB = 64;
  const int64_t Tp = (T + KB - 1) / KB * KB;
  struct Run {
    int64_t token, pixel, length;
  };
  // One (image, window, head) per iteration, in buffers that stay in L1.
  // Channel-first data holds a head's queries, keys and values transposed
  // (channel d, token t at plane d, pixel of t): copied run by run (a
  // window row is one run of pixels, two where the roll wraps it) into
  // D x Tp matrices. The scores transposed, S^T = K^T Q scaled plus bias
  // and mask (T x Tp: key s, query t; bias and mask are key-major too),
  // so that every step runs along the queries: S^T a key and KB queries at
  // a time, the softmax over the keys of each query (maxima, exponentials
  // and sums of rows), and O^T = V P^T, whose rows are runs of the output
  // planes again.
#pragma omp parallel
  {
    std::vector<float> buf(static_cast<size_t>(4 * D * Tp + T * Tp + 2 * Tp),
                           0.f);
    float *qt = buf.data(), *kt = qt + D * Tp, *vt = kt + D * Tp,
          *ot = vt + D * Tp, *st = ot + D * Tp, *mx = st + T * Tp,
          *inv = mx + Tp;
    std::vector<Run> runs;
#pragma omp for collapse(3) schedule(static)
    for (int64_t b = 0; b < N; ++b)
      for (int64_t w = 0; w < windows; ++w)
        for (int64_t h = 0; h < heads; ++h) {
          const int64_t y0 = (w / across) * wh + sh,
                        x0 = (w % across) * ww + sw;
          runs.clear();
          for (int64_t r = 0; r < wh; ++r) {
            const int64_t y = (y0 + r) % H, x = x0 % W;
            const int64_t first = std::min(ww, W - x);
            runs.push_back({r * ww, y * W + x, first});
            if (first < ww)
              runs.push_back({r * ww + first, y * W, ww - first});
          }
          const float* q = xp + (b * 3 * C + h * D) * HW;
          const float* k = q + C * HW;
          const float* v = k + C * HW;
          for (int64_t d = 0; d < D; ++d)
            for (const Run& run : runs) {
              const float* qs = q + d * HW + run.pixel;
              const float* ks = k + d * HW + run.pixel;
              const float* vs = v + d * HW + run.pixel;
              float* qd = qt + d * Tp + run.token;
              float* kd = kt + d * Tp + run.token;
              float* vd = vt + d * Tp + run.token;
#pragma omp simd
              for (int64_t l = 0; l < run.length; ++l) {
                qd[l] = qs[l];
                kd[l] = ks[l];
                vd[l] = vs[l];
              }
            }
          const float* bh = bp + h * T * T;
          const float* mw = mp + (masks == 1 ? 0 : w) * T * T;
          for (int64_t s2 = 0; s2 < T; ++s2)
            for (int64_t t0 = 0; t0 < Tp; t0 += KB) {
              float acc[KB];
              const int64_t n = std::min(KB, T - t0);
#pragma omp simd
              for (int64_t l = 0; l < KB; ++l)
                acc[l] =
                    l < n ? bh[s2 * T + t0 + l] + mw[s2 * T + t0 + l] : 0.f;
              for (int64_t d = 0; d < D; ++d) {
                const float kd = kt[d * Tp + s2] * scale;
                const float* qd = qt + d * Tp + t0;
#pragma omp simd
                for (int64_t l = 0; l < KB; ++l)
                  acc[l] += kd * qd[l];
              }
#pragma omp simd
              for (int64_t l = 0; l < KB; ++l)
                st[s2 * Tp + t0 + l] = acc[l];
            }
#pragma omp simd
          for (int64_t t = 0; t < Tp; ++t)
            mx[t] = st[t];
          for (int64_t s2 = 1; s2 < T; ++s2)
#pragma omp simd
            for (int64_t t = 0; t < Tp; ++t)
              mx[t] = std::max(mx[t], st[s2 * Tp + t]);
#pragma omp simd
          for (int64_t t = 0; t < Tp; ++t)
            inv[t] = 0;
          for (int64_t s2 = 0; s2 < T; ++s2) {
            float* __restrict e = st + s2 * Tp;
            const float* __restrict m = mx;
            float* __restrict sum = inv;
#pragma omp simd
            for (int64_t t = 0; t < Tp; ++t) {
              e[t] = expNonPositive(e[t] - m[t]);
              sum[t] += e[t];
            }
          }
#pragma omp simd
          for (int64_t t = 0; t < Tp; ++t)
            inv[t] = 1 / inv[t];
          for (int64_t d = 0; d < D; ++d)
            for (int64_t t0 = 0; t0 < Tp; t0 += KB) {
              float acc[KB] = {};
              for (int64_t s2 = 0; s2 < T; ++s2) {
                const float vd = vt[d * Tp + s2];
                const float* ps = st + s2 * Tp + t0;
#pragma omp simd
                for (int64_t l = 0; l < KB; ++l)
                  acc[l] += vd * ps[l];
              }
#pragma omp simd
              for (int64_t l = 0; l < KB; ++l)
                ot[d * Tp + t0 + l] = acc[l] * inv[t0 + l];
            }
          float* out = yp + (b * C + h * D) * HW;
          for (int64_t d = 0; d < D; ++d)
            for (const Run& run : runs) {
              float* dst = out + d * HW + run.pixel;
              const float* src = ot + d * Tp + run.token;
#pragma omp simd
              for (int64_t l = 0; l < run.length; ++l)
                dst[l] = src[l];
            }
        }
  }
  markHostWritten(c.out);
  roundResult(c.knob.precision, c.out);
}

} // namespace hpvm::rt
