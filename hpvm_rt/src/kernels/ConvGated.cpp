// ConvGated.cpp - a convolution's filter scaled by the squeeze-and-
// excitation gate of its input (ConvGated.h), in the primitive's layout.
#include "kernels/ConvGated.h"

#include "base/Errors.h"
#include "kernels/DerivedWeights.h"
#include "kernels/Kernels.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hpvm::rt::kern {

namespace {

/// Filters of this many elements or more are scaled on every thread.
constexpr int64_t kParallelElems = 1 << 16;

/// A gated filter's buffer and, per element, 1 + its input channel (0: a
/// padding element), kept as a derived entry of the layer's filter.
struct GateScratch {
  std::vector<int32_t> channelOf;
  std::shared_ptr<void> storage;
};

/// For each element of a filter in a primitive's layout, 1 + its input
/// channel (0 for a padding element); found by reordering a filter whose
/// values are those numbers.
std::vector<int32_t> channelMap(const dnnl::memory::desc& want) {
  const dnnl::memory::dims d = want.dims();
  const int64_t K = d[0], C = d[1], window = d[2] * d[3];
  std::vector<float> numbered(static_cast<size_t>(K * C * window));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < C; ++c)
      std::fill_n(numbered.begin() + (k * C + c) * window, window,
                  static_cast<float>(c + 1));
  dnnl::memory plain(
      {d, dnnl::memory::data_type::f32, dnnl::memory::format_tag::oihw},
      engine(), numbered.data());
  dnnl::memory laid(want, engine());
  reorder(plain, laid);
  const size_t n = want.get_size() / sizeof(float);
  const auto* v = static_cast<const float*>(laid.get_data_handle());
  std::vector<int32_t> map(n);
  for (size_t i = 0; i < n; ++i)
    map[i] = static_cast<int32_t>(v[i]);
  return map;
}

} // namespace

bool gateFoldsIntoFilter(const Dims4& gd, const Dims4& xd, const Dims4& wd) {
  return xd[0] == 1 && gd[0] == 1 && gd[1] == xd[1] && gd[2] == 1 &&
         gd[3] == 1 && wd[1] == xd[1] &&
         4 * wd[0] * wd[2] * wd[3] <= xd[2] * xd[3];
}

dnnl::memory gatedWeights(const Tensor* w, dnnl::memory weights,
                          const Tensor* gate) {
  const dnnl::memory::desc want = weights.get_desc();
  HPVM_ASSERT(want.data_type() == dnnl::memory::data_type::f32 &&
                  want.dims().size() == 4 &&
                  want.data.format_kind == dnnl_blocked,
              "gated weights need a 4-D f32 filter in a blocked layout");
  TensorImpl& impl = implOf(w);
  std::string key = "gated|";
  appendKey(key, descKey(want));
  const TensorImpl::Derived* entry = findDerived(impl, key);
  if (entry == nullptr) {
    TensorImpl::Derived d;
    d.key = std::move(key);
    d.weights = weightMemory(want, d);
    auto scratch = std::make_shared<GateScratch>();
    scratch->channelOf = channelMap(want);
    scratch->storage = std::move(d.buffer);
    d.buffer = scratch;
    entry = &storeDerived(impl, std::move(d));
  }
  const auto& scratch = *static_cast<const GateScratch*>(entry->buffer.get());
  // 0 for the padding, then the gate's values.
  const int64_t C = want.dims()[1];
  const float* g = hostData(gate);
  std::vector<float> byIndex(static_cast<size_t>(C + 1), 0.f);
  std::copy(g, g + C, byIndex.begin() + 1);
  const auto* from = static_cast<const float*>(weights.get_data_handle());
  auto* to = static_cast<float*>(entry->weights.get_data_handle());
  const int32_t* channel = scratch.channelOf.data();
  const float* gates = byIndex.data();
  const int64_t n = static_cast<int64_t>(scratch.channelOf.size());
#pragma omp parallel for simd schedule(static) if (n >= kParallelElems)
  for (int64_t i = 0; i < n; ++i)
    to[i] = from[i] * gates[channel[i]];
  return entry->weights;
}

} // namespace hpvm::rt::kern
