// Plan.cpp - builds a launch's execution plan from its trace: the trace's
// signature, each op's readers, and HPVM's fused nodes (reference section
// 7.1) with their node ids.
#include "core/Plan.h"

#include "hpvm.h"
#include "hpvm_rt/Fusion.h"

#include <cstring>

namespace hpvm::rt {

namespace {

/// The unique op reading op \p i's output if HPVM could fuse it after \p i
/// (section 7.1: sole successor, no other non-constant predecessor, a
/// one-op TENSOR_TARGET leaf like \p i's), else -1.
int fusableSuccessor(const Plan& p, int i) {
  if (p.consumers[i] != 1 || p.isRootOut[i])
    return -1;
  int j = p.consumer[i];
  const LeafRec& li = p.leaves[p.ops[i].leaf];
  const LeafRec& lj = p.leaves[p.ops[j].leaf];
  if (lj.numOps != 1 || lj.hint != hpvm::TENSOR_TARGET || lj.hint != li.hint)
    return -1;
  for (int k = 0; k < p.ops[j].numIn; ++k)
    if (p.ops[j].in[k] >= 0 && p.ops[j].in[k] != i)
      return -1;
  return j;
}

void buildFusedNodes(Plan& p) {
  std::vector<char> done(p.leaves.size(), 0);
  p.fusedOf.assign(p.ops.size(), -1);
  for (size_t l = 0; l < p.leaves.size(); ++l) {
    if (done[l])
      continue;
    done[l] = 1;
    const LeafRec& leaf = p.leaves[l];
    std::vector<int> ops;
    for (int k = 0; k < leaf.numOps; ++k)
      ops.push_back(leaf.firstOp + k);
    if (leaf.numOps == 1 && leaf.hint == hpvm::TENSOR_TARGET) {
      auto next = [&](int i) { return fusableSuccessor(p, i); };
      auto roleOf = [&](int i) { return fuseRole(p.ops[i].op); };
      for (int j : hpvmFusedAfter(leaf.firstOp, next, roleOf)) {
        ops.push_back(j);
        done[p.ops[j].leaf] = 1;
      }
    }
    FusedNodeInfo info;
    info.ordinal = static_cast<int>(p.fused.size()) + 1;
    for (int op : ops) {
      info.ops.push_back(p.ops[op].op);
      const std::string& name = p.leaves[p.ops[op].leaf].name;
      if (info.leafNames.empty() || info.leafNames.back() != name)
        info.leafNames.push_back(name);
      p.fusedOf[op] = static_cast<int>(p.fused.size());
    }
    p.fused.push_back(std::move(info));
    p.fusedOps.push_back(std::move(ops));
  }
  // Node ids: HPVM's currentTensorID is global and never reset, so a fused
  // node whose first leaf sets no id inherits the last one set.
  int current = 0;
  for (size_t f = 0; f < p.fused.size(); ++f) {
    const LeafRec& leaf = p.leaves[p.ops[p.fusedOps[f][0]].leaf];
    if (leaf.hasNodeId) {
      current = leaf.nodeId;
      p.programSetsIds = true;
    }
    p.fused[f].firstOpId = current;
  }
  if (!p.programSetsIds)
    for (FusedNodeInfo& info : p.fused)
      info.firstOpId = 0;
}

} // namespace

std::vector<uint64_t> signatureOf(const Trace& t, api::AnyFn root) {
  std::vector<uint64_t> sig;
  sig.reserve(t.ops.size() * 8 + t.leaves.size() * 4 + 16);
  sig.push_back(reinterpret_cast<uint64_t>(root));
  sig.push_back(t.ops.size());
  for (const TraceOp& op : t.ops) {
    sig.push_back(uint64_t(op.op) | uint64_t(op.numIn) << 8 |
                  uint64_t(op.leaf) << 16);
    for (int i = 0; i < op.numIn; ++i)
      sig.push_back(static_cast<uint32_t>(op.in[i]));
    for (int i = 0; i < opInfo(op.op).facts->scalarArgs; ++i) {
      uint64_t bits;
      std::memcpy(&bits, &op.scalars[i], sizeof bits);
      sig.push_back(bits);
    }
  }
  sig.push_back(t.leaves.size());
  for (const LeafRec& l : t.leaves)
    sig.push_back(uint64_t(uint32_t(l.nodeId)) | uint64_t(l.hasNodeId) << 32 |
                  uint64_t(uint8_t(l.hint)) << 40);
  sig.push_back(t.extShapes.size());
  for (const Shape& s : t.extShapes)
    sig.insert(sig.end(), s.begin(), s.end());
  sig.push_back(t.rootOutputs.size());
  sig.insert(sig.end(), t.rootOutputs.begin(), t.rootOutputs.end());
  return sig;
}

uint64_t hashOf(const std::vector<uint64_t>& sig) {
  uint64_t h = 1469598103934665603ull;
  for (uint64_t v : sig)
    h = (h ^ v) * 1099511628211ull;
  return h;
}

std::unique_ptr<Plan> buildPlan(const Trace& t, api::AnyFn root,
                                std::vector<uint64_t> sig, uint64_t hash) {
  auto p = std::make_unique<Plan>();
  p->root = root;
  p->sig = std::move(sig);
  p->hash = hash;
  p->ops = t.ops;
  p->leaves = t.leaves;
  p->rootOutputs = t.rootOutputs;
  size_t n = t.ops.size();
  p->consumers.assign(n, 0);
  p->consumer.assign(n, -1);
  p->isRootOut.assign(n, 0);
  for (size_t j = 0; j < n; ++j)
    for (int k = 0; k < t.ops[j].numIn; ++k) {
      int32_t c = t.ops[j].in[k];
      if (c >= 0 && p->consumer[c] != static_cast<int>(j)) {
        ++p->consumers[c];
        p->consumer[c] = static_cast<int>(j);
      }
    }
  for (int r : t.rootOutputs) {
    ++p->consumers[r];
    p->isRootOut[r] = 1;
  }
  p->store.assign(n, nullptr);
  p->actual.assign(n, nullptr);
  buildFusedNodes(*p);
  return p;
}

} // namespace hpvm::rt
