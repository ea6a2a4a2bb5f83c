// ModelLoader.h - read an ONNX model (.onnx or .onnxtxt) into an ONNX-level
// Graph.
#ifndef TORCH2HPVM_FRONTEND_ONNX_MODELLOADER_H
#define TORCH2HPVM_FRONTEND_ONNX_MODELLOADER_H

#include "ir/Graph.h"
#include "support/InputFile.h"

#include <cstdint>
#include <memory>
#include <string>

namespace hpvm::fe {

/// How to load a model.
struct LoadOptions {
  /// Default-domain opset to convert the model to first; 0 keeps the model's.
  int64_t targetOpset = 0;
  /// Largest model file, and largest tensor (initializer, or activation
  /// per image), in bytes.
  uint64_t maxBytes = kDefaultMaxInputBytes;
  /// --input-shape: dims of input \p inputShapeName ("" = the one input)
  /// replacing symbolic ones (a symbolic batch is read as 1 whether given or
  /// not: programs take any batch); empty: none given.
  std::string inputShapeName;
  std::vector<int64_t> inputShape;
  /// The dataset inputShape came from ("the tune set 'x.npy' (8x3x64x64)"),
  /// "" when --input-shape gave it (see fixInputShape()).
  std::string inputShapeFrom;
};

/// Loads \p path: binary ONNX, or protobuf text format when the name ends in
/// ".onnxtxt". Pre-scans every node for unsupported operators and attribute
/// values, runs the ONNX checker, the optional version conversion and shape
/// inference, and builds the ONNX-level IR (kinds Onnx*). An unsupported node
/// ONNX knows becomes a Refused node, its reasons in Graph::refusals, for
/// lowerToHpvm() to report with lowering's (one refusal for both stages).
/// Throws UserError (one error listing every problem it finds); nothing else
/// escapes.
std::unique_ptr<Graph> loadModel(const std::string& path,
                                 const LoadOptions& opts);

/// loadModel() of a model already read into \p bytes; \p path names it in
/// messages, picks the format by its extension and locates external data.
std::unique_ptr<Graph> loadModelBytes(std::string bytes,
                                      const std::string& path,
                                      const LoadOptions& opts);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_ONNX_MODELLOADER_H
