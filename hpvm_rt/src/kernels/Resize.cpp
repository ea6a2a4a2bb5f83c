// Resize.cpp - resize_nearest, resize_linear and resize_cubic (ONNX Resize
// and Upsample over the two spatial axes), and their *_crop rows over a
// region of interest (tf_crop_and_resize): each output pixel reads the
// input at the coordinates hpvm_rt/Resize.h maps it to. Both axes' taps
// are computed once per call (an index, and for linear a second index and
// a weight, for cubic four of each, per output row and column), then every
// channel's rows are a gather, or gathers and a blend, of input rows; the
// crop rows then write their extrapolation value where a row or column
// falls outside the input.
#include "hpvm_rt/Resize.h"
#include "base/Errors.h"
#include "kernels/Numerics.h"
#include "kernels/Primitives.h"
#include "kernels/TensorImpl.h"

#include <fmt/format.h>

#include <algorithm>
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

/// How one axis maps output indices to input coordinates.
struct AxisMap {
  ResizeCoord coord;
  float scale;
  int64_t in, out;
  float start = 0.f, end = 1.f; ///< the crop rows' region

  float source(int64_t o) const {
    return resizeSource(coord, o, scale, in, out, start, end);
  }
};

/// The scalar operands: size h, w (the axes' out), then scale h, w, coord
/// (the plain rows) or roi top, left, bottom, right, extrapolation (the
/// crop rows); the mode's own scalars from `extra` on.
struct ResizeScalars {
  float extrapolation;
  AxisMap h, w;
  size_t extra;
};

ResizeScalars scalarsOf(const OpCall& c, bool crop) {
  const Dims4 xd = dims4(c.in[0]);
  const double* s = c.scalars;
  // Axis i (0: height, 1: width) of the input.
  auto axis = [&](int i) {
    const int64_t in = xd[2 + i], out = static_cast<int64_t>(s[i]);
    if (crop)
      return AxisMap{ResizeCoord::TfCropAndResize,
                     1.f,
                     in,
                     out,
                     static_cast<float>(s[2 + i]),
                     static_cast<float>(s[4 + i])};
    return AxisMap{static_cast<ResizeCoord>(static_cast<int>(s[4])),
                   static_cast<float>(s[2 + i]), in, out};
  };
  return {crop ? static_cast<float>(s[6]) : 0.f, axis(0), axis(1),
          crop ? 7u : 5u};
}

Taps nearestTaps(const AxisMap& m, NearestRounding r) {
  Taps t;
  t.i0.resize(size_t(m.out));
  for (int64_t o = 0; o < m.out; ++o)
    t.i0[size_t(o)] = nearestIndex(r, m.source(o), m.in);
  return t;
}

/// Linear taps: the coordinate clamped into [0, in - 1] (ONNX's edge
/// padding), its floor and the next index (the last one repeated).
Taps linearTaps(const AxisMap& m) {
  Taps t;
  t.i0.resize(size_t(m.out));
  t.i1.resize(size_t(m.out));
  t.w.resize(size_t(m.out));
  const float last = static_cast<float>(m.in - 1);
  for (int64_t o = 0; o < m.out; ++o) {
    float x = m.source(o);
    x = x < 0.f ? 0.f : x > last ? last : x;
    const int64_t i = static_cast<int64_t>(x);
    t.i0[size_t(o)] = i;
    t.i1[size_t(o)] = i + 1 < m.in ? i + 1 : i;
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

CubicTaps cubicTaps(const AxisMap& m, float a, bool exclude) {
  CubicTaps t;
  t.index.resize(size_t(4 * m.out));
  t.weight.resize(size_t(4 * m.out));
  for (int64_t o = 0; o < m.out; ++o) {
    const float x = m.source(o);
    float f = std::floor(x);
    if (f == x)
      f -= 1.f;
    float* w = &t.weight[size_t(4 * o)];
    cubicWeights(x - f, a, w);
    // (Far outside, with the crop rows: any index; the pixel is
    // extrapolated.)
    const int64_t first = std::isfinite(f) && std::fabs(f) < 1e9f
                              ? static_cast<int64_t>(f) - 1
                              : 0;
    float sum = 0.f;
    for (int k = 0; k < 4; ++k) {
      const int64_t i = first + k;
      if (exclude && (i < 0 || i >= m.in))
        w[k] = 0.f;
      sum += w[k];
      t.index[size_t(4 * o + k)] = i < 0 ? 0 : i >= m.in ? m.in - 1 : i;
    }
    if (exclude && sum != 0.f)
      for (int k = 0; k < 4; ++k)
        w[k] /= sum;
  }
  return t;
}

/// The crop rows: every output pixel whose row or column coordinate is
/// outside [0, in - 1] becomes the extrapolation value.
void extrapolate(const ResizeScalars& s, int64_t planes, float* y) {
  // 1 where an axis' output index maps outside the input.
  auto outside = [](const AxisMap& m) {
    std::vector<char> o(size_t(m.out));
    for (int64_t i = 0; i < m.out; ++i) {
      const float x = m.source(i);
      o[size_t(i)] = !(x >= 0.f && x <= static_cast<float>(m.in - 1));
    }
    return o;
  };
  const std::vector<char> rows = outside(s.h), cols = outside(s.w);
  auto any = [](const std::vector<char>& o) {
    return std::find(o.begin(), o.end(), 1) != o.end();
  };
  if (!any(rows) && !any(cols))
    return;
  const char* outRow = rows.data();
  const char* outCol = cols.data();
  const int64_t Ho = s.h.out, Wo = s.w.out;
  const float v = s.extrapolation;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < Ho; ++oh) {
      float* dst = y + (p * Ho + oh) * Wo;
      const bool all = outRow[oh] != 0;
      for (int64_t ow = 0; ow < Wo; ++ow)
        if (all || outCol[ow])
          dst[ow] = v;
    }
}

void checkShapes(const OpCall& c, const ResizeScalars& s) {
  const Dims4 xd = dims4(c.in[0]), yd = dims4(c.out);
  HPVM_ASSERT(
      yd[0] == xd[0] && yd[1] == xd[1] && yd[2] == s.h.out &&
          yd[3] == s.w.out && xd[2] >= 1 && xd[3] >= 1,
      fmt::format("resize of {} into {}", dimsStr(c.in[0]), dimsStr(c.out)));
}

void resizeNearest(const OpCall& c, bool crop) {
  applyThreads();
  const ResizeScalars s = scalarsOf(c, crop);
  checkShapes(c, s);
  const auto r =
      static_cast<NearestRounding>(static_cast<int>(c.scalars[s.extra]));
  const Dims4 xd = dims4(c.in[0]);
  const int64_t planes = xd[0] * xd[1], H = xd[2], W = xd[3];
  const int64_t Ho = s.h.out, Wo = s.w.out;
  const Taps th = nearestTaps(s.h, r);
  const Taps tw = nearestTaps(s.w, r);
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
  if (!crop) {
    markHostCopied(c.in[0], c.knob.precision, c.out);
    return;
  }
  extrapolate(s, planes, yp);
  markHostWritten(c.out);
  roundResult(c.knob.precision, c.out);
}

void resizeLinear(const OpCall& c, bool crop) {
  applyThreads();
  const ResizeScalars s = scalarsOf(c, crop);
  checkShapes(c, s);
  const Dims4 xd = dims4(c.in[0]);
  const int64_t planes = xd[0] * xd[1], H = xd[2], W = xd[3];
  const int64_t Ho = s.h.out, Wo = s.w.out;
  const Taps th = linearTaps(s.h);
  const Taps tw = linearTaps(s.w);
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
  if (crop)
    extrapolate(s, planes, yp);
  markHostWritten(c.out);
  roundResult(c.knob.precision, c.out);
}

void resizeCubic(const OpCall& c, bool crop) {
  applyThreads();
  const ResizeScalars s = scalarsOf(c, crop);
  checkShapes(c, s);
  const float a = static_cast<float>(c.scalars[s.extra]);
  const bool exclude = c.scalars[s.extra + 1] != 0;
  const Dims4 xd = dims4(c.in[0]);
  const int64_t planes = xd[0] * xd[1], H = xd[2], W = xd[3];
  const int64_t Ho = s.h.out, Wo = s.w.out;
  const CubicTaps th = cubicTaps(s.h, a, exclude);
  const CubicTaps tw = cubicTaps(s.w, a, exclude);
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
  if (crop)
    extrapolate(s, planes, yp);
  markHostWritten(c.out);
  roundResult(c.knob.precision, c.out);
}

} // namespace

void runResizeNearest(const OpCall& c) { resizeNearest(c, false); }
void runResizeLinear(const OpCall& c) { resizeLinear(c, false); }
void runResizeCubic(const OpCall& c) { resizeCubic(c, false); }
void runResizeNearestCrop(const OpCall& c) { resizeNearest(c, true); }
void runResizeLinearCrop(const OpCall& c) { resizeLinear(c, true); }
void runResizeCubicCrop(const OpCall& c) { resizeCubic(c, true); }

} // namespace hpvm::rt
