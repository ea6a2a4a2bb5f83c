// ConvLiveTaps.h - a convolution whose window has taps that read only
// padding at every output pixel, computed on its live taps alone. An ASPP
// branch is the common case: DeepLabV3's dilations 24 and 36 on a 14x14
// feature map (a 224x224 input) leave only the centre tap reading the
// image, so the 3x3 convolution is a 1x1 one. The window is cropped by
// the same number of dead taps at both ends of an axis and the padding
// reduced by as many dilated steps, so that the output keeps its size:
// the same products but the ones with zeros, at a fraction of the
// arithmetic. Where dead taps are dead only at some output pixels, the
// output splits into regions with a window each (liveRegions()).
#ifndef HPVM_RT_KERNELS_CONVLIVETAPS_H
#define HPVM_RT_KERNELS_CONVLIVETAPS_H

#include "base/KnobSpec.h"
#include "kernels/TensorImpl.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace hpvm::rt::kern {

/// The live part of a window: taps cropped from either end of each axis,
/// and the arguments of the convolution on what is left.
struct LiveTaps {
  int64_t cropH = 0, cropW = 0;
  ConvArgs args;
};

/// The live taps of a convolution (input \p xd, filter \p wd, output
/// \p yd), where cropping them saves arithmetic; nullopt where no dead tap
/// can be cropped (none at both ends of an axis, or the padding too small
/// to give up a step).
std::optional<LiveTaps> liveTaps(const ConvArgs& a, const Dims4& xd,
                                 const Dims4& wd, const Dims4& yd);

/// w (K x C x KH x KW) without \p cropH rows and \p cropW columns of taps
/// at either end. Derived once per version of w and cached on it.
std::shared_ptr<const Tensor> croppedFilter(const Tensor* w, int64_t cropH,
                                            int64_t cropW);

/// Output positions [outBegin, outEnd) along an axis that read the input
/// through the same taps [tapBegin, tapEnd).
struct LiveBand {
  int64_t outBegin, outEnd, tapBegin, tapEnd;
};

/// Where dead taps sit inside the image as well (an ASPP branch's
/// dilation 12 on a 14x14 map: the outer taps read it only from the two
/// rows and columns at either edge), the output split into regions, bands
/// of rows times bands of columns, each computed with the taps live there.
struct LiveRegions {
  std::vector<LiveBand> rows, cols;
};

/// Regions (at most kMaxLiveRegions) in which the convolution takes at
/// most half the arithmetic of its whole window; nullopt where there are
/// none, or an output pixel reads only padding.
std::optional<LiveRegions> liveRegions(const ConvArgs& a, const Dims4& xd,
                                       const Dims4& wd, const Dims4& yd);
constexpr size_t kMaxLiveRegions = 9;

/// The convolution of x (NCHW) by w with \p post (no residual, no gate)
/// computed region by region: each region's input rows and columns copied
/// out, convolved without padding by the filter cropped to its live taps
/// (runConv: the layout and numerics \p knob gives), and written to y.
void runConvLiveRegions(const LiveRegions& r, const Tensor* x, const Tensor* w,
                        const ConvArgs& a, const PostOps& post,
                        const KnobSpec& knob, Tensor* y);

} // namespace hpvm::rt::kern

#endif // HPVM_RT_KERNELS_CONVLIVETAPS_H
