// ShapeInference.h - the output shapes of the ONNX operators that compute on
// activations, where ONNX's own inference left them unknown.
#ifndef TORCH2HPVM_FRONTEND_PASSES_SHAPEINFERENCE_H
#define TORCH2HPVM_FRONTEND_PASSES_SHAPEINFERENCE_H

#include "ir/Graph.h"

#include <cstdint>
#include <vector>

namespace hpvm::fe {

/// The output shape of ONNX-level node \p n from its inputs' shapes, for
/// the operators that compute on activations; {} if unknown. ONNX's shape
/// inference leaves these unknown where shapes were computed at run time
/// (ShuffleNet's channel split: Slice bounds from Shape arithmetic) until
/// folding makes them constants.
std::vector<int64_t> inferredShape(Node* n, int64_t opset);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_PASSES_SHAPEINFERENCE_H
