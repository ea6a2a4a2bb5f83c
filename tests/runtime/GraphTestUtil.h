// GraphTestUtil.h - helpers of the runtime tests that launch HPVM-C graphs:
// seeded random tensors, a tensor's values, the launch struct of a root
// with one tensor input and one tensor output, and the leaf and root node
// functions of a one-node graph.
#ifndef HPVM_TESTS_RUNTIME_GRAPHTESTUTIL_H
#define HPVM_TESTS_RUNTIME_GRAPHTESTUTIL_H

#include "core/Core.h"
#include "hpvm.h"
#include "tensor_runtime.h"

#include <cstddef>
#include <random>
#include <vector>

namespace hpvm::rt::test {

/// A new NCHW tensor of shape \p s, uniform values in [lo, hi) from \p seed.
inline void* randomTensor(const Shape& s, unsigned seed, float lo, float hi) {
  void* t = create4DTensor(0, nchw, s[0], s[1], s[2], s[3]);
  auto* tensor = static_cast<Tensor*>(t);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  auto* p = static_cast<float*>(tensor->host_data);
  for (size_t i = 0; i < tensor->num_elems; ++i)
    p[i] = dist(gen);
  hostModified(tensor);
  return t;
}

/// The NCHW values of tensor \p t (brought to the host first).
inline std::vector<float> valuesOf(void* t) {
  hpvm_request_tensor(t, 0);
  auto* tensor = static_cast<Tensor*>(t);
  const auto* p = static_cast<const float*>(tensor->host_data);
  return std::vector<float>(p, p + tensor->num_elems);
}

/// The launch struct of a root taking one tensor and returning one.
struct __attribute__((__packed__)) OneIn {
  void* x;
  size_t xBytes;
  struct {
    void* tensor;
    size_t bytes;
  } r;
};

/// A leaf node (TENSOR_TARGET) returning \p Graph of its one tensor input.
template <void* (*Graph)(void*)> void leafOf(void* x, size_t) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  void* r = Graph(x);
  __hpvm__return(2, r, (size_t)0);
}

/// A root node (OneIn's launch struct) running the leaf node \p Leaf on
/// its tensor and returning the leaf's.
template <void (*Leaf)(void*, size_t)> void rootOf(void*, size_t) {
  __hpvm__hint(hpvm::CPU_TARGET);
  void* n = __hpvm__createNodeND(0, Leaf);
  __hpvm__bindIn(n, 0, 0, 0);
  __hpvm__bindIn(n, 1, 1, 0);
  __hpvm__bindOut(n, 0, 0, 0);
  __hpvm__bindOut(n, 1, 1, 0);
}

} // namespace hpvm::rt::test

#endif // HPVM_TESTS_RUNTIME_GRAPHTESTUTIL_H
