// Resize.cpp - resize_nearest, resize_linear and resize_cubic (ONNX Resize
// and Upsample over the two spatial axes): each output pixel reads the
// input at the coordinates hpvm_rt/Resize.h maps it to. Both axes' taps
// are computed once per call (an index, and for linear a second index and
// a weight, for cubic four of each, per output row and column), then every
// channel's rows are a gather, or gathers and a blend, of input rows.
#include "hpvm_rt/Resize.h"
#include "base/Errors.h"
#include "kernels/Numerics.h"
#include "kernels/Primitives.h"
#include "kernels/TensorImpl.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

namespace hpvm::rt {
using namespace kern;

namespace {

/// One output index's input taps along an axis: indices i0 and i1 and the
/// weight of i1 (linear: x = (1 - w) * in[i0] + w * in[i1]).
struct Taps {
  std::vector<int64_t> i0, i1;
  std::vector<float> w;
};

/// The scalar operands both rows share: size h, w, scale h, w, coord.
struct ResizeScalars {
  int64_t outH, outW;
  float scaleH, scaleW;
  ResizeCoord coord;
};

ResizeScalars scalarsOf(const OpCall& c) {
  return {static_cast<int64_t>(c.scalars[0]),
          static_cast<int64_t>(c.scalars[1]), static_cast<float>(c.scalars[2]),
          static_cast<float>(c.scalars[3]),
          static_cast<ResizeCoord>(static_cast<int>(c.scalars[4]))};
}

Taps nearestTaps(ResizeCoord coord, NearestRounding r, float scale, int64_t in,
                 int64_t out) {
  Taps t;
  t.i0.resize(size_t(out));
  for (int64_t o = 0; o < out; ++o)
    t.i0[size_t(o)] =
        nearestIndex(r, resizeSource(coord, o, scale, in, out), in);
  return t;
}

/// Linear taps: the coordinate clamped into [0, in - 1] (ONNX's edge
/// padding), its floor and the next index (the last one repeated).
Taps linearTaps(ResizeCoord coord, float scale, int64_t in, int64_t out) {
  Taps t;
  t.i0.resize(size_t(out));
  t.i1.resize(size_t(out));
  t.w.resize(size_t(out));
  const float last = static_cast<float>(in - 1);
  for (int64_t o = 0; o < out; ++o) {
    float x = resizeSource(coord, o, scale, in, out);
    x = x < 0.f ? 0.f : x > last ? last : x;
    const int64_t i = static_cast<int64_t>(x);
    t.i0[size_t(o)] = i;
    t.i1[size_t(o)] = i + 1 < in ? i + 1 : i;
    t.w[size_t(o)] = x - static_cast<float>(i);
  }
  return t;
}

/// Cubic taps: four input indices and weights per output index (the taps
/// i - 1 .. i + 2 around the coordinate, hpvm_rt/Resize.h's cubicWeights);
/// a tap outside the input reads the edge pixel, or with \p exclude
/// weighs 0 and the others are scaled to sum to 1.
struct CubicTaps {
  std::vector<int64_t> index;
  std::vector<float> weight;
};

CubicTaps cubicTaps(ResizeCoord coord, float scale, int64_t in, int64_t out,
                    float a, bool exclude) {
  CubicTaps t;
  t.index.resize(size_t(4 * out));
  t.weight.resize(size_t(4 * out));
  for (int64_t o = 0; o < out; ++o) {
    const float x = resizeSource(coord, o, scale, in, out);
    float f = std::floor(x);
    if (f == x)
      f -= 1.f;
    float* w = &t.weight[size_t(4 * o)];
    cubicWeights(x - f, a, w);
    const int64_t first = static_cast<int64_t>(f) - 1;
    float sum = 0.f;
    for (int k = 0; k < 4; ++k) {
      const int64_t i = first + k;
      if (exclude && (i < 0 || i >= in))
        w[k] = 0.f;
      sum += w[k];
      t.index[size_t(4 * o + k)] = i < 0 ? 0 : i >= in ? in - 1 : i;
    }
    if (exclude && sum != 0.f)
      for (int k = 0; k < 4; ++k)
        w[k] /= sum;
  }
  return t;
}

void checkShapes(const OpCall& c, const ResizeScalars& s) {
  const Dims4 xd = dims4(c.in[0]), yd = dims4(c.out);
  HPVM_ASSERT(
      yd[0] == xd[0] && yd[1] == xd[1] && yd[2] == s.outH && yd[3] == s.outW &&
          xd[2] >= 1 && xd[3] >= 1,
      fmt::format("resize of {} into {}", dimsStr(c.in[0]), dimsStr(c.out)));
}

} // namespace

void runResizeNearest(const OpCall& c) {
  applyThreads();
  const ResizeScalars s = scalarsOf(c);
  checkShapes(c, s);
  const auto r = static_cast<NearestRounding>(static_cast<int>(c.scalars[5]));
  const Dims4 xd = dims4(c.in[0]);
  const int64_t planes = xd[0] * xd[1], H = xd[2], W = xd[3];
  const int64_t Ho = s.outH, Wo = s.outW;
  const Taps th = nearestTaps(s.coord, r, s.scaleH, H, Ho);
  const Taps tw = nearestTaps(s.coord, r, s.scaleW, W, Wo);
  const float* xp = hostData(c.in[0]);
  allocHost(c.out);
  float* yp = c.out->impl->host;
  const int64_t* cols = tw.i0.data();
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < Ho; ++oh) {
      const float* row = xp + (p * H + th.i0[size_t(oh)]) * W;
      float* dst = yp + (p * Ho + oh) * Wo;
      for (int64_t ow = 0; ow < Wo; ++ow)
        dst[ow] = row[cols[ow]];
    }
  markHostCopied(c.in[0], c.knob.precision, c.out);
}

void runResizeLinear(const OpCall& c) {
  applyThreads();
  const ResizeScalars s = scalarsOf(c);
  checkShapes(c, s);
  const Dims4 xd = dims4(c.in[0]);
  const int64_t planes = xd[0] * xd[1], H = xd[2], W = xd[3];
  const int64_t Ho = s.outH, Wo = s.outW;
  const Taps th = linearTaps(s.coord, s.scaleH, H, Ho);
  const Taps tw = linearTaps(s.coord, s.scaleW, W, Wo);
  const float* xp = hostData(c.in[0]);
  allocHost(c.out);
  float* yp = c.out->impl->host;
  const int64_t *c0 = tw.i0.data(), *c1 = tw.i1.data();
  const float* cw = tw.w.data();
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < Ho; ++oh) {
      const float* r0 = xp + (p * H + th.i0[size_t(oh)]) * W;
      const float* r1 = xp + (p * H + th.i1[size_t(oh)]) * W;
      const float wh = th.w[size_t(oh)];
      float* dst = yp + (p * Ho + oh) * Wo;
      for (int64_t ow = 0; ow < Wo; ++ow) {
        const float a = r0[c0[ow]] + cw[ow] * (r0[c1[ow]] - r0[c0[ow]]);
        const float b = r1[c0[ow]] + cw[ow] * (r1[c1[ow]] - r1[c0[ow]]);
        dst[ow] = a + wh * (b - a);
      }
    }
  markHostWritten(c.out);
  roundResult(c.knob.precision, c.out);
}

void runResizeCubic(const OpCall& c) {
  applyThreads();
  const ResizeScalars s = scalarsOf(c);
  checkShapes(c, s);
  const float a = static_cast<float>(c.scalars[5]);
  const bool exclude = c.scalars[6] != 0;
  const Dims4 xd = dims4(c.in[0]);
  const int64_t planes = xd[0] * xd[1], H = xd[2], W = xd[3];
  const int64_t Ho = s.outH, Wo = s.outW;
  const CubicTaps th = cubicTaps(s.coord, s.scaleH, H, Ho, a, exclude);
  const CubicTaps tw = cubicTaps(s.coord, s.scaleW, W, Wo, a, exclude);
  const float* xp = hostData(c.in[0]);
  allocHost(c.out);
  float* yp = c.out->impl->host;
  const int64_t* ci = tw.index.data();
  const float* cw = tw.weight.data();
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < Ho; ++oh) {
      const float* rows[4];
      float wh[4];
      for (int k = 0; k < 4; ++k) {
        rows[k] = xp + (p * H + th.index[size_t(4 * oh + k)]) * W;
        wh[k] = th.weight[size_t(4 * oh + k)];
      }
      float* dst = yp + (p * Ho + oh) * Wo;
      for (int64_t ow = 0; ow < Wo; ++ow) {
        const int64_t* i = ci + 4 * ow;
        const float* w = cw + 4 * ow;
        float acc = 0.f;
        for (int k = 0; k < 4; ++k) {
          const float* r = rows[k];
          acc += wh[k] * (w[0] * r[i[0]] + w[1] * r[i[1]] + w[2] * r[i[2]] +
                          w[3] * r[i[3]]);
        }
        dst[ow] = acc;
      }
    }
  markHostWritten(c.out);
  roundResult(c.knob.precision, c.out);
}

} // namespace hpvm::rt
