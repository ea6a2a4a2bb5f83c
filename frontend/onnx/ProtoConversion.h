// ProtoConversion.h - ONNX protobuf tensors and attributes converted to the
// IR's host data (TensorData, AttrValue), with their size and external-data
// checks.
#ifndef TORCH2HPVM_FRONTEND_ONNX_PROTOCONVERSION_H
#define TORCH2HPVM_FRONTEND_ONNX_PROTOCONVERSION_H

#include "ir/Graph.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hpvm::fe {

/// Our DataType for an ONNX element type, Undefined if unsupported.
DataType toDataType(int32_t onnxType);

/// The name of ONNX element type \p onnxType ("FLOAT16"), or "<n> (not an
/// ONNX data type)".
std::string onnxTypeName(int32_t onnxType);

/// Refuses (UserError naming \p path and each tensor, every one at once)
/// initializers, inputs, outputs and value_info whose element type is no
/// ONNX data type, which ONNX's shape inference reports naming none.
void checkElementTypes(const onnx::GraphProto& graph, const std::string& path);

/// Appends \p v as \p n little-endian bytes.
template <typename T> void appendValue(std::vector<uint8_t>& out, T v) {
  uint8_t buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out.insert(out.end(), buf, buf + sizeof(T));
}

/// The bytes of initializer or attribute tensor \p what of \p dims and
/// element size \p elemSize, refused (UserError) when they overflow or
/// exceed \p limit.
uint64_t checkedTensorBytes(const std::string& what,
                            const std::vector<int64_t>& dims, size_t elemSize,
                            uint64_t limit);

/// What is wrong with the size of an activation of \p shape (the input, or
/// the output of a node as shape inference gave it), as "AxB takes ...", or
/// "": an image (all but the first dimension) of more than \p limit bytes,
/// or a size that overflows (an unknown or zero dimension taken as 1).
/// Checked when the IR is built, so that passes may multiply any of an
/// activation's dimensions.
std::string activationSizeProblem(const std::vector<int64_t>& shape,
                                  uint64_t limit);

/// Where an initializer's external data is, checked: a file inside the
/// model's folder after resolving symlinks, regular, holding the tensor's
/// \p bytes at its offset.
struct ExternalData {
  std::string location; ///< As the model names it.
  std::string file;     ///< Canonical path.
  uint64_t offset = 0;
};

/// The checked location of \p t's external data in \p modelDir; \p what
/// names the tensor in errors, \p bytes is its size.
ExternalData resolveExternal(const onnx::TensorProto& t,
                             const std::string& modelDir,
                             const std::string& what, uint64_t bytes);

/// Converts \p t (raw_data, typed fields or external data) into host data.
/// \p modelDir resolves external data; \p what names the tensor in errors;
/// a tensor larger than \p limit bytes is refused before anything is read.
std::shared_ptr<const TensorData> convertTensor(const onnx::TensorProto& t,
                                                const std::string& modelDir,
                                                const std::string& what,
                                                uint64_t limit);

/// Converts the attributes of \p node; unsupported attribute types are
/// reported through \p reasons.
std::map<std::string, AttrValue>
convertAttributes(const onnx::NodeProto& node,
                  std::vector<std::string>& reasons);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_ONNX_PROTOCONVERSION_H
