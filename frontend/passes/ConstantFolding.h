// ConstantFolding.h - the fold-constants pass.
#ifndef TORCH2HPVM_FRONTEND_PASSES_CONSTANTFOLDING_H
#define TORCH2HPVM_FRONTEND_PASSES_CONSTANTFOLDING_H

#include "ir/Graph.h"

namespace hpvm::fe {

/// Evaluates Constant nodes and shape computations (Shape, Gather,
/// Unsqueeze, Squeeze, Concat, Cast, Reshape, ConstantOfShape, Equal, Where,
/// Expand, Mod, Not, Range, ScatterND and arithmetic of constants) into
/// constants,
/// and resolves the target shape of Reshape nodes whose shape became known.
void foldConstants(Graph& g);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_PASSES_CONSTANTFOLDING_H
