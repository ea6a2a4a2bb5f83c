// GraphTestUtil.h - helpers of the runtime tests that launch HPVM-C graphs:
// seeded random tensors, a tensor's values, the launch struct of a root
// with one tensor input and one tensor output.
#ifndef HPVM_TESTS_RUNTIME_GRAPHTESTUTIL_H
#define HPVM_TESTS_RUNTIME_GRAPHTESTUTIL_H

#include "core/Core.h"
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

} // namespace hpvm::rt::test

#endif // HPVM_TESTS_RUNTIME_GRAPHTESTUTIL_H
