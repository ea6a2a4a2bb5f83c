// Fusion.h - HPVM's rule for which tensor ops form one node (reference
// section 7.1), the single definition shared by the exporter (the fused
// groups of ops.json) and the runtime (its execution groups and the node
// numbering that configuration lines refer to).
#ifndef HPVM_RT_FUSION_H
#define HPVM_RT_FUSION_H

#include "hpvm_rt/OpFacts.h"

#include <cstdint>
#include <vector>

namespace hpvm::rt {

/// The ops HPVM fuses after op `first`: a convolution or matrix multiply
/// takes its bias add, then an activation, then (convolution only) a
/// pooling; a convolution's add may also be followed directly by a
/// pooling. `next(i)` is the op that may join op i's node (the sole reader
/// of its output, reading no other computed value, not yet in a node), or
/// -1; `roleOf(i)` is op i's role.
template <typename Next, typename RoleOf>
std::vector<int> hpvmFusedAfter(int first, Next next, RoleOf roleOf) {
  std::vector<int> tail;
  const FuseRole head = roleOf(first);
  if (head != FuseRole::Conv && head != FuseRole::Mul)
    return tail;
  const int add = next(first);
  if (add < 0 || roleOf(add) != FuseRole::Add)
    return tail;
  tail.push_back(add);
  const int b = next(add);
  if (b >= 0 && roleOf(b) == FuseRole::Activation) {
    tail.push_back(b);
    const int c = next(b);
    if (head == FuseRole::Conv && c >= 0 && roleOf(c) == FuseRole::Pool)
      tail.push_back(c);
  } else if (head == FuseRole::Conv && b >= 0 && roleOf(b) == FuseRole::Pool) {
    tail.push_back(b);
  }
  return tail;
}

} // namespace hpvm::rt

#endif // HPVM_RT_FUSION_H
