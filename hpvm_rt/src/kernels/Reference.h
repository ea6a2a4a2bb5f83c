// Reference.h - reference kernels: plain loops over NCHW float32 arrays,
// HPVM's semantics (reference section 2). They are the test oracle of every
// fast and approximate variant and are never removed. Header-only: an
// operator's reference is written once, here (declared where defined).
//
// Dimension names: N batch, C input channels, H/W input height/width, K
// output channels (filters), KH/KW filter height/width, Ho/Wo output
// height/width, G groups, M rows and D columns of a matrix.
#ifndef HPVM_RT_KERNELS_REFERENCE_H
#define HPVM_RT_KERNELS_REFERENCE_H

#include "hpvm_rt/Resize.h"
#include "kernels/Kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace hpvm::rt::ref {

inline void conv2d(const float* x, int64_t N, int64_t C, int64_t H, int64_t W,
                   const float* w, int64_t K, int64_t KH, int64_t KW,
                   const ConvArgs& a, float* y) {
  const int64_t G = a.groups;
  const int64_t Cg = C / G, Kg = K / G;
  const int64_t Ho = 1 + (H + 2 * a.padH - a.spanH(KH)) / a.strideH;
  const int64_t Wo = 1 + (W + 2 * a.padW - a.spanW(KW)) / a.strideW;
#pragma omp parallel for collapse(2) schedule(static)
  // Loop over images and output channels.
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      const int64_t g = k / Kg;
      const float* wk = w + k * Cg * KH * KW;
      float* yk = y + (n * K + k) * Ho * Wo;
      // Loop over output rows and columns.
      for (int64_t oh = 0; oh < Ho; ++oh)
        for (int64_t ow = 0; ow < Wo; ++ow) {
          float acc = 0.f;
          // Loop over the group's input channels and the filter window;
          // out-of-range input positions are zero padding.
          for (int64_t c = 0; c < Cg; ++c) {
            const float* xc = x + (n * C + g * Cg + c) * H * W;
            for (int64_t i = 0; i < KH; ++i) {
              int64_t ih = oh * a.strideH - a.padH + i * a.dilH;
              if (ih < 0 || ih >= H)
                continue;
              for (int64_t j = 0; j < KW; ++j) {
                int64_t iw = ow * a.strideW - a.padW + j * a.dilW;
                if (iw < 0 || iw >= W)
                  continue;
                acc += xc[ih * W + iw] * wk[(c * KH + i) * KW + j];
              }
            }
          }
          yk[oh * Wo + ow] = acc;
        }
    }
}

/// conv_transpose: every input value scattered through the taps (filter
/// C x K/G x KH x KW), the outputs the pads remove dropped.
inline void convTranspose(const float* x, int64_t N, int64_t C, int64_t H,
                          int64_t W, const float* w, int64_t Kg, int64_t KH,
                          int64_t KW, const TransposeArgs& a, float* y) {
  const int64_t G = a.groups, K = Kg * G, Cg = C / G;
  const int64_t Ho = a.outH(H, KH), Wo = a.outW(W, KW);
  std::fill(y, y + N * K * Ho * Wo, 0.f);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t v = 0; v < W; ++v) {
          const float xv = x[((n * C + c) * H + h) * W + v];
          for (int64_t k = 0; k < Kg; ++k)
            for (int64_t r = 0; r < KH; ++r)
              for (int64_t t = 0; t < KW; ++t) {
                const int64_t i = h * a.strideH - a.padTop + r * a.dilH;
                const int64_t j = v * a.strideW - a.padLeft + t * a.dilW;
                if (i < 0 || i >= Ho || j < 0 || j >= Wo)
                  continue;
                const int64_t ko = c / Cg * Kg + k;
                y[((n * K + ko) * Ho + i) * Wo + j] +=
                    xv * w[((c * Kg + k) * KH + r) * KW + t];
              }
        }
}

inline void dense(const float* x, int64_t M, int64_t K, const float* w,
                  int64_t N, float* y) {
#pragma omp parallel for schedule(static)
  // Loop over rows of x; y[m, :] = sum_l x[m, l] * w[l, :].
  for (int64_t m = 0; m < M; ++m) {
    float* ym = y + m * N;
    std::fill(ym, ym + N, 0.f);
    for (int64_t l = 0; l < K; ++l) {
      float xv = x[m * K + l];
      const float* wl = w + l * N;
      for (int64_t n = 0; n < N; ++n)
        ym[n] += xv * wl[n];
    }
  }
}

inline void pool2d(const float* x, int64_t N, int64_t C, int64_t H, int64_t W,
                   const PoolArgs& a, float* y) {
  const int64_t Ho = 1 + (H + a.padH + a.bottom() - a.kh) / a.strideH;
  const int64_t Wo = 1 + (W + a.padW + a.right() - a.kw) / a.strideW;
  const float area = static_cast<float>(a.kh * a.kw);
#pragma omp parallel for schedule(static)
  // Loop over (image, channel) planes.
  for (int64_t nc = 0; nc < N * C; ++nc) {
    const float* xp = x + nc * H * W;
    float* yp = y + nc * Ho * Wo;
    // Loop over output positions, then the window; max skips out-of-range
    // positions, mean counts them as zeros (divides by the full area).
    for (int64_t oh = 0; oh < Ho; ++oh)
      for (int64_t ow = 0; ow < Wo; ++ow) {
        float mx = -std::numeric_limits<float>::infinity();
        float sum = 0.f;
        int64_t inside = 0;
        for (int64_t i = 0; i < a.kh; ++i) {
          int64_t ih = oh * a.strideH - a.padH + i;
          if (ih < 0 || ih >= H)
            continue;
          for (int64_t j = 0; j < a.kw; ++j) {
            int64_t iw = ow * a.strideW - a.padW + j;
            if (iw < 0 || iw >= W)
              continue;
            float v = xp[ih * W + iw];
            mx = std::max(mx, v);
            sum += v;
            ++inside;
          }
        }
        yp[oh * Wo + ow] =
            a.kind == PoolArgs::Max
                ? mx
                : sum / (a.excludePad ? static_cast<float>(inside) : area);
      }
  }
}

inline void batchNorm(const float* x, int64_t N, int64_t C, int64_t HW,
                      const float* gamma, const float* beta, const float* mean,
                      const float* var, double eps, float* y) {
#pragma omp parallel for collapse(2) schedule(static)
  // Loop over images and channels; sqrt(eps + var) is taken in double as
  // HPVM does, the rest in float.
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      float den = static_cast<float>(std::sqrt(eps + var[c]));
      const float* xp = x + (n * C + c) * HW;
      float* yp = y + (n * C + c) * HW;
      for (int64_t i = 0; i < HW; ++i)
        yp[i] = beta[c] + gamma[c] * (xp[i] - mean[c]) / den;
    }
}

inline void add(const float* a, const float* b, int64_t N, int64_t C,
                int64_t HW, bool perChannel, float* y) {
#pragma omp parallel for collapse(2) schedule(static)
  // Loop over (image, channel) planes; b is indexed by channel only when
  // broadcast per channel.
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      int64_t off = (n * C + c) * HW;
      for (int64_t i = 0; i < HW; ++i)
        y[off + i] = a[off + i] + (perChannel ? b[c] : b[off + i]);
    }
}

/// y (a's dims) = a * b, b's dims each a's or 1 (NumPy broadcast).
inline void multiply(const float* a, const int64_t* ad, const float* b,
                     const int64_t* bd, float* y) {
  auto at = [&](int64_t i, int d) { return bd[d] == 1 ? 0 : i; };
  for (int64_t n = 0; n < ad[0]; ++n)
    for (int64_t c = 0; c < ad[1]; ++c)
      for (int64_t h = 0; h < ad[2]; ++h)
        for (int64_t w = 0; w < ad[3]; ++w) {
          const int64_t i = ((n * ad[1] + c) * ad[2] + h) * ad[3] + w;
          const int64_t j =
              ((at(n, 0) * bd[1] + at(c, 1)) * bd[2] + at(h, 2)) * bd[3] +
              at(w, 3);
          y[i] = a[i] * b[j];
        }
}

/// y = act(x); lo and hi are the activation's parameters (PostOps::actLo).
inline void act(const float* x, int64_t n, Act act, float lo, float hi,
                float* y) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    switch (act) {
    case Act::None:
      break;
    case Act::Relu:
      v = v < 0.f ? 0.f : v;
      break;
    case Act::Clip:
      v = v < lo ? lo : (v > hi ? hi : v);
      break;
    case Act::Tanh:
      v = std::tanh(v);
      break;
    case Act::Sigmoid:
      v = 1.f / (1.f + std::exp(-v));
      break;
    case Act::HardSigmoid:
      v = hardSigmoid(v, lo, hi);
      break;
    case Act::HardSwish:
      v = hardSwish(v);
      break;
    case Act::Gelu:
      v = gelu(v);
      break;
    case Act::LeakyRelu:
      v = v > 0.f ? v : v * lo;
      break;
    case Act::Silu:
      v = silu(v);
      break;
    }
    y[i] = v;
  }
}

inline void softmax(const float* x, int64_t N, int64_t D, float* y) {
  // A row: subtract the row max, exponentiate, sum in double, divide.
  auto row = [&](int64_t n) {
    const float* xr = x + n * D;
    float* yr = y + n * D;
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t d = 0; d < D; ++d)
      mx = std::max(mx, xr[d]);
    double sum = 0.0;
    for (int64_t d = 0; d < D; ++d) {
      yr[d] = std::exp(xr[d] - mx);
      sum += yr[d];
    }
    for (int64_t d = 0; d < D; ++d)
      yr[d] = static_cast<float>(yr[d] / sum);
  };
  if (N * D < kParallelMinElems) {
    for (int64_t n = 0; n < N; ++n)
      row(n);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n)
    row(n);
}

/// Layer normalization over C of x (N x C x HW), per pixel.
inline void layerNorm(const float* x, int64_t N, int64_t C, int64_t HW,
                      const float* gamma, const float* beta, double eps,
                      float* y) {
  // Per pixel: the mean, then the mean squared deviation, in double.
  for (int64_t b = 0; b < N; ++b)
    for (int64_t p = 0; p < HW; ++p) {
      const float* xp = x + b * C * HW + p;
      double mean = 0, var = 0;
      for (int64_t c = 0; c < C; ++c)
        mean += xp[c * HW];
      mean /= double(C);
      for (int64_t c = 0; c < C; ++c)
        var += (xp[c * HW] - mean) * (xp[c * HW] - mean);
      var /= double(C);
      const double inv = 1 / std::sqrt(var + eps);
      for (int64_t c = 0; c < C; ++c)
        y[b * C * HW + c * HW + p] =
            float((xp[c * HW] - mean) * inv * gamma[c] + beta[c]);
    }
}

/// y (N x C x HW) = softmax over the C channels of each pixel, in double;
/// log-softmax when \p log (runChannelSoftmax). With \p groups (dividing
/// C), over each run of C / groups consecutive channels separately
/// (runGroupSoftmax).
inline void channelSoftmax(const float* x, int64_t N, int64_t C, int64_t HW,
                           bool log, float* y, int64_t groups = 1) {
  const int64_t K = C / groups;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t p = 0; p < HW; ++p) {
        const float* xp = x + (b * C + g * K) * HW + p;
        float* yp = y + (b * C + g * K) * HW + p;
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int64_t c = 0; c < K; ++c)
          mx = std::max(mx, double(xp[c * HW]));
        for (int64_t c = 0; c < K; ++c)
          sum += std::exp(double(xp[c * HW]) - mx);
        for (int64_t c = 0; c < K; ++c)
          yp[c * HW] = float(log ? double(xp[c * HW]) - mx - std::log(sum)
                                 : std::exp(double(xp[c * HW]) - mx) / sum);
      }
}

/// y (N x HW x C) = x (N x C x HW) with the channels last
/// (runChannelsLast); channelsLast(x, N, HW, C, y) is the inverse
/// (runChannelsFirst).
inline void channelsLast(const float* x, int64_t N, int64_t C, int64_t HW,
                         float* y) {
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < HW; ++p)
        y[(b * HW + p) * C + c] = x[(b * C + c) * HW + p];
}

/// y (N x C x HW) = x's channels shuffled in \p groups (runChannelShuffle).
inline void channelShuffle(const float* x, int64_t N, int64_t C, int64_t HW,
                           int64_t groups, float* y) {
  const int64_t per = C / groups;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t i = 0; i < groups; ++i)
      for (int64_t j = 0; j < per; ++j)
        std::copy_n(x + (b * C + i * per + j) * HW, HW,
                    y + (b * C + j * groups + i) * HW);
}

/// y = parts[0..n) along dim 1; part i is N x channels[i] x HW.
inline void concat(const float* const* parts, const int64_t* channels, int n,
                   int64_t N, int64_t HW, float* y) {
  int64_t C = 0;
  for (int i = 0; i < n; ++i)
    C += channels[i];
  for (int64_t b = 0; b < N; ++b) {
    int64_t c0 = 0;
    for (int i = 0; i < n; ++i) {
      std::copy_n(parts[i] + b * channels[i] * HW, channels[i] * HW,
                  y + (b * C + c0) * HW);
      c0 += channels[i];
    }
  }
}

/// y = parts[0..n) along the width; part i is NCH x widths[i] (NCH: the
/// rows, N * C * H) (runConcatWidth).
inline void concatWidth(const float* const* parts, const int64_t* widths, int n,
                        int64_t NCH, float* y) {
  int64_t W = 0;
  for (int i = 0; i < n; ++i)
    W += widths[i];
  for (int64_t r = 0; r < NCH; ++r) {
    int64_t w0 = 0;
    for (int i = 0; i < n; ++i) {
      std::copy_n(parts[i] + r * widths[i], widths[i], y + r * W + w0);
      w0 += widths[i];
    }
  }
}

/// ViT's encoder input (runClassToken): x N x C x T, y N x C x (1+T).
inline void classToken(const float* x, int64_t N, int64_t C, int64_t T,
                       const float* cls, const float* pos, float* y) {
  // Loop over images and channels: the class token, then the T pixels,
  // each plus its position embedding.
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const float* pc = pos + c * (T + 1);
      float* yc = y + (b * C + c) * (T + 1);
      yc[0] = cls[c] + pc[0];
      for (int64_t t = 0; t < T; ++t)
        yc[1 + t] = x[(b * C + c) * T + t] + pc[1 + t];
    }
}

/// One head's scaled dot-product attention over T tokens, in double:
/// channel d of token t of the queries, keys, values and output at
/// [d * stride + at[t]], D channels, plus extra(t, s) on the score of query
/// t and key s.
template <class Extra>
inline void attendHead(const float* q, const float* k, const float* v, float* o,
                       int64_t D, int64_t T, int64_t stride, const int64_t* at,
                       Extra extra) {
  const double scale = 1 / std::sqrt(double(D));
  std::vector<double> p(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) {
    // Scores of query t against every key; softmax.
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t s = 0; s < T; ++s) {
      double dot = 0;
      for (int64_t d = 0; d < D; ++d)
        dot += double(q[d * stride + at[t]]) * double(k[d * stride + at[s]]);
      p[size_t(s)] = dot * scale + extra(t, s);
      mx = std::max(mx, p[size_t(s)]);
    }
    double sum = 0;
    for (int64_t s = 0; s < T; ++s) {
      p[size_t(s)] = std::exp(p[size_t(s)] - mx);
      sum += p[size_t(s)];
    }
    // Output channel d: the values weighted by the probabilities.
    for (int64_t d = 0; d < D; ++d) {
      double acc = 0;
      for (int64_t s = 0; s < T; ++s)
        acc += p[size_t(s)] * double(v[d * stride + at[s]]);
      o[d * stride + at[t]] = float(acc / sum);
    }
  }
}

/// Multi-head self-attention (runAttention): qkv N x 3C x T, y N x C x T.
inline void attention(const float* qkv, int64_t N, int64_t C, int64_t T,
                      int64_t heads, float* y) {
  // Token t, channel d of head h's queries is qkv[b, h*D + d, t]; its keys
  // and values follow C and 2C channels later.
  const int64_t D = C / heads;
  std::vector<int64_t> at(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t)
    at[size_t(t)] = t;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      const float* q = qkv + (b * 3 * C + h * D) * T;
      attendHead(q, q + C * T, q + 2 * C * T, y + (b * C + h * D) * T, D, T, T,
                 at.data(), [](int64_t, int64_t) { return 0.0; });
    }
}

/// The token matrix product (runTokenMatMul), straight from its
/// definition on tokens: a holds T tokens of K features channel-first
/// (N x K x T), b K tokens of M features (N x M x K), y = their product,
/// T tokens of M features (N x M x T); sums in double.
inline void tokenMatMul(const float* a, const float* b, int64_t N, int64_t K,
                        int64_t T, int64_t M, float* y) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t m = 0; m < M; ++m) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc +=
              double(a[(n * K + k) * T + t]) * double(b[(n * M + m) * K + k]);
        y[(n * M + m) * T + t] = float(acc);
      }
}

/// Swin's shifted window attention (runWindowAttention): qkv N x 3C x H x
/// W, windows wh x ww of the image rolled by -sh, -sw, bias heads x T x T,
/// mask masks x T x T (masks 1: the same for every window; both key-major:
/// [key][query]), y N x C x H x W.
inline void windowAttention(const float* qkv, int64_t N, int64_t C, int64_t H,
                            int64_t W, int64_t wh, int64_t ww, int64_t heads,
                            int64_t sh, int64_t sw, const float* bias,
                            const float* mask, int64_t masks, float* y) {
  const int64_t D = C / heads, T = wh * ww, HW = H * W;
  const int64_t across = W / ww, windows = (H / wh) * across;
  std::vector<int64_t> at(static_cast<size_t>(T)); // token -> pixel
  for (int64_t b = 0; b < N; ++b)
    for (int64_t w = 0; w < windows; ++w) {
      for (int64_t t = 0; t < T; ++t)
        at[size_t(t)] = ((w / across) * wh + t / ww + sh) % H * W +
                        ((w % across) * ww + t % ww + sw) % W;
      const float* m = mask + (masks == 1 ? 0 : w) * T * T;
      for (int64_t h = 0; h < heads; ++h) {
        const float* q = qkv + (b * 3 * C + h * D) * HW;
        const float* bh = bias + h * T * T;
        attendHead(q, q + C * HW, q + 2 * C * HW, y + (b * C + h * D) * HW, D,
                   T, HW, at.data(), [&](int64_t t, int64_t s) {
                     return double(bh[s * T + t]) + double(m[s * T + t]);
                   });
      }
    }
}

/// y (N x C x (top + H + bottom) x (left + W + right)) = x padded with
/// \p value.
inline void pad(const float* x, int64_t N, int64_t C, int64_t H, int64_t W,
                int64_t top, int64_t left, int64_t bottom, int64_t right,
                float value, float* y) {
  const int64_t OH = top + H + bottom, OW = left + W + right;
  for (int64_t bc = 0; bc < N * C; ++bc)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        const int64_t r = i - top, c = j - left;
        y[(bc * OH + i) * OW + j] = r >= 0 && r < H && c >= 0 && c < W
                                        ? x[(bc * H + r) * W + c]
                                        : value;
      }
}

/// y (N x C x nh x nw) = rows bh + i*th and columns bw + j*tw of x
/// (N x C x H x W).
inline void spatialSlice(const float* x, int64_t N, int64_t C, int64_t H,
                         int64_t W, int64_t bh, int64_t bw, int64_t th,
                         int64_t tw, int64_t nh, int64_t nw, float* y) {
  for (int64_t bc = 0; bc < N * C; ++bc)
    for (int64_t i = 0; i < nh; ++i)
      for (int64_t j = 0; j < nw; ++j)
        y[(bc * nh + i) * nw + j] = x[(bc * H + bh + i * th) * W + bw + j * tw];
}

/// The crop rows' region (roi top, left, bottom, right) and the value of
/// pixels outside the input; the plain rows: none.
struct ResizeCrop {
  bool on = false;
  float roi[4] = {0.f, 0.f, 1.f, 1.f};
  float extrapolation = 0.f;

  /// Whether coordinates \p ch, \p cw make an extrapolated pixel.
  bool outside(float ch, int64_t H, float cw, int64_t W) const {
    return on && !(ch >= 0.f && ch <= float(H - 1) && cw >= 0.f &&
                   cw <= float(W - 1));
  }
};

/// resize_nearest (\p linear false, rounding \p r) and resize_linear of
/// every channel to Ho x Wo, pixel by pixel: linear as ONNX's four-tap
/// blend, each weight a product of the two axes' weights; over \p crop's
/// region where it is on.
inline void resize(const float* x, int64_t N, int64_t C, int64_t H, int64_t W,
                   int64_t Ho, int64_t Wo, float scaleH, float scaleW,
                   ResizeCoord coord, bool linear, NearestRounding r, float* y,
                   const ResizeCrop& crop = {}) {
  for (int64_t p = 0; p < N * C; ++p)
    for (int64_t i = 0; i < Ho; ++i)
      for (int64_t j = 0; j < Wo; ++j) {
        const float ch =
            resizeSource(coord, i, scaleH, H, Ho, crop.roi[0], crop.roi[2]);
        const float cw =
            resizeSource(coord, j, scaleW, W, Wo, crop.roi[1], crop.roi[3]);
        const float* xp = x + p * H * W;
        float& out = y[(p * Ho + i) * Wo + j];
        if (crop.outside(ch, H, cw, W)) {
          out = crop.extrapolation;
          continue;
        }
        if (!linear) {
          out = xp[nearestIndex(r, ch, H) * W + nearestIndex(r, cw, W)];
          continue;
        }
        const float h = std::clamp(ch, 0.f, float(H - 1));
        const float w = std::clamp(cw, 0.f, float(W - 1));
        const int64_t h0 = int64_t(std::floor(h)), w0 = int64_t(std::floor(w));
        const int64_t h1 = std::min(h0 + 1, H - 1),
                      w1 = std::min(w0 + 1, W - 1);
        const float dh = h - float(h0), dw = w - float(w0);
        out = xp[h0 * W + w0] * (1 - dh) * (1 - dw) +
              xp[h0 * W + w1] * (1 - dh) * dw +
              xp[h1 * W + w0] * dh * (1 - dw) + xp[h1 * W + w1] * dh * dw;
      }
}

/// resize_cubic of x (N x C x H x W) into y (N x C x Ho x Wo), as ONNX's
/// reference defines it, in double: per axis, the 4 input indices nearest
/// to the coordinate (ties to the lower index) of the input padded with
/// its edge values, ratio r = coordinate - floor(coordinate), 1 where it
/// is whole; Keys' weights of r with coefficient a (those of taps outside
/// the input 0 and the rest renormalised, with \p exclude); the axes one
/// after another, the width first.
inline void resizeCubic(const float* x, int64_t N, int64_t C, int64_t H,
                        int64_t W, int64_t Ho, int64_t Wo, float scaleH,
                        float scaleW, ResizeCoord coord, double a, bool exclude,
                        float* y, const ResizeCrop& crop = {}) {
  // The 4 taps and weights of coordinate c on an axis of n.
  auto taps = [&](double c, int64_t n, int64_t idx[4], double w[4]) {
    const double f = std::floor(c);
    const double r = c == f ? 1.0 : c - f;
    const double d[4] = {r + 1, r, 1 - r, 2 - r};
    for (int k = 0; k < 4; ++k) {
      const double t = d[k];
      w[k] = t <= 1 ? ((a + 2) * t - (a + 3)) * t * t + 1
                    : ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
    }
    // The nearest 4 of the indices, by distance then index.
    std::vector<int64_t> near;
    for (int64_t i = int64_t(f) - 3; i <= int64_t(f) + 3; ++i)
      near.push_back(i);
    std::stable_sort(near.begin(), near.end(), [&](int64_t p, int64_t q) {
      return std::abs(c - double(p)) < std::abs(c - double(q));
    });
    near.resize(4);
    std::sort(near.begin(), near.end());
    double sum = 0;
    for (int k = 0; k < 4; ++k) {
      if (exclude && (near[size_t(k)] < 0 || near[size_t(k)] >= n))
        w[k] = 0;
      sum += w[k];
      idx[k] = std::clamp<int64_t>(near[size_t(k)], 0, n - 1);
    }
    if (exclude)
      for (int k = 0; k < 4; ++k)
        w[k] /= sum;
  };
  for (int64_t p = 0; p < N * C; ++p)
    for (int64_t i = 0; i < Ho; ++i)
      for (int64_t j = 0; j < Wo; ++j) {
        int64_t hi[4], wi[4];
        double hw[4], ww[4];
        const float ch =
            resizeSource(coord, i, scaleH, H, Ho, crop.roi[0], crop.roi[2]);
        const float cw =
            resizeSource(coord, j, scaleW, W, Wo, crop.roi[1], crop.roi[3]);
        if (crop.outside(ch, H, cw, W)) {
          y[(p * Ho + i) * Wo + j] = crop.extrapolation;
          continue;
        }
        taps(ch, H, hi, hw);
        taps(cw, W, wi, ww);
        double out = 0;
        for (int k = 0; k < 4; ++k) {
          double row = 0;
          for (int l = 0; l < 4; ++l)
            row += ww[l] * x[(p * H + hi[k]) * W + wi[l]];
          out += hw[k] * row;
        }
        y[(p * Ho + i) * Wo + j] = float(out);
      }
}

/// y (N x C) = token \p index of x (N x C x T).
inline void selectToken(const float* x, int64_t N, int64_t C, int64_t T,
                        int64_t index, float* y) {
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c)
      y[b * C + c] = x[(b * C + c) * T + index];
}

} // namespace hpvm::rt::ref

#endif // HPVM_RT_KERNELS_REFERENCE_H
