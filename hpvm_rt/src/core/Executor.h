// Executor.h - the core's internal interface between graph capture
// (Dataflow.cpp: node functions, wiring, launch) and the tracing executor
// (Executor.cpp: op recording, HPVM fusion, configuration, execution).
#ifndef HPVM_RT_CORE_EXECUTOR_H
#define HPVM_RT_CORE_EXECUTOR_H

#include "Core.h"
#include "hpvm_rt/Dataflow.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hpvm::rt {

/// The node function being executed inside a launch, as the tracer sees it.
struct LeafContext {
  const std::string* name = nullptr; ///< Node function name.
  int hint = 0;                      ///< hpvm::Target of __hpvm__hint.
  int nodeId = 0;                    ///< __hpvm__node_id value.
  bool hasNodeId = false;
  int leafIndex = -1; ///< Index in the trace once it recorded an op.
};

/// The node function being executed inside a launch; nullptr outside.
LeafContext* currentLeafContext();

/// Starts tracing a launch of the graph rooted at \p root.
void traceBegin(api::AnyFn root, const std::string& rootName);
/// Records one op of the current leaf and returns its symbolic result.
void* traceOp(LeafContext& leaf, HpvmOp op, const char* api, int numTensors,
              void* const* tensors, const double* scalars);
/// Ends the trace: plans (or reuses the cached plan), executes it, and
/// replaces symbolic tensors in \p rootOutputs by the computed ones.
void traceEnd(std::vector<api::Value>& rootOutputs);
/// Abandons a trace after an error.
void traceAbort();

/// Number of execution plans the process-wide plan cache built so far (a
/// launch whose trace matches a cached plan builds none); for tests and
/// diagnostics.
int64_t plansBuilt();

/// Evaluates an op eagerly (outside a launch), HPVM's in-place semantics.
void* eagerOp(HpvmOp op, const char* api, int numTensors, void* const* tensors,
              const double* scalars);

} // namespace hpvm::rt

#endif // HPVM_RT_CORE_EXECUTOR_H
