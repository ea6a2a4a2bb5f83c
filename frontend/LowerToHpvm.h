// LowerToHpvm.h - the pass pipeline: every simplification pass and the
// lowering, in order, with verify() after each one.
#ifndef TORCH2HPVM_FRONTEND_LOWERTOHPVM_H
#define TORCH2HPVM_FRONTEND_LOWERTOHPVM_H

#include "ir/Graph.h"

#include <cstdint>
#include <functional>
#include <string>

namespace hpvm::fe {

/// Options of lowerToHpvm().
struct PipelineOptions {
  /// Called after every pass with its name (for --dump-ir); may be empty.
  std::function<void(const std::string& pass, const Graph&)> afterPass;
  /// Largest tensor (per image) a lowered node may produce (--max-size).
  uint64_t maxBytes = uint64_t(8) << 30;
};

/// Runs every simplification pass and the lowering, verify() after each one.
/// Afterwards the graph holds only HPVM kinds, in op numbering order. Throws
/// UserError listing every node that cannot be lowered, all at once.
void lowerToHpvm(Graph& g, const PipelineOptions& opts = {});

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_LOWERTOHPVM_H
