// PostOps.h - the post-ops of a convolution or inner product (Kernels.h's
// PostOps) fused into its oneDNN primitive, and the residual they add.
#ifndef HPVM_RT_KERNELS_POSTOPS_H
#define HPVM_RT_KERNELS_POSTOPS_H

#include "kernels/Primitives.h"
#include "kernels/TensorImpl.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <string>
#include <unordered_map>

namespace hpvm::rt::kern {

/// True when \p p holds a batch norm.
inline bool hasBn(const PostOps& p) { return p.bnGamma != nullptr; }

/// Checks that a per-channel parameter tensor has C elements.
void checkPerChannel(const Tensor* t, int64_t C, const char* what);

/// Post-ops attr for the activation/residual chain after bias and batch
/// norm; the residual is added as \p how says (\p dst: the layout of the
/// output, which a binary post-op's residual must have); the result
/// multiplied by \p outScale (the last activation's eltwise scale where it
/// may carry it); a sum post-op's residual multiplied by \p sumScale.
dnnl::primitive_attr postOpsAttr(const PostOps& post, ResidualAs how,
                                 const dnnl::memory::desc& dst = {},
                                 bool runtimeScale = false,
                                 float outScale = 1.f, float sumScale = 1.f);

/// The index of the residual's binary add among \p attr's post-ops (the
/// last binary one: an int8_dyn scale comes first, an activation may take
/// two entries), for executeLayer(); 0 where there is none.
int residualPostOpIndex(const dnnl::primitive_attr& attr);

/// The post-ops' part of a primitive's cache key.
std::string postKey(const PostOps& post);

/// Runs conv or inner-product primitive \p p on \p args (which hold its
/// source, weights, bias and destination), adding the residual as p was
/// made to: copied into the destination for a sum post-op, read in place
/// by a binary one. A split residual is left to the caller.
void executeLayer(const Prim& p, const PostOps& post,
                  std::unordered_map<int, dnnl::memory> args);

} // namespace hpvm::rt::kern

#endif // HPVM_RT_KERNELS_POSTOPS_H
