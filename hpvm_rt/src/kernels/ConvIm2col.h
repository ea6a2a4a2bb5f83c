// ConvIm2col.h - exact bf16 convolutions of small outputs on AMX as an
// im2col matrix and one inner product: oneDNN's AMX brgconv computes such
// outputs a few pixels at a time (one output row per tile pass), while the
// inner product's rows are every pixel of the batch.
#ifndef HPVM_RT_KERNELS_CONVIM2COL_H
#define HPVM_RT_KERNELS_CONVIM2COL_H

#include "kernels/Primitives.h"
#include "kernels/TensorImpl.h"

namespace hpvm::rt::kern {

/// True when runConvIm2colBf16 computes this exact bf16 convolution: an AMX
/// CPU (oneDNN's AMX inner product), not grouped, no residual.
bool convIm2colBf16Applies(const ConvArgs& a, const PostOps& post,
                           const KnobSpec& knob);

/// The inner product computing such a convolution, cached; null unless
/// it is one of oneDNN's AMX implementations.
const Prim* im2colPrim(const PostOps& post, const Dims4& xd, const Dims4& wd,
                       const Dims4& yd);

/// The convolution (with \p p from im2colPrim) as y(NHWC) =
/// im2col(x)(N*Ho*Wo x KH*KW*C) * w^T: x read as bf16 NHWC, the weights (bias
/// and batch norm folded) reordered once, the post-ops fused into the inner
/// product; y stored as bf16 NHWC when post.bf16Out, else f32 NHWC.
void runConvIm2colBf16(const Prim& p, const Tensor* x, const Tensor* w,
                       const ConvArgs& a, const PostOps& post, Tensor* y,
                       const Dims4& xd, const Dims4& wd, const Dims4& yd);

} // namespace hpvm::rt::kern

#endif // HPVM_RT_KERNELS_CONVIM2COL_H
