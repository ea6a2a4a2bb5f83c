// ConstantTensors.h - making and indexing the constant tensors that the
// passes compute when compiling (folded values, rewritten weights).
#ifndef TORCH2HPVM_FRONTEND_PASSES_CONSTANTTENSORS_H
#define TORCH2HPVM_FRONTEND_PASSES_CONSTANTTENSORS_H

#include "ir/Graph.h"

#include <cstring>
#include <memory>
#include <vector>

namespace hpvm::fe {

/// An int64 tensor of dims \p dims holding \p values.
std::shared_ptr<TensorData> intTensor(const std::vector<int64_t>& values,
                                      std::vector<int64_t> dims);

/// A float32 tensor of dims \p dims holding \p values.
std::shared_ptr<TensorData> floatTensor(const std::vector<float>& values,
                                        std::vector<int64_t> dims);

/// A copy of \p t with new dims (same element count, same bytes).
std::shared_ptr<TensorData> withDims(const TensorData& t,
                                     std::vector<int64_t> dims);

/// NumPy broadcasting of dims \p a and \p b: both right-aligned to the
/// larger rank (padded with 1s) in place, and \p out their broadcast
/// shape; false if they do not broadcast.
bool broadcastDims(std::vector<int64_t>& a, std::vector<int64_t>& b,
                   std::vector<int64_t>& out);

/// Advances \p index to the next multi-index of \p dims in row-major
/// order (the last dimension fastest).
/// (Inline: the folding calls it once per element.)
inline void nextIndex(std::vector<int64_t>& index,
                      const std::vector<int64_t>& dims) {
  for (size_t d = index.size(); d-- > 0;)
    if (++index[d] < dims[d])
      return;
    else
      index[d] = 0;
}

/// A tensor of \p data's type and dims \p outDims whose element at each
/// multi-index comes from \p data at the flat index \p source(index).
template <class Source>
std::shared_ptr<const TensorData> gatherElements(const TensorData& data,
                                                 std::vector<int64_t> outDims,
                                                 Source source) {
  auto t = std::make_shared<TensorData>();
  t->dtype = data.dtype;
  t->dims = std::move(outDims);
  const size_t size = elementSize(data.dtype);
  const int64_t count = t->numElements();
  t->bytes.resize(static_cast<size_t>(count) * size);
  std::vector<int64_t> index(t->dims.size(), 0);
  for (int64_t o = 0; o < count; ++o) {
    std::memcpy(t->bytes.data() + static_cast<size_t>(o) * size,
                data.bytes.data() + static_cast<size_t>(source(index)) * size,
                size);
    nextIndex(index, t->dims);
  }
  return t;
}

/// Row-major strides of \p dims.
std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims);

/// The flat index into a tensor of dims \p in, broadcast as NumPy does to
/// dims \p out (right-aligned, dims of size 1 repeated), of each
/// multi-index of \p out; \p in must broadcast to \p out.
struct BroadcastSource {
  std::vector<int64_t> dims, strides;
  BroadcastSource(std::vector<int64_t> in, size_t rank) : dims(std::move(in)) {
    dims.insert(dims.begin(), rank - dims.size(), 1);
    strides = stridesOf(dims);
  }
  int64_t operator()(const std::vector<int64_t>& index) const {
    int64_t s = 0;
    for (size_t d = 0; d < dims.size(); ++d)
      s += (dims[d] == 1 ? 0 : index[d]) * strides[d];
    return s;
  }
};

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_PASSES_CONSTANTTENSORS_H
