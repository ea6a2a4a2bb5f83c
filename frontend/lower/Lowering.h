// Lowering.h - turning the ONNX-level nodes left after the passes into HPVM
// tensor ops, and checking the operands the generated program computes with.
#ifndef TORCH2HPVM_FRONTEND_LOWER_LOWERING_H
#define TORCH2HPVM_FRONTEND_LOWER_LOWERING_H

#include "ir/Graph.h"

#include <cstdint>

namespace hpvm::fe {

/// Turns every remaining ONNX-level node into HPVM ops (Conv and Gemm bias
/// become a separate Add). Throws UserError listing every node that cannot
/// be lowered.
void lowerNodes(Graph& g);

/// Checks what the generated program will compute with, node by node (one
/// UserError listing them all): every integer operand fits the intrinsic's
/// `int`, and every output takes at most \p maxBytes per image.
void checkOperandRanges(const Graph& g, uint64_t maxBytes);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_LOWER_LOWERING_H
