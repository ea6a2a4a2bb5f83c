// Elementwise.h - element-wise layers on oneDNN: activations as eltwise
// primitives (and as the eltwise post-ops fused into other layers), and
// the binary add and multiply.
#ifndef HPVM_RT_KERNELS_ELEMENTWISE_H
#define HPVM_RT_KERNELS_ELEMENTWISE_H

#include "kernels/Kernels.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <string>

namespace hpvm::rt::kern {

/// One oneDNN eltwise operation: its algorithm, alpha and beta.
struct EltwiseStep {
  dnnl::algorithm alg = dnnl::algorithm::undef;
  float alpha = 0.f, beta = 0.f;
};

/// An activation as the oneDNN eltwise operations computing it, in order.
struct EltwiseSteps {
  EltwiseStep step[2];
  int count = 0;
};

/// act (lo, hi: its parameters) as oneDNN eltwise operations: one, except
/// for a hard sigmoid, which oneDNN 2.6 lacks (its eltwise_hardswish has
/// the fixed alpha 1/6, beta 1/2): alpha * x + beta, then a clip to
/// [0, 1]. None of them for Act::None.
EltwiseSteps eltwiseSteps(Act a, float lo, float hi);

/// Appends act as eltwise post-ops (nothing for Act::None), each under a
/// name for its function that the chain does not hold with other
/// parameters (oneDNN 2.6 would compute it with those: Elementwise.cpp),
/// the result multiplied by \p scale (oneDNN's eltwise scale; for
/// Act::None, appendScale()). The chain must have room for it
/// (actsChain(), Kernels.h).
void appendAct(dnnl::post_ops& ops, Act a, float lo, float hi,
               float scale = 1.f);

/// Appends a multiplication by \p s as an eltwise post-op: oneDNN's linear
/// (s * x + 0), or where the chain holds a linear with other parameters,
/// its pow (s * x^1).
void appendScale(dnnl::post_ops& ops, float s);

/// "a<act>lo,hi" for cache keys.
std::string actKey(Act a, float lo, float hi);

/// dst = act(src); src and dst have the same layout and may be the same
/// memory. Act::None copies.
void eltwise(const dnnl::memory& src, const dnnl::memory& dst, Act act,
             float lo, float hi);

} // namespace hpvm::rt::kern

#endif // HPVM_RT_KERNELS_ELEMENTWISE_H
