// ConvDepthwise.h - depthwise convolutions on our AVX-512 kernel
// (approx/DepthwiseConv.h) where it saves a reorder: the input is stored in
// another type or layout than oneDNN's kernel for the knob takes (an fp32
// result read by a bf16 depthwise layer, as after a first layer computed in
// fp32; a bf16 result read by an fp32 one), so that the kernel reads it in
// place, converting as it loads.
#ifndef HPVM_RT_KERNELS_CONVDEPTHWISE_H
#define HPVM_RT_KERNELS_CONVDEPTHWISE_H

#include "approx/DepthwiseConv.h"
#include "kernels/Kernels.h"
#include "kernels/TensorImpl.h"

#include <optional>

namespace hpvm::rt::kern {

/// Where runConvDepthwise computes this exact convolution under \p knob
/// (fp32, or bf16): depthwise, channels in blocks of 16, no residual, an
/// activation the kernel has, and x stored (fp32 or bf16, nChw16c or
/// NHWC) in another form than oneDNN's kernel would read: x as stored, for
/// runConvDepthwise. Elsewhere none.
std::optional<approx::ChannelBlocks>
convDepthwiseInput(const Tensor* x, const ConvArgs& a, const PostOps& post,
                   const KnobSpec& knob, const Dims4& xd, const Dims4& wd);

/// The convolution with DepthwiseConv.h's numerics: x read where it is
/// stored (\p in, from convDepthwiseInput); the filter with bias and batch
/// norm folded in (and rounded to bf16 under bf16); y as the knob's oneDNN
/// kernels would write it (fp32 nChw16c; bf16 knobs: NHWC on AMX, bf16
/// with post.bf16Out).
void runConvDepthwise(const approx::ChannelBlocks& in, const Tensor* w,
                      const ConvArgs& a, const PostOps& post,
                      const KnobSpec& knob, Tensor* y, const Dims4& xd,
                      const Dims4& wd, const Dims4& yd);

} // namespace hpvm::rt::kern

#endif // HPVM_RT_KERNELS_CONVDEPTHWISE_H
