// Primitives.cpp - the cache of the layers' oneDNN primitives.
#include "kernels/Primitives.h"

#include <cstring>

namespace hpvm::rt::kern {

dnnl::convolution_forward::desc
convForwardDesc(dnnl::algorithm alg, const dnnl::memory::desc& src,
                const dnnl::memory::desc& weights,
                const dnnl::memory::desc& bias, const dnnl::memory::desc& dst,
                const ConvArgs& a) {
  return dnnl::convolution_forward::desc(
      dnnl::prop_kind::forward_inference, alg, src, weights, bias, dst,
      {a.strideH, a.strideW}, {a.dilH - 1, a.dilW - 1}, {a.padH, a.padW},
      {a.padH, a.padW});
}

bool isRefImpl(const dnnl::primitive_desc_base& pd) {
  return std::strncmp(pd.impl_info_str(), "ref", 3) == 0;
}

std::mutex primMutex;
std::unordered_map<std::string, Prim>& primCache() {
  static std::unordered_map<std::string, Prim> cache;
  return cache;
}

} // namespace hpvm::rt::kern
