// Primitives.h - the layers' oneDNN primitives, created once per problem
// (shapes, layouts, post-ops, thread count) and cached by a key naming it.
#ifndef HPVM_RT_KERNELS_PRIMITIVES_H
#define HPVM_RT_KERNELS_PRIMITIVES_H

#include "kernels/Kernels.h"
#include "kernels/TensorImpl.h"

#include <fmt/compile.h>
#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace hpvm::rt::kern {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

/// True where an exact fp32 convolution of these dims runs on oneDNN's
/// Winograd kernels (F(2x2, 3x3) or F(4x4, 3x3); Convolution.cpp): a CPU
/// with AVX-512 (oneDNN has them for no other), a 3x3 window at stride 1,
/// no groups, 32 or more channels in blocks of 16 in and out, and enough
/// output pixels per batch.
bool winogradApplies(const ConvArgs& a, const Dims4& xd, const Dims4& wd,
                     const Dims4& yd);

/// True where a convolution at \p knob runs as Winograd's minimal
/// filtering (oneDNN's F(2x2, 3x3) or F(4x4, 3x3) on nChw16c): the exact
/// fp32 knob (emulated fp16 and bf16 numerics keep the direct products) on
/// a winogradApplies(), no gate folded in (\p gated: its weights are
/// transformed, not laid out; ConvGated.h scales laid-out ones). The same
/// convolution, its sums rounded differently (within 1e-5 of the direct
/// kernel's on these layers).
bool useWinograd(const KnobSpec& knob, bool gated, const ConvArgs& a,
                 const Dims4& xd, const Dims4& wd, const Dims4& yd);

/// oneDNN's forward-inference convolution of geometry \p a (its dilation
/// counted from 0: oneDNN's d is our d - 1).
dnnl::convolution_forward::desc
convForwardDesc(dnnl::algorithm alg, const dnnl::memory::desc& src,
                const dnnl::memory::desc& weights,
                const dnnl::memory::desc& bias, const dnnl::memory::desc& dst,
                const ConvArgs& a);

/// How a primitive adds PostOps::residual.
enum class ResidualAs : uint8_t {
  Binary, ///< A binary-add post-op reading the residual in place.
  Sum,    ///< A sum post-op: the residual is copied into dst first.
  Split,  ///< A separate add after the primitive (no fast fused kernel).
};

/// A created primitive with the layouts it was created for.
struct Prim {
  dnnl::primitive prim;
  dnnl::memory::desc src, weights, dst;
  ResidualAs residual = ResidualAs::Split;
  int binaryIndex = 0;    ///< Post-op index of the binary add.
  bool reference = false; ///< oneDNN's (slow) reference implementation.
  bool amx = false;       ///< One of oneDNN's AMX implementations.
  bool brgconv = false;   ///< oneDNN's brgemm-based convolution (brgconv).
};

/// True if a primitive descriptor fell back to oneDNN's reference code.
bool isRefImpl(const dnnl::primitive_desc_base& pd);

/// The primitives created so far, by key, and the mutex guarding them
/// (cachedPrim()).
extern std::mutex primMutex;
std::unordered_map<std::string, Prim>& primCache();

/// Returns the cached primitive for \p key, creating it with \p make on
/// first use. oneDNN picks its implementation for the thread count at
/// creation, so every key includes numThreads().
template <typename Make> const Prim& cachedPrim(std::string key, Make make) {
  appendKey(key, numThreads());
  std::lock_guard<std::mutex> lock(primMutex);
  auto it = primCache().find(key);
  if (it != primCache().end())
    return it->second;
  return primCache().emplace(std::move(key), make()).first->second;
}

} // namespace hpvm::rt::kern

#endif // HPVM_RT_KERNELS_PRIMITIVES_H
