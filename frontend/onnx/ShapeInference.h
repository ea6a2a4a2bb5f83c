// ShapeInference.h - ONNX shape inference, with checks in front of the ONNX
// inference functions that trust their inputs' shapes.
#ifndef TORCH2HPVM_FRONTEND_ONNX_SHAPEINFERENCE_H
#define TORCH2HPVM_FRONTEND_ONNX_SHAPEINFERENCE_H

#include <onnx/onnx_pb.h>

namespace hpvm::fe {

/// Infers the shapes of \p model's values in place; \p strict checks types
/// and throws on any inconsistency, otherwise inference does what it can. Nodes
/// whose ONNX inference function would read out of bounds on inconsistent
/// shapes (listed in ShapeInference.cpp) are checked first. Throws
/// onnx::InferenceError (or another std::exception).
void inferShapes(onnx::ModelProto& model, bool strict);

} // namespace hpvm::fe

#endif
