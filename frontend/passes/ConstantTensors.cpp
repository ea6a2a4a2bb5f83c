// ConstantTensors.cpp - see ConstantTensors.h.
#include "passes/ConstantTensors.h"

#include <algorithm>

namespace hpvm::fe {

std::shared_ptr<TensorData> intTensor(const std::vector<int64_t>& values,
                                      std::vector<int64_t> dims) {
  auto t = std::make_shared<TensorData>();
  t->dtype = DataType::Int64;
  t->dims = std::move(dims);
  t->bytes.resize(values.size() * sizeof(int64_t));
  if (!values.empty())
    std::memcpy(t->bytes.data(), values.data(), t->bytes.size());
  return t;
}

std::shared_ptr<TensorData> floatTensor(const std::vector<float>& values,
                                        std::vector<int64_t> dims) {
  auto t = std::make_shared<TensorData>();
  t->dtype = DataType::Float;
  t->dims = std::move(dims);
  t->bytes.resize(values.size() * sizeof(float));
  if (!values.empty())
    std::memcpy(t->bytes.data(), values.data(), t->bytes.size());
  return t;
}

std::shared_ptr<TensorData> withDims(const TensorData& t,
                                     std::vector<int64_t> dims) {
  auto out = std::make_shared<TensorData>(t);
  out->dims = std::move(dims);
  return out;
}

bool broadcastDims(std::vector<int64_t>& a, std::vector<int64_t>& b,
                   std::vector<int64_t>& out) {
  const size_t rank = std::max(a.size(), b.size());
  a.insert(a.begin(), rank - a.size(), 1);
  b.insert(b.begin(), rank - b.size(), 1);
  out.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    if (a[i] != b[i] && a[i] != 1 && b[i] != 1)
      return false;
    out[i] = a[i] == 1 ? b[i] : a[i];
  }
  return true;
}

std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;)
    s[d - 1] = s[d] * dims[d];
  return s;
}

} // namespace hpvm::fe
