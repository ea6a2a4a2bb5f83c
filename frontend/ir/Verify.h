// Verify.h - IR invariant checks, run after every pass.
#ifndef TORCH2HPVM_FRONTEND_IR_VERIFY_H
#define TORCH2HPVM_FRONTEND_IR_VERIFY_H

#include "ir/Graph.h"

namespace hpvm::fe {

/// Checks the IR invariants: arity of HPVM nodes (Ops.def), 4-D shapes after
/// lowering, user/producer links, no dangling values, topological order.
/// A violation is a bug: it aborts through HPVM_ASSERT.
void verify(const Graph& g);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_IR_VERIFY_H
