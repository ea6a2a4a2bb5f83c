// Groups.h - a plan's execution groups: each primary op with the post-ops
// that join its kernel call, and each op's record.
#ifndef HPVM_RT_CORE_GROUPS_H
#define HPVM_RT_CORE_GROUPS_H

#include "core/Plan.h"

namespace hpvm::rt {

/// Forms the execution groups of \p p's ops (external operands: trace
/// \p t) under the knobs \p s.knobs (a primary op with the post-ops that
/// may join it), in execution order; with \p foldGates, a
/// squeeze-and-excitation gate's multiply joins the convolution reading
/// its product where that pays (Group::gate).
void formGroups(const Plan& p, const Trace& t, Schedule& s, bool foldGates);
/// Each op's record (shapes, knob, FLOPs) and each group's FLOPs.
void recordOps(const Plan& p, const Trace& t, Schedule& s);

} // namespace hpvm::rt

#endif // HPVM_RT_CORE_GROUPS_H
