// Graph.cpp - constant tensor access and the Graph's ownership helpers.
#include "ir/Graph.h"

#include "support/Diagnostics.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

namespace hpvm::fe {

size_t elementSize(DataType dtype) {
  switch (dtype) {
  case DataType::Float:
  case DataType::Int32:
    return 4;
  case DataType::Float16:
  case DataType::BFloat16:
    return 2;
  case DataType::Uint8:
  case DataType::Int8:
  case DataType::Bool:
    return 1;
  case DataType::Int64:
  case DataType::Double:
    return 8;
  case DataType::Undefined:
    return 0;
  }
  return 0;
}

namespace {

/// Reads element \p i of \p t as type T from its little-endian bytes.
template <typename T> T load(const TensorData& t, int64_t i) {
  T v;
  std::memcpy(&v, t.bytes.data() + static_cast<size_t>(i) * sizeof(T),
              sizeof(T));
  return v;
}

/// IEEE binary16 bits \p h as a float (exactly: every half is a float).
float halfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13); // infinity, NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    const float v = std::ldexp(float(mantissa), -24);
    return sign ? -v : v;
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// bfloat16 bits \p b as a float (its upper half).
float bf16ToFloat(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

void checkIndex(const TensorData& t, int64_t i) {
  size_t size = elementSize(t.dtype);
  HPVM_ASSERT(size != 0, "constant tensor has an undefined element type");
  HPVM_ASSERT(i >= 0 && static_cast<size_t>(i + 1) * size <= t.bytes.size(),
              "constant element " + std::to_string(i) + " out of range (" +
                  std::to_string(t.bytes.size()) + " bytes)");
}

/// \p v as T; a real number converted to an integer type saturates at its
/// limits (NaN becomes 0): a shape read from a float constant may hold any
/// value, and later checks refuse what is out of range.
template <typename T, typename S> T convertTo(S v) {
  if constexpr (std::is_integral_v<T> && std::is_floating_point_v<S>) {
    if (std::isnan(v))
      return 0;
    if (v >= static_cast<S>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    if (v <= static_cast<S>(std::numeric_limits<T>::min()))
      return std::numeric_limits<T>::min();
  }
  return static_cast<T>(v);
}

/// Element \p i of \p t, whatever its element type, converted to T.
template <typename T> T loadAs(const TensorData& t, int64_t i) {
  checkIndex(t, i);
  switch (t.dtype) {
  case DataType::Float:
    return convertTo<T>(load<float>(t, i));
  case DataType::Double:
    return convertTo<T>(load<double>(t, i));
  case DataType::Float16:
    return convertTo<T>(halfToFloat(load<uint16_t>(t, i)));
  case DataType::BFloat16:
    return convertTo<T>(bf16ToFloat(load<uint16_t>(t, i)));
  case DataType::Int32:
    return static_cast<T>(load<int32_t>(t, i));
  case DataType::Int64:
    return static_cast<T>(load<int64_t>(t, i));
  case DataType::Uint8:
  case DataType::Bool:
    return static_cast<T>(load<uint8_t>(t, i));
  case DataType::Int8:
    return static_cast<T>(load<int8_t>(t, i));
  case DataType::Undefined:
    break;
  }
  HPVM_UNREACHABLE("constant element read with an undefined element type");
}

} // namespace

int64_t TensorData::numElements() const {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

double TensorData::asDouble(int64_t i) const {
  return loadAs<double>(*this, i);
}

int64_t TensorData::asInt(int64_t i) const { return loadAs<int64_t>(*this, i); }

std::vector<float> TensorData::toFloats() const {
  int64_t n = numElements();
  std::vector<float> out(static_cast<size_t>(n));
  if (dtype == DataType::Float) {
    HPVM_ASSERT(bytes.size() == static_cast<size_t>(n) * sizeof(float),
                "float constant has " + std::to_string(bytes.size()) +
                    " bytes for " + std::to_string(n) + " elements");
    if (n > 0)
      std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }
  for (int64_t i = 0; i < n; ++i)
    out[static_cast<size_t>(i)] = static_cast<float>(asDouble(i));
  return out;
}

std::vector<int64_t> TensorData::toInts() const {
  int64_t n = numElements();
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out[static_cast<size_t>(i)] = asInt(i);
  return out;
}

Value* Graph::addValue(std::string name, DataType dtype,
                       std::vector<int64_t> shape) {
  auto value = std::make_unique<Value>();
  value->name = std::move(name);
  value->dtype = dtype;
  value->shape = std::move(shape);
  values_.push_back(std::move(value));
  return values_.back().get();
}

Value* Graph::addConstant(std::string name,
                          std::shared_ptr<const TensorData> data,
                          int initializerIndex) {
  HPVM_ASSERT(data != nullptr, "constant '" + name + "' has no data");
  Value* value = addValue(std::move(name), data->dtype, data->dims);
  value->constant = std::move(data);
  value->initializerIndex = initializerIndex;
  return value;
}

Node* Graph::addNode(OpKind kind, std::vector<Value*> inputs, Value* output,
                     std::vector<Origin> origins, int pos) {
  HPVM_ASSERT(output != nullptr, "node without an output value");
  HPVM_ASSERT(output->producer == nullptr && !output->isConstant(),
              "value '" + output->name + "' already has a producer");
  auto node = std::make_unique<Node>();
  node->kind = kind;
  node->inputs = std::move(inputs);
  node->output = output;
  node->origins = std::move(origins);
  Node* raw = node.get();
  for (Value* in : raw->inputs) {
    HPVM_ASSERT(in != nullptr, "null input of a new node");
    if (std::find(in->users.begin(), in->users.end(), raw) == in->users.end())
      in->users.push_back(raw);
  }
  output->producer = raw;
  if (pos < 0 || static_cast<size_t>(pos) >= nodes_.size())
    nodes_.push_back(std::move(node));
  else
    nodes_.insert(nodes_.begin() + pos, std::move(node));
  return raw;
}

void Graph::replaceAllUses(Value* from, Value* to) {
  HPVM_ASSERT(from != nullptr && to != nullptr, "replaceAllUses with null");
  if (from == to)
    return;
  for (Node* user : from->users) {
    for (Value*& in : user->inputs)
      if (in == from)
        in = to;
    if (std::find(to->users.begin(), to->users.end(), user) == to->users.end())
      to->users.push_back(user);
  }
  from->users.clear();
  for (GraphOutput& o : outputs)
    if (o.value == from)
      o.value = to;
}

void Graph::setInputs(Node* node, std::vector<Value*> inputs) {
  for (Value* in : node->inputs)
    if (in != nullptr) {
      auto& users = in->users;
      users.erase(std::remove(users.begin(), users.end(), node), users.end());
    }
  node->inputs = std::move(inputs);
  for (Value* in : node->inputs) {
    HPVM_ASSERT(in != nullptr, "setInputs with a null operand");
    if (std::find(in->users.begin(), in->users.end(), node) == in->users.end())
      in->users.push_back(node);
  }
}

void Graph::setInput(Node* node, size_t i, Value* v) {
  HPVM_ASSERT(i < node->inputs.size(), "setInput past the operands");
  HPVM_ASSERT(v != nullptr, "setInput with a null operand");
  Value* old = node->inputs[i];
  node->inputs[i] = v;
  if (old != nullptr && std::find(node->inputs.begin(), node->inputs.end(),
                                  old) == node->inputs.end()) {
    auto& users = old->users;
    users.erase(std::remove(users.begin(), users.end(), node), users.end());
  }
  if (std::find(v->users.begin(), v->users.end(), node) == v->users.end())
    v->users.push_back(node);
}

bool Graph::isOutput(const Value* v) const {
  for (const GraphOutput& o : outputs)
    if (o.value == v)
      return true;
  return false;
}

int Graph::position(const Node* node) const {
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].get() == node)
      return static_cast<int>(i);
  HPVM_UNREACHABLE("node not in graph");
}

void Graph::eraseNode(Node* node) {
  HPVM_ASSERT(node != nullptr, "eraseNode(nullptr)");
  HPVM_ASSERT(node->output == nullptr || node->output->users.empty(),
              "erasing a node whose output '" + node->output->name +
                  "' is still used");
  HPVM_ASSERT(!isOutput(node->output), "erasing a graph output's producer");
  for (Value* in : node->inputs) {
    auto& users = in->users;
    users.erase(std::remove(users.begin(), users.end(), node), users.end());
  }
  if (node->output != nullptr)
    node->output->producer = nullptr;
  auto it = std::find_if(nodes_.begin(), nodes_.end(),
                         [node](const auto& n) { return n.get() == node; });
  HPVM_ASSERT(it != nodes_.end(), "eraseNode of a node not in the graph");
  nodes_.erase(it);
}

void Graph::pruneValues() {
  values_.erase(std::remove_if(values_.begin(), values_.end(),
                               [this](const std::unique_ptr<Value>& v) {
                                 return v->users.empty() &&
                                        v->producer == nullptr &&
                                        v.get() != input && !isOutput(v.get());
                               }),
                values_.end());
}

} // namespace hpvm::fe
