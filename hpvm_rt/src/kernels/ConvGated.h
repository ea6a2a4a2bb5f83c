// ConvGated.h - a convolution whose input is an activation times a
// squeeze-and-excitation gate (one value per channel, batch 1), computed
// as the convolution of the activation itself with the filter scaled by
// the gate per input channel: the same products, each formed as
// x * (g * w) instead of (x * g) * w, without the pass over the whole
// activation that the multiply takes (EfficientNet-B0's and MobileNet
// v3's early blocks, where the gated activation is the block's widest).
#ifndef HPVM_RT_KERNELS_CONVGATED_H
#define HPVM_RT_KERNELS_CONVGATED_H

#include "kernels/TensorImpl.h"

#include <oneapi/dnnl/dnnl.hpp>

namespace hpvm::rt::kern {

/// True where a gate of dims \p gd may be folded so into a convolution
/// (no groups) of input dims \p xd and filter dims \p wd: one image, a
/// gate of 1 x C x 1 x 1 for its C channels, and a filter at most a
/// quarter of the activation's size (K x KH x KW values per input channel
/// against 4 x H x W pixels), so that scaling the filter on every call
/// costs well below scaling the activation.
bool gateFoldsIntoFilter(const Dims4& gd, const Dims4& xd, const Dims4& wd);

/// \p weights (the derived filter of w, K x C x KH x KW in the blocked
/// layout a primitive takes, folded and cached; not Winograd's transform) times
/// \p gate (1 x C x 1 x 1) along C, written into a buffer kept with w's derived
/// weights and reused on every call. (\p weights by value: storing that buffer
/// may move w's derived entries, \p weights' own among them.)
dnnl::memory gatedWeights(const Tensor* w, dnnl::memory weights,
                          const Tensor* gate);

} // namespace hpvm::rt::kern

#endif // HPVM_RT_KERNELS_CONVGATED_H
