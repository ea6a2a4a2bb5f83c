// ProtoConversion.cpp - ONNX tensors (raw_data, typed fields, external
// data) and attributes converted to the IR's host data.
#include "onnx/ProtoConversion.h"

#include "ir/Printer.h"
#include "support/Diagnostics.h"
#include "support/InputFile.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace hpvm::fe {

using onnx::AttributeProto;
using onnx::NodeProto;
using onnx::TensorProto;

DataType toDataType(int32_t onnxType) {
  switch (onnxType) {
  case TensorProto::FLOAT:
    return DataType::Float;
  case TensorProto::UINT8:
    return DataType::Uint8;
  case TensorProto::INT8:
    return DataType::Int8;
  case TensorProto::INT32:
    return DataType::Int32;
  case TensorProto::INT64:
    return DataType::Int64;
  case TensorProto::BOOL:
    return DataType::Bool;
  case TensorProto::DOUBLE:
    return DataType::Double;
  case TensorProto::FLOAT16:
    return DataType::Float16;
  case TensorProto::BFLOAT16:
    return DataType::BFloat16;
  default:
    return DataType::Undefined;
  }
}

std::string onnxTypeName(int32_t onnxType) {
  if (TensorProto::DataType_IsValid(onnxType))
    return TensorProto::DataType_Name(
        static_cast<TensorProto::DataType>(onnxType));
  return std::to_string(onnxType) + " (not an ONNX data type)";
}

void checkElementTypes(const onnx::GraphProto& graph, const std::string& path) {
  std::vector<std::string> bad;
  auto check = [&](const char* kind, const std::string& name, int32_t type) {
    if (!TensorProto::DataType_IsValid(type) || type == TensorProto::UNDEFINED)
      bad.push_back(fmt::format("{} '{}' has element type {}", kind,
                                escapeName(name), type));
  };
  auto checkValues = [&](const char* kind, const auto& values) {
    for (const onnx::ValueInfoProto& vi : values)
      if (vi.type().has_tensor_type() &&
          vi.type().tensor_type().has_elem_type())
        check(kind, vi.name(), vi.type().tensor_type().elem_type());
  };
  for (const TensorProto& t : graph.initializer())
    check("initializer", t.name(), t.data_type());
  checkValues("input", graph.input());
  checkValues("output", graph.output());
  checkValues("value_info", graph.value_info());
  if (bad.empty())
    return;
  constexpr size_t kShown = 8;
  std::string list = bad[0];
  for (size_t i = 1; i < std::min(bad.size(), kShown); ++i)
    list += "; " + bad[i];
  if (bad.size() > kShown)
    list += fmt::format("; and {} more", bad.size() - kShown);
  throw UserError(
      fmt::format("{}: {}, which is no ONNX data type", path, list));
}

uint64_t checkedTensorBytes(const std::string& what,
                            const std::vector<int64_t>& dims, size_t elemSize,
                            uint64_t limit) {
  const std::optional<uint64_t> bytes = tensorBytes(dims, elemSize);
  const std::string shape = what + " has shape " + formatShape(dims) + ": ";
  if (!bytes)
    throw UserError(shape + "its size overflows");
  if (*bytes > limit)
    throw UserError(shape + byteSize(*bytes) + ", more than the " +
                    byteSize(limit) + " limit (raise it with --max-size)");
  return *bytes;
}

std::string activationSizeProblem(const std::vector<int64_t>& shape,
                                  uint64_t limit) {
  // 8 bytes an element for the whole: int64 shapes and indices are the
  // widest. An image is all but the first dimension of an activation of
  // rank 2 or more (as Lowering's checkOperandRanges counts it).
  int64_t whole = 8;
  int64_t image = sizeof(float);
  bool wholeOverflows = false, imageOverflows = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t d = std::max<int64_t>(shape[i], 1);
    wholeOverflows |= __builtin_mul_overflow(whole, d, &whole);
    if (i > 0 || shape.size() == 1)
      imageOverflows |= __builtin_mul_overflow(image, d, &image);
  }
  const std::string per = shape.size() > 1 ? " per image" : "";
  const std::string tail = per + ", more than the " + byteSize(limit) +
                           " limit (raise it with --max-size)";
  if (imageOverflows)
    return formatShape(shape) + " takes more bytes than 2^63" + tail;
  if (uint64_t(image) > limit)
    return formatShape(shape) + " takes " + byteSize(uint64_t(image)) + tail;
  if (wholeOverflows)
    return formatShape(shape) +
           " takes more bytes than 2^63 in all (its batch is too large)";
  return "";
}

ExternalData resolveExternal(const TensorProto& t, const std::string& modelDir,
                             const std::string& what, uint64_t bytes) {
  ExternalData ext;
  std::optional<uint64_t> length;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") {
      ext.location = kv.value();
    } else if (kv.key() == "offset" || kv.key() == "length") {
      const std::optional<uint64_t> v = parseCount(kv.value());
      if (!v)
        throw UserError(what + ": external data " + kv.key() + " '" +
                        escapeName(kv.value()) +
                        "' is not a byte count (a non-negative integer)");
      (kv.key() == "offset" ? ext.offset : length.emplace()) = *v;
    }
  }
  if (ext.location.empty())
    throw UserError(what + " is stored externally but names no location");
  if (ext.location[0] == '/' || ext.location.find("..") != std::string::npos)
    throw UserError(what + " has external data location '" +
                    escapeName(ext.location) +
                    "'; it must be a file name relative to the model's "
                    "folder");
  const std::string shown =
      what + ": external data file '" + escapeName(ext.location) + "'";
  const std::optional<std::string> dir =
      canonicalPath(modelDir.empty() ? "." : modelDir);
  const std::optional<std::string> file =
      canonicalPath(modelDir + ext.location);
  if (!dir || !file)
    throw UserError(shown + ": cannot open: No such file or directory");
  if (!isInside(*file, *dir))
    throw UserError(shown + " resolves to '" + escapeName(*file) +
                    "', outside the model's folder '" + escapeName(*dir) +
                    "' (symbolic links may not lead out of it)");
  ext.file = *file;
  if (length && *length != bytes)
    throw UserError(what + ": external data length " + std::to_string(*length) +
                    " does not match its shape (" + std::to_string(bytes) +
                    " bytes)");
  const InputFile in(ext.file, shown);
  if (ext.offset > in.size() || bytes > in.size() - ext.offset)
    throw UserError(shown + " has " + std::to_string(in.size()) +
                    " bytes; the tensor needs " + std::to_string(bytes) +
                    " from offset " + std::to_string(ext.offset));
  return ext;
}

std::shared_ptr<const TensorData> convertTensor(const TensorProto& t,
                                                const std::string& modelDir,
                                                const std::string& what,
                                                uint64_t limit) {
  auto data = std::make_shared<TensorData>();
  data->dtype = toDataType(t.data_type());
  if (data->dtype == DataType::Undefined)
    throw UserError(what + " has element type " + onnxTypeName(t.data_type()) +
                    ", which is not supported");
  for (int64_t d : t.dims()) {
    if (d < 0)
      throw UserError(what + " has a negative dimension");
    data->dims.push_back(d);
  }
  const size_t bytes = static_cast<size_t>(
      checkedTensorBytes(what, data->dims, elementSize(data->dtype), limit));
  const size_t count = bytes / elementSize(data->dtype);

  if (t.data_location() == TensorProto::EXTERNAL) {
    const ExternalData ext = resolveExternal(t, modelDir, what, bytes);
    data->bytes.resize(bytes);
    InputFile(ext.file,
              what + ": external data file '" + escapeName(ext.location) + "'")
        .readAt(ext.offset, data->bytes.data(), bytes);
    return data;
  }

  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    if (raw.size() != bytes)
      throw UserError(what + " has " + std::to_string(raw.size()) +
                      " bytes of raw data; its shape needs " +
                      std::to_string(bytes));
    data->bytes.assign(raw.begin(), raw.end());
    return data;
  }

  // Typed fields: float_data, int32_data (also int8/uint8/bool, and the
  // bits of float16/bfloat16), int64_data, double_data.
  size_t have = 0;
  // (No reserve: the values present bound the allocation, not the
  // declared shape, which is compared with them below.)
  switch (data->dtype) {
  case DataType::Float:
    have = static_cast<size_t>(t.float_data_size());
    for (float v : t.float_data())
      appendValue(data->bytes, v);
    break;
  case DataType::Double:
    have = static_cast<size_t>(t.double_data_size());
    for (double v : t.double_data())
      appendValue(data->bytes, v);
    break;
  case DataType::Int64:
    have = static_cast<size_t>(t.int64_data_size());
    for (int64_t v : t.int64_data())
      appendValue(data->bytes, v);
    break;
  case DataType::Int32:
    have = static_cast<size_t>(t.int32_data_size());
    for (int32_t v : t.int32_data())
      appendValue(data->bytes, v);
    break;
  case DataType::Int8:
  case DataType::Uint8:
  case DataType::Bool:
    have = static_cast<size_t>(t.int32_data_size());
    for (int32_t v : t.int32_data())
      data->bytes.push_back(static_cast<uint8_t>(v));
    break;
  case DataType::Float16:
  case DataType::BFloat16:
    have = static_cast<size_t>(t.int32_data_size());
    for (int32_t v : t.int32_data())
      appendValue(data->bytes, static_cast<uint16_t>(v));
    break;
  case DataType::Undefined:
    break;
  }
  if (have != count)
    throw UserError(what + " has " + std::to_string(have) +
                    " values; its shape needs " + std::to_string(count));
  return data;
}

std::map<std::string, AttrValue>
convertAttributes(const NodeProto& node, std::vector<std::string>& reasons) {
  std::map<std::string, AttrValue> attrs;
  for (const AttributeProto& a : node.attribute()) {
    const std::string& name = a.name();
    switch (a.type()) {
    case AttributeProto::INT:
      attrs[name] = static_cast<int64_t>(a.i());
      break;
    case AttributeProto::FLOAT:
      attrs[name] = static_cast<double>(a.f());
      break;
    case AttributeProto::STRING:
      attrs[name] = a.s();
      break;
    case AttributeProto::INTS:
      attrs[name] = std::vector<int64_t>(a.ints().begin(), a.ints().end());
      break;
    case AttributeProto::FLOATS:
      attrs[name] = std::vector<double>(a.floats().begin(), a.floats().end());
      break;
    case AttributeProto::TENSOR:
      try {
        attrs[name] =
            convertTensor(a.t(), "", "attribute '" + escapeName(name) + "'",
                          kDefaultMaxInputBytes);
      } catch (const UserError& e) {
        reasons.push_back(e.what());
      }
      break;
    default:
      reasons.push_back("attribute '" + escapeName(name) + "' has type " +
                        AttributeProto::AttributeType_Name(a.type()) +
                        ", which is not supported");
    }
  }
  return attrs;
}

} // namespace hpvm::fe
