// ConvLiveTaps.cpp - the live taps of a convolution window and its
// cropped filter (ConvLiveTaps.h).
#include "kernels/ConvLiveTaps.h"

#include "kernels/DerivedWeights.h"
#include "kernels/Kernels.h"

#include <algorithm>
#include <string>
#include <utility>

namespace hpvm::rt::kern {

namespace {

/// ceil(a / b) for b > 0 and any a.
int64_t ceilDiv(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -(-a / b);
}

/// The taps [begin, end) of an axis that read the input at output \p o
/// (tap k reads o * stride - pad + k * dil); begin >= end where it reads
/// only padding.
std::pair<int64_t, int64_t> liveTapsAt(int64_t o, int64_t taps, int64_t in,
                                       int64_t pad, int64_t stride,
                                       int64_t dil) {
  const int64_t first = o * stride - pad;
  return {std::max<int64_t>(0, ceilDiv(-first, dil)),
          std::min(taps, ceilDiv(in - first, dil))};
}

/// Taps that can be cropped from both ends of an axis of \p taps taps:
/// those no output reads at the end with fewer, no more than the padding
/// can give up (one dilated step a tap).
int64_t croppable(int64_t taps, int64_t in, int64_t out, int64_t pad,
                  int64_t stride, int64_t dil) {
  int64_t lead = taps, last = -1;
  for (int64_t o = 0; o < out; ++o) {
    const auto [begin, end] = liveTapsAt(o, taps, in, pad, stride, dil);
    if (begin < end) {
      lead = std::min(lead, begin);
      last = std::max(last, end - 1);
    }
  }
  if (last < 0)
    return 0; // every tap dead: the output is the post-ops of zero
  return std::min({lead, taps - 1 - last, pad / dil});
}

} // namespace

std::optional<LiveTaps> liveTaps(const ConvArgs& a, const Dims4& xd,
                                 const Dims4& wd, const Dims4& yd) {
  LiveTaps live;
  live.cropH = croppable(wd[2], xd[2], yd[2], a.padH, a.strideH, a.dilH);
  live.cropW = croppable(wd[3], xd[3], yd[3], a.padW, a.strideW, a.dilW);
  if (live.cropH == 0 && live.cropW == 0)
    return std::nullopt;
  live.args = a;
  live.args.padH -= static_cast<int>(live.cropH * a.dilH);
  live.args.padW -= static_cast<int>(live.cropW * a.dilW);
  // One tap left on an axis: its dilation no longer matters.
  if (wd[2] - 2 * live.cropH == 1)
    live.args.dilH = 1;
  if (wd[3] - 2 * live.cropW == 1)
    live.args.dilW = 1;
  return live;
}

namespace {

/// w's taps [r0, r1) x [c0, c1), derived once and cached on w.
std::shared_ptr<const Tensor> tapWindow(const Tensor* w, int64_t r0, int64_t r1,
                                        int64_t c0, int64_t c1) {
  std::string key = "taps|"; // (raw bytes: built on every call)
  appendKey(key, r0, r1, c0, c1);
  const Dims4 wd = dims4(w);
  const Dims4 cd{wd[0], wd[1], r1 - r0, c1 - c0};
  return derivedTensor(w, key, cd, [&](const float* from, float* to) {
    for (int64_t plane = 0; plane < wd[0] * wd[1]; ++plane)
      for (int64_t r = 0; r < cd[2]; ++r) {
        const float* row = from + (plane * wd[2] + r + r0) * wd[3] + c0;
        std::copy(row, row + cd[3], to + (plane * cd[2] + r) * cd[3]);
      }
  });
}

/// The bands of an axis; empty where some output position reads only
/// padding.
std::vector<LiveBand> bandsOf(int64_t taps, int64_t in, int64_t out,
                              int64_t pad, int64_t stride, int64_t dil) {
  std::vector<LiveBand> bands;
  for (int64_t o = 0; o < out; ++o) {
    const auto [begin, end] = liveTapsAt(o, taps, in, pad, stride, dil);
    if (begin >= end)
      return {};
    if (!bands.empty() && bands.back().tapBegin == begin &&
        bands.back().tapEnd == end)
      bands.back().outEnd = o + 1;
    else
      bands.push_back({o, o + 1, begin, end});
  }
  return bands;
}

/// Output positions times live taps over an axis's bands.
int64_t tapReads(const std::vector<LiveBand>& bands) {
  int64_t reads = 0;
  for (const LiveBand& b : bands)
    reads += (b.outEnd - b.outBegin) * (b.tapEnd - b.tapBegin);
  return reads;
}

/// The input positions [first, last] band b reads along an axis.
std::pair<int64_t, int64_t> inputSpan(const LiveBand& b, int64_t pad,
                                      int64_t stride, int64_t dil) {
  return {b.outBegin * stride - pad + b.tapBegin * dil,
          (b.outEnd - 1) * stride - pad + (b.tapEnd - 1) * dil};
}

} // namespace

std::shared_ptr<const Tensor> croppedFilter(const Tensor* w, int64_t cropH,
                                            int64_t cropW) {
  const Dims4 wd = dims4(w);
  return tapWindow(w, cropH, wd[2] - cropH, cropW, wd[3] - cropW);
}

std::optional<LiveRegions> liveRegions(const ConvArgs& a, const Dims4& xd,
                                       const Dims4& wd, const Dims4& yd) {
  LiveRegions r;
  r.rows = bandsOf(wd[2], xd[2], yd[2], a.padH, a.strideH, a.dilH);
  r.cols = bandsOf(wd[3], xd[3], yd[3], a.padW, a.strideW, a.dilW);
  if (r.rows.empty() || r.cols.empty() ||
      r.rows.size() * r.cols.size() > kMaxLiveRegions)
    return std::nullopt;
  // (The reads of a region are its rows' times its columns': the total is
  // the product of the axes' totals.)
  const int64_t whole = yd[2] * wd[2] * yd[3] * wd[3];
  if (2 * tapReads(r.rows) * tapReads(r.cols) > whole)
    return std::nullopt;
  return r;
}

namespace {

/// A 4-D f32 descriptor of \p dims in the channel blocking of \p like (8
/// or 16 channels a block, as oneDNN's fp32 kernels keep activations),
/// else plain NCHW.
dnnl::memory::desc sameBlocking(const dnnl::memory::desc& like,
                                const Dims4& dims) {
  using tag = dnnl::memory::format_tag;
  const std::optional<int64_t> block = channelBlock(like);
  const tag t = !block         ? tag::nchw
                : *block == 8  ? tag::nChw8c
                : *block == 16 ? tag::nChw16c
                               : tag::nchw;
  return dnnl::memory::desc({dims[0], dims[1], dims[2], dims[3]},
                            dnnl::memory::data_type::f32, t);
}

/// The part [offset, offset + dims) of memory \p m (spatial dims only), as
/// a memory over the same buffer.
dnnl::memory window(const dnnl::memory& m, const Dims4& dims,
                    const Dims4& offset) {
  return dnnl::memory(
      m.get_desc().submemory_desc({dims[0], dims[1], dims[2], dims[3]},
                                  {offset[0], offset[1], offset[2], offset[3]}),
      engine(), m.get_data_handle());
}

} // namespace

void runConvLiveRegions(const LiveRegions& r, const Tensor* x, const Tensor* w,
                        const ConvArgs& a, const PostOps& post,
                        const KnobSpec& knob, Tensor* y) {
  // Activations stay in the layout they are in: each region's input is a
  // reorder out of x's memory, each region's result a reorder into y's.
  const Dims4 xd = dims4(x), yd = dims4(y);
  const dnnl::memory xm = currentMemory(x);
  PostOps regionPost = post;
  regionPost.bf16Out = false; // (reordered into y's fp32 memory below)
  dnnl::memory ym;
  for (const LiveBand& rb : r.rows)
    for (const LiveBand& cb : r.cols) {
      const auto [r0, r1] = inputSpan(rb, a.padH, a.strideH, a.dilH);
      const auto [c0, c1] = inputSpan(cb, a.padW, a.strideW, a.dilW);
      const Dims4 rd{xd[0], xd[1], r1 - r0 + 1, c1 - c0 + 1};
      OwnedTensor xr(rd);
      reorder(window(xm, rd, {0, 0, r0, c0}),
              outputMemory(&xr.t, sameBlocking(xm.get_desc(), rd)));
      const Dims4 od{yd[0], yd[1], rb.outEnd - rb.outBegin,
                     cb.outEnd - cb.outBegin};
      OwnedTensor yr(od);
      ConvArgs ra = a;
      ra.padH = ra.padW = 0;
      if (rb.tapEnd - rb.tapBegin == 1)
        ra.dilH = 1;
      if (cb.tapEnd - cb.tapBegin == 1)
        ra.dilW = 1;
      const std::shared_ptr<const Tensor> rw =
          tapWindow(w, rb.tapBegin, rb.tapEnd, cb.tapBegin, cb.tapEnd);
      runConv(&xr.t, rw.get(), ra, regionPost, knob, &yr.t);
      const dnnl::memory part = currentMemory(&yr.t);
      if (!ym)
        ym = outputMemory(y, sameBlocking(part.get_desc(), yd));
      reorder(part, window(ym, od, {0, 0, rb.outBegin, cb.outBegin}));
    }
  if (channelBlock(ym.get_desc()) && hasChannelPadding(ym.get_desc()))
    zeroChannelPadding(ym);
}

} // namespace hpvm::rt::kern
