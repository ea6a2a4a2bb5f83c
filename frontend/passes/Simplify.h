// Simplify.h - the passes that remove what HPVM needs no code for.
#ifndef TORCH2HPVM_FRONTEND_PASSES_SIMPLIFY_H
#define TORCH2HPVM_FRONTEND_PASSES_SIMPLIFY_H

#include "ir/Graph.h"

namespace hpvm::fe {

/// Removes nodes that do not contribute to the graph output.
void eliminateDeadNodes(Graph& g);
/// Removes Identity and inference-mode Dropout nodes.
void removeIdentities(Graph& g);
/// Folds zero-valued constant Pad nodes into the Conv or pool they feed,
/// where that computes the same result (see the comment of canFoldPad).
void foldPads(Graph& g);
/// Aliases Flatten/Reshape away where HPVM needs no code: flattening NCHW to
/// (N, C*H*W) right before Gemm/MatMul, or a reshape that keeps the 4-D
/// form (N, C, H, W) of its input.
void aliasReshapes(Graph& g);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_PASSES_SIMPLIFY_H
