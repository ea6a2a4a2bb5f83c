// ModelInput.h - the model's input as the exporter reads it: its type and
// shape, --input-shape's fixing of symbolic dims, and what is wrong with it
// (one problem, named, with the way forward).
#ifndef TORCH2HPVM_FRONTEND_ONNX_MODELINPUT_H
#define TORCH2HPVM_FRONTEND_ONNX_MODELINPUT_H

#include "ir/Graph.h"

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace hpvm::fe {

/// Shape and element type recorded by shape inference for one value.
struct TypeInfo {
  DataType dtype = DataType::Undefined;
  std::vector<int64_t> shape; ///< -1 for unknown or symbolic dimensions.
  bool known = false;         ///< Rank known.
};

TypeInfo typeInfo(const onnx::TypeProto& type);

/// "shape 1x3x?x?", "a scalar" or "unknown shape", for messages.
std::string describeShape(const TypeInfo& info);

/// The --input-shape value suggesting \p info's dims: fixed ones as they
/// are, the batch 1, the others H and W ("1x3xHxW").
std::string givenShape(const TypeInfo& info);

/// --input-shape: the dims of input \p name ("" = the one graph input that
/// is no initializer) become \p dims where the model leaves them symbolic;
/// a fixed dim must agree; a symbolic batch is left to
/// readSymbolicBatchAsOne(). \p from names
/// a dataset whose images gave the dims ("" = --input-shape): then fixed
/// dims are left as they are (the dataset check compares the images with
/// them), and N x 1 x H x W images fit an N x H x W input.
void fixInputShape(onnx::ModelProto& model, const std::string& path,
                   const std::string& name, std::vector<int64_t> dims,
                   const std::string& from = "");

/// Reads a symbolic batch of the model's one input as 1: every shape
/// computation (a Reshape's target, ViT's class token expanded to the
/// batch, attention's head cut) then folds as in a batch-1 export, whose
/// program runs at any batch: a program's batch is its run's, never the
/// model's. Does nothing to a model of several inputs, or to an input with
/// another symbolic dim (both refused, described as the model has them).
void readSymbolicBatchAsOne(onnx::ModelProto& model);

/// The graph inputs that are no initializer (the model's inputs proper).
std::vector<const onnx::ValueInfoProto*>
modelInputs(const onnx::GraphProto& graph);

/// What makes \p inputs unusable as torch2hpvm's one input ("the model has
/// 2 inputs ...", "input 'x' is float16 ...", "input 'x' has shape
/// 1x3x?x?; only the batch dimension may be symbolic (give --input-shape
/// ...)"), without the path; "" when nothing does.
std::string
inputProblem(const std::vector<const onnx::ValueInfoProto*>& inputs);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_ONNX_MODELINPUT_H
