// Memory.h - where a plan's outputs live: channel views of
// concatenations' buffers (zero-copy concatenation) and which buffers are
// kept for the next launch or freed after their last use.
#ifndef HPVM_RT_CORE_MEMORY_H
#define HPVM_RT_CORE_MEMORY_H

#include "core/Plan.h"

#include <cstdint>

namespace hpvm::rt {

/// Above this many bytes of intermediate storage (default 3 GiB, or
/// HPVM_RT_KEEP_BYTES) a plan frees each buffer after its last use instead
/// of keeping it for the next launch, and plans cached for other shapes
/// drop their buffers.
int64_t keepStorageBytes();

/// Places the outputs of \p p's groups (external operands: trace \p t) as
/// channels of the concatenations they feed, when \p enabled (see
/// Memory.cpp for the rules).
void planChannelViews(const Plan& p, const Trace& t, Schedule& s, bool enabled);
/// Which buffers each group's output uses, and which it frees after running
/// when keeping every intermediate buffer would take more than \p keepBytes.
void planStorage(const Plan& p, Schedule& s, int64_t keepBytes);

} // namespace hpvm::rt

#endif // HPVM_RT_CORE_MEMORY_H
