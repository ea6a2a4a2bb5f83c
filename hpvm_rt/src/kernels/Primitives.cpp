// Primitives.cpp - the cache of the layers' oneDNN primitives.
#include "kernels/Primitives.h"

#include <cstring>

namespace hpvm::rt::kern {

bool isRefImpl(const dnnl::primitive_desc_base& pd) {
  return std::strncmp(pd.impl_info_str(), "ref", 3) == 0;
}

std::mutex primMutex;
std::unordered_map<std::string, Prim>& primCache() {
  static std::unordered_map<std::string, Prim> cache;
  return cache;
}

} // namespace hpvm::rt::kern
