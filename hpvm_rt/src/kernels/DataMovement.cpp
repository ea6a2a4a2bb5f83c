// DataMovement.cpp - layers that move values without arithmetic (but for
// the class token's position embedding): concatenation along the channels
// or the width, channel slices and shuffles, NHWC at the graph's edges,
// padding, strided spatial slices, and the vision transformer's tokens.
#include "base/Errors.h"
#include "kernels/Numerics.h"
#include "kernels/Primitives.h"
#include "kernels/Reference.h"
#include "kernels/TensorImpl.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace hpvm::rt {
using namespace kern;

// --- Concatenation ----------------------------------------------------------

namespace {

/// runConcat() into storage bindChannelView() planned (batch 1, blocked by
/// viewChannelBlock(), every part a multiple of it): each part is one
/// contiguous run of y's buffer; a part whose producer wrote it there is
/// left as it is, the others are copied in.
void concatInPlace(Tensor* const* parts, int n, Tensor* y) {
  const int64_t block = viewChannelBlock();
  const dnnl::memory dst = outputMemory(y, channelBlockedDesc(y, block));
  const Dims4 yd = dims4(y);
  auto* base = static_cast<float*>(dst.get_data_handle());
  int64_t channel = 0;
  for (int i = 0; i < n; ++i) {
    const dnnl::memory::desc want = channelBlockedDesc(parts[i], block);
    float* at = base + channel * yd[2] * yd[3];
    channel += dims4(parts[i])[1];
    const TensorImpl& impl = implOf(parts[i]);
    if (impl.memValid && impl.mem.get_data_handle() == at &&
        impl.mem.get_desc() == want)
      continue;
    const dnnl::memory from = currentMemory(parts[i]);
    if (from.get_desc() == want)
      parallelCopy(at, from.get_data_handle(), want.get_size());
    else
      reorder(from, dnnl::memory(want, engine(), at));
  }
}

} // namespace

void runConcat(Tensor* const* parts, int n, const KnobSpec& knob, Tensor* y) {
  applyThreads();
  const Dims4 yd = dims4(y);
  int64_t channels = 0;
  const int64_t block = viewChannelBlock();
  bool blocks = true;
  for (int i = 0; i < n; ++i) {
    const Dims4 d = dims4(parts[i]);
    HPVM_ASSERT(d[0] == yd[0] && d[2] == yd[2] && d[3] == yd[3] &&
                    parts[i] != y,
                fmt::format("concat part {} is {}, the result {}", i,
                            dimsStr(parts[i]), dimsStr(y)));
    channels += d[1];
    blocks = blocks && d[1] % block == 0;
  }
  HPVM_ASSERT(channels == yd[1], "concat channels do not add up");
  // fp32 only: rounding the result in place would round the parts too.
  if (yd[0] == 1 && blocks && knob.precision == Precision::FP32 &&
      hasChannelViews(y)) {
    concatInPlace(parts, n, y);
    return;
  }
  std::vector<dnnl::memory> src(static_cast<size_t>(n));
  std::vector<std::unique_ptr<PoolBuffer>> holds(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    src[i] = currentMemory(parts[i]);
  // Blocked as the convolutions write (viewChannelBlock()) when every
  // part fills whole blocks (the layout the next convolution reads:
  // DenseNet's concatenations of 32-channel layers, YOLOv8's C2f),
  // reordering the parts that are not; else channel-last if every part
  // is; else plain NCHW.
  auto all = [&](auto pred) {
    for (int i = 0; i < n; ++i)
      if (!pred(i, dims4(parts[i])))
        return false;
    return true;
  };
  tag layout = tag::nchw;
  if (blocks)
    layout = block == 16 ? tag::nChw16c : tag::nChw8c;
  else if (all([&](int i, const Dims4& d) {
             return src[i].get_desc() ==
                    dnnl::memory::desc({d[0], d[1], d[2], d[3]}, dt::f32,
                                       tag::nhwc);
           }))
    layout = tag::nhwc;
  std::vector<dnnl::memory::desc> descs;
  std::string key = "concat";
  for (int i = 0; i < n; ++i) {
    const Dims4 d = dims4(parts[i]);
    dnnl::memory::desc want({d[0], d[1], d[2], d[3]}, dt::f32, layout);
    if (src[i].get_desc() != want)
      src[i] = memoryAs(parts[i], want, holds[i]);
    descs.push_back(want);
    key += "|" + descKey(want);
  }
  const dnnl::memory::desc dstDesc({yd[0], yd[1], yd[2], yd[3]}, dt::f32,
                                   layout);
  const Prim& p = cachedPrim(key, [&] {
    dnnl::concat::primitive_desc pd(dstDesc, 1, descs, engine());
    return Prim{dnnl::concat(pd), {}, {}, pd.dst_desc()};
  });
  dnnl::memory dst = outputMemory(y, dstDesc);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_DST, dst}};
  for (int i = 0; i < n; ++i)
    args.emplace(DNNL_ARG_MULTIPLE_SRC + i, src[i]);
  p.prim.execute(stream(), args);
  stream().wait();
  // Values already rounded to the knob's precision stay rounded.
  bool rounded = true;
  for (int i = 0; i < n; ++i)
    rounded = rounded && alreadyRounded(parts[i], knob.precision);
  keepOrRound(rounded, knob.precision, y);
}

void runConcatWidth(Tensor* const* parts, int n, const KnobSpec& knob,
                    Tensor* y) {
  applyThreads();
  const Dims4 yd = dims4(y);
  std::vector<const float*> src(static_cast<size_t>(n));
  std::vector<int64_t> widths(static_cast<size_t>(n));
  int64_t width = 0;
  bool rounded = true;
  for (int i = 0; i < n; ++i) {
    const Dims4 d = dims4(parts[i]);
    HPVM_ASSERT(d[0] == yd[0] && d[1] == yd[1] && d[2] == yd[2] &&
                    parts[i] != y,
                fmt::format("width concat part {} is {}, the result {}", i,
                            dimsStr(parts[i]), dimsStr(y)));
    widths[i] = d[3];
    width += d[3];
    rounded = rounded && alreadyRounded(parts[i], knob.precision);
  }
  HPVM_ASSERT(width == yd[3], "width concat widths do not add up");
  // Every part's plain N x C x H x W values (reordered from a blocked
  // layout if need be), then one row of each part after another.
  for (int i = 0; i < n; ++i)
    src[i] = hostData(parts[i]);
  allocHost(y);
  float* yp = y->impl->host;
  const int64_t NC = yd[0] * yd[1], H = yd[2], W = yd[3];
  // The H rows of one (image, channel) plane.
  auto plane = [&](int64_t bc) {
    for (int64_t h = 0; h < H; ++h) {
      float* dst = yp + (bc * H + h) * W;
      for (int i = 0; i < n; ++i) {
        const int64_t w = widths[size_t(i)];
        std::memcpy(dst, src[size_t(i)] + (bc * H + h) * w,
                    static_cast<size_t>(w) * sizeof(float));
        dst += w;
      }
    }
  };
  // (A few values: on this thread, outside a parallel region;
  // kParallelMinElems.)
  if (NC * H * W < kParallelMinElems) {
    for (int64_t bc = 0; bc < NC; ++bc)
      plane(bc);
  } else {
#pragma omp parallel for schedule(static)
    for (int64_t bc = 0; bc < NC; ++bc)
      plane(bc);
  }
  markHostWritten(y);
  // Values already rounded to the knob's precision stay rounded.
  keepOrRound(rounded, knob.precision, y);
}

namespace {

/// y's channel c = x's channel source(c), plane by plane in parallel
/// (NCHW host data); y keeps x's rounding.
template <class Source>
void copyChannels(const Tensor* x, const KnobSpec& knob, Tensor* y,
                  Source source) {
  applyThreads();
  const Dims4 xd = dims4(x), yd = dims4(y);
  HPVM_ASSERT(
      x != y && xd[0] == yd[0] && xd[2] == yd[2] && xd[3] == yd[3],
      fmt::format("channel copy from {} to {}", dimsStr(x), dimsStr(y)));
  const float* xp = hostData(x);
  allocHost(y);
  float* yp = y->impl->host;
  const int64_t N = yd[0], C = yd[1], XC = xd[1], HW = yd[2] * yd[3];
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c)
      std::memcpy(yp + (b * C + c) * HW, xp + (b * XC + source(c)) * HW,
                  static_cast<size_t>(HW) * sizeof(float));
  markHostCopied(x, knob.precision, y);
}

} // namespace

void runChannelSlice(const Tensor* x, int64_t begin, int64_t end,
                     const KnobSpec& knob, Tensor* y) {
  const Dims4 xd = dims4(x), yd = dims4(y);
  HPVM_ASSERT(begin >= 0 && end > begin && end <= xd[1] &&
                  yd[1] == end - begin && x != y,
              "channel slice out of range");
  // fp32 blocked by 8 or 16 channels (a convolution's output), sliced on
  // block boundaries (YOLOv8's C2f chunks): the slice's blocks of each
  // image are one run of x's, copied as they lie, and y stays blocked for
  // the next convolution; no reorder to NCHW and back. (A last block
  // padded past x's channels is padded alike in y.)
  if (const int64_t block = heldChannelBlock(x);
      block != 0 && !implOf(x).memBorrowed && begin % block == 0 &&
      (end % block == 0 || end == xd[1])) {
    applyThreads();
    const auto* xb = static_cast<const float*>(implOf(x).mem.get_data_handle());
    auto* yb = static_cast<float*>(
        outputMemory(y, channelBlockedDesc(y, block)).get_data_handle());
    const int64_t plane = xd[2] * xd[3] * block;
    const int64_t xBlocks = (xd[1] + block - 1) / block,
                  yBlocks = (yd[1] + block - 1) / block;
    auto image = [&](int64_t b) {
      std::memcpy(yb + b * yBlocks * plane,
                  xb + (b * xBlocks + begin / block) * plane,
                  static_cast<size_t>(yBlocks * plane) * sizeof(float));
    };
    // (One image, or a few values: on this thread; kParallelMinElems.)
    if (yd[0] == 1 || yd[0] * yBlocks * plane < kParallelMinElems) {
      for (int64_t b = 0; b < yd[0]; ++b)
        image(b);
    } else {
#pragma omp parallel for schedule(static)
      for (int64_t b = 0; b < yd[0]; ++b)
        image(b);
    }
    keepOrRound(alreadyRounded(x, knob.precision), knob.precision, y);
    return;
  }
  copyChannels(x, knob, y, [begin](int64_t c) { return begin + c; });
}

void runChannelShuffle(const Tensor* x, int64_t groups, const KnobSpec& knob,
                       Tensor* y) {
  const int64_t C = dims4(x)[1];
  HPVM_ASSERT(groups >= 1 && C % groups == 0 && dims4(y)[1] == C,
              "channel shuffle groups do not divide the channels");
  const int64_t per = C / groups;
  // Output channel j * groups + i reads input channel i * per + j.
  copyChannels(x, knob, y, [groups, per](int64_t c) {
    return (c % groups) * per + c / groups;
  });
}

void runReshape(const OpCall& c) {
  applyThreads();
  HPVM_ASSERT(
      numElems(c.out) == numElems(c.in[0]) &&
          dims4(c.out)[0] == dims4(c.in[0])[0],
      fmt::format("reshape of {} into {}", dimsStr(c.in[0]), dimsStr(c.out)));
  // x's plain N x C x H x W values are y's.
  const float* xp = hostData(c.in[0]);
  allocHost(c.out);
  float* yp = c.out->impl->host;
  const int64_t n = numElems(c.out);
  constexpr int64_t kBlock = 16384;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < n; b += kBlock)
    std::memcpy(yp + b, xp + b,
                static_cast<size_t>(std::min(kBlock, n - b)) * sizeof(float));
  markHostCopied(c.in[0], c.knob.precision, c.out);
}

// --- Layout changes at the graph's edges ----------------------------------

namespace {

/// y = x's values reordered between N x C x H x W and N x H x W x C:
/// \p nchw (x's dims, or y's) is the side held channel-first; the other
/// side's plain values are its NHWC layout. One oneDNN reorder.
void reorderEdge(const Tensor* x, const KnobSpec& knob, Tensor* y,
                 const Tensor* nchw, bool toLast) {
  applyThreads();
  HPVM_ASSERT(numElems(y) == numElems(x) && dims4(y)[0] == dims4(x)[0],
              fmt::format("channels {} of {} into {}",
                          toLast ? "last" : "first", dimsStr(x), dimsStr(y)));
  const Dims4 d = dims4(nchw);
  const dnnl::memory::desc nhwc({d[0], d[1], d[2], d[3]},
                                dnnl::memory::data_type::f32,
                                dnnl::memory::format_tag::nhwc);
  const dnnl::memory dst = outputMemory(y, nchwDesc(y));
  if (toLast)
    reorder(currentMemory(x),
            dnnl::memory(nhwc, engine(), dst.get_data_handle()));
  else
    reorder(dnnl::memory(nhwc, engine(), const_cast<float*>(hostData(x))), dst);
  markHostCopied(x, knob.precision, y);
}

} // namespace

void runChannelsLast(const Tensor* x, const KnobSpec& knob, Tensor* y) {
  // From x's layout to NHWC, over y's host buffer (N x H x W x C plain).
  reorderEdge(x, knob, y, x, true);
}

void runChannelsFirst(const Tensor* x, const KnobSpec& knob, Tensor* y) {
  // x's plain N x H x W x C values are y's in NHWC.
  reorderEdge(x, knob, y, y, false);
}

// --- Padding and spatial slices --------------------------------------------

void runPad(const OpCall& c) {
  applyThreads();
  const Tensor* x = c.in[0];
  const Dims4 xd = dims4(x), yd = dims4(c.out);
  const int64_t top = int64_t(c.scalars[0]), left = int64_t(c.scalars[1]);
  const float value = float(c.scalars[4]);
  const int64_t NC = xd[0] * xd[1], H = xd[2], W = xd[3], OH = yd[2],
                OW = yd[3];
  HPVM_ASSERT(yd[0] == xd[0] && yd[1] == xd[1] &&
                  OH == top + H + int64_t(c.scalars[2]) &&
                  OW == left + W + int64_t(c.scalars[3]),
              fmt::format("pad of {} into {}", dimsStr(x), dimsStr(c.out)));
  const float* xp = hostData(x);
  allocHost(c.out);
  float* yp = c.out->impl->host;
  // One output row per iteration: the value, the input row, the value.
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t bc = 0; bc < NC; ++bc)
    for (int64_t i = 0; i < OH; ++i) {
      float* dst = yp + (bc * OH + i) * OW;
      const int64_t r = i - top;
      if (r < 0 || r >= H) {
        std::fill(dst, dst + OW, value);
        continue;
      }
      std::fill(dst, dst + left, value);
      std::memcpy(dst + left, xp + (bc * H + r) * W,
                  static_cast<size_t>(W) * sizeof(float));
      std::fill(dst + left + W, dst + OW, value);
    }
  markHostWritten(c.out);
  roundResult(c.knob.precision, c.out);
}

void runSpatialSlice(const OpCall& c) {
  applyThreads();
  const Tensor* x = c.in[0];
  const Dims4 xd = dims4(x), yd = dims4(c.out);
  const int64_t bh = int64_t(c.scalars[0]), bw = int64_t(c.scalars[1]),
                th = int64_t(c.scalars[2]), tw = int64_t(c.scalars[3]);
  const int64_t NC = xd[0] * xd[1], H = xd[2], W = xd[3], nh = yd[2],
                nw = yd[3];
  HPVM_ASSERT(
      yd[0] == xd[0] && yd[1] == xd[1] && nh == int64_t(c.scalars[4]) &&
          nw == int64_t(c.scalars[5]) && bh + (nh - 1) * th < H &&
          bw + (nw - 1) * tw < W,
      fmt::format("spatial slice of {} into {}", dimsStr(x), dimsStr(c.out)));
  const float* xp = hostData(x);
  allocHost(c.out);
  float* yp = c.out->impl->host;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t bc = 0; bc < NC; ++bc)
    for (int64_t i = 0; i < nh; ++i) {
      const float* src = xp + (bc * H + bh + i * th) * W + bw;
      float* dst = yp + (bc * nh + i) * nw;
      for (int64_t j = 0; j < nw; ++j)
        dst[j] = src[j * tw];
    }
  markHostCopied(x, c.knob.precision, c.out);
}

// --- Vision transformer tokens ---------------------------------------------

void runClassToken(const Tensor* x, const Tensor* cls, const Tensor* pos,
                   const KnobSpec& knob, Tensor* y) {
  applyThreads();
  const Dims4 xd = dims4(x);
  const int64_t N = xd[0], C = xd[1], T = xd[2] * xd[3];
  HPVM_ASSERT(numElems(cls) == C && numElems(pos) == C * (T + 1) &&
                  numElems(y) == N * C * (T + 1),
              fmt::format("class token shapes wrong: x {}, token {}, "
                          "position embedding {}, y {}",
                          dimsStr(x), dimsStr(cls), dimsStr(pos), dimsStr(y)));
  const float* xp = hostData(x);
  const float* cp = hostData(cls);
  const float* pp = hostData(pos);
  allocHost(y);
  float* yp = y->impl->host;
  // One token row (a channel of one image) per iteration.
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const float* pc = pp + c * (T + 1);
      const float* xc = xp + (b * C + c) * T;
      float* yc = yp + (b * C + c) * (T + 1);
      yc[0] = cp[c] + pc[0];
#pragma omp simd
      for (int64_t t = 0; t < T; ++t)
        yc[1 + t] = xc[t] + pc[1 + t];
    }
  markHostWritten(y);
  roundResult(knob.precision, y);
}

void runSelectToken(const Tensor* x, int64_t index, const KnobSpec& knob,
                    Tensor* y) {
  applyThreads();
  const Dims4 xd = dims4(x);
  const int64_t N = xd[0], C = xd[1], T = xd[2] * xd[3];
  HPVM_ASSERT(
      index >= 0 && index < T && numElems(y) == N * C,
      fmt::format("token {} of {} into {}", index, dimsStr(x), dimsStr(y)));
  const float* xp = hostData(x);
  allocHost(y);
  ref::selectToken(xp, N, C, T, index, y->impl->host);
  markHostCopied(x, knob.precision, y);
}

} // namespace hpvm::rt
