// ConvApprox.h - perforated and sampled convolutions (namespace approx)
// as layers: operands prepared for the knob's precision, the post-ops in
// the approximate engine's output pass.
#ifndef HPVM_RT_KERNELS_CONVAPPROX_H
#define HPVM_RT_KERNELS_CONVAPPROX_H

#include "approx/Epilogue.h"
#include "kernels/TensorImpl.h"

#include <optional>

namespace hpvm::rt::kern {

/// The part of an approximate call's BlockedConv that decides whether a
/// blocked engine applies (geometry, knob, numerics, int8 output scales),
/// or nothing where the blocked output does not fit the call (K not in
/// blocks of 16, a residual of other dims).
std::optional<approx::BlockedConv>
blockedShape(const Tensor* x, const Tensor* w, const ConvArgs& a,
             const PostOps& post, const KnobSpec& knob, const Dims4& xd,
             const Dims4& wd, const Dims4& yd);

/// Perforated or sampled convolution on the activations' blocked layout
/// (no NCHW round trip), the post-ops in its output pass. Only where
/// blockedShape() gives a shape its engine applies to.
void convApproxBlocked(const Tensor* x, const Tensor* w, const ConvArgs& a,
                       const PostOps& post, const KnobSpec& knob, Tensor* y,
                       const Dims4& xd, const Dims4& wd, const Dims4& yd);

/// Perforated/sampled convolution on NCHW host data, then the post-ops.
void convApprox(const Tensor* x, const Tensor* w, const ConvArgs& a,
                const PostOps& post, const KnobSpec& knob, Tensor* y,
                const Dims4& xd, const Dims4& wd, const Dims4& yd);

} // namespace hpvm::rt::kern

#endif // HPVM_RT_KERNELS_CONVAPPROX_H
