// SubBatch.cpp - when and how a launch's batch is split (SubBatch.h).
#include "core/SubBatch.h"

#include "base/Errors.h"
#include "kernels/Primitives.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace hpvm::rt {

namespace {

/// Bytes per element of a group's output as its schedule stores it.
int64_t storedBytes(const Group& g) {
  if (g.quantizeOut != 0)
    return 1;
  return g.bf16Out || g.halfOut ? 2 : 4;
}

} // namespace

BatchFacts batchFactsOf(const Plan& p, const Trace& t) {
  BatchFacts f;
  if (p.rootOutputs.empty())
    return f;
  const int64_t batch = p.ops[p.rootOutputs.front()].out[0];
  if (batch <= 1)
    return f;
  // Each external tensor is images (sliced) or a parameter (shared), never
  // both; every op's output holds the batch's images.
  enum Role : uint8_t { Unused, Images, Parameter };
  std::vector<Role> role(t.ext.size(), Unused);
  auto assign = [&](size_t slot, Role r) {
    if (role[slot] != Unused && role[slot] != r)
      return false;
    role[slot] = r;
    return true;
  };
  for (const TraceOp& op : p.ops) {
    const BatchRole kind = opInfo(op.op).facts->batch;
    if (kind == BatchRole::Whole || op.out[0] != batch)
      return f;
    for (int i = 0; i < op.numIn; ++i) {
      if (op.in[i] >= 0)
        continue;
      const size_t slot = size_t(-op.in[i] - 1);
      const int64_t n = t.extShapes[slot][0];
      const Role r = kind == BatchRole::Params && i > 0       ? Parameter
                     : n == batch                             ? Images
                     : n == 1 && kind == BatchRole::Broadcast ? Parameter
                                                              : Unused;
      if (r == Unused || !assign(slot, r))
        return f;
    }
  }
  for (size_t slot = 0; slot < role.size(); ++slot)
    if (role[slot] == Images)
      f.inputs.push_back(int(slot));
  if (f.inputs.empty())
    return f;
  // The largest input plus output of a group, per image, as stored.
  std::vector<int64_t> width(p.ops.size(), 4);
  for (const Group& g : p.sched.groups) {
    if (g.kind == HpvmOp::Conv &&
        kern::useWinograd(g.knob, g.gate != kNoOperand,
                          convArgs(g.kind, p.ops[size_t(primaryOp(g))].scalars),
                          shapeOf(p, t, g.x), shapeOf(p, t, g.w),
                          p.ops[size_t(g.last)].out))
      f.batchBound = true;
    width[size_t(g.last)] = storedBytes(g);
    const int32_t in = g.x != kNoOperand ? g.x : p.ops[g.members[0]].in[0];
    const int64_t inBytes =
        numElements(shapeOf(p, t, in)) * (in >= 0 ? width[size_t(in)] : 4);
    const int64_t outBytes =
        numElements(p.ops[size_t(g.last)].out) * width[size_t(g.last)];
    f.bytesPerImage = std::max(f.bytesPerImage, (inBytes + outBytes) / batch);
  }
  f.separable = true;
  return f;
}

int64_t subBatchBudgetBytes() {
  static const int64_t budget = [] {
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return 4 * (l2 > 0 ? int64_t(l2) : int64_t(1) << 20);
  }();
  return budget;
}

int64_t subBatchSize(const BatchFacts& f, int64_t batch, int threads) {
  if (!f.separable || batch <= 1)
    return batch;
  if (const char* env = std::getenv("HPVM_RT_SUB_BATCH"); env && *env) {
    char* end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (end != env && !*end && v >= 0)
      return v == 0 ? batch : std::min<int64_t>(batch, v);
    static bool warned = false;
    if (!warned)
      reportWarning("hpvm_rt", std::string("ignoring HPVM_RT_SUB_BATCH='") +
                                   env + "' (not an image count)");
    warned = true;
  }
  if (batch <= kMinSubBatch)
    return batch;
  const int64_t budget = subBatchBudgetBytes() * std::max(1, threads);
  if (f.bytesPerImage * batch <= budget)
    return batch;
  // Each thread computes its share of every layer: where not even
  // kMinSubBatch images per thread fit the budget, slices keep no layer in
  // cache and only cost the whole batch's kernel efficiency; except on one
  // thread, where a layer's call costs no team start, and image by image
  // keeps the smaller layers in cache and a squeeze-and-excitation gate
  // folds into its convolution's filter (batch 1 only), unless a layer
  // runs faster per image on the whole batch (BatchFacts::batchBound).
  const int64_t fits = budget / std::max<int64_t>(1, f.bytesPerImage);
  if (fits < kMinSubBatch * std::max(1, threads) && threads <= 1 &&
      !f.batchBound)
    return 1;
  if (fits < kMinSubBatch * std::max(1, threads) || fits >= batch)
    return batch;
  const int64_t slices = (batch + fits - 1) / fits;
  return (batch + slices - 1) / slices;
}

bool traceWithBatch(const Trace& t, const BatchFacts& f, int64_t n,
                    Trace& out) {
  out.ops = t.ops;
  out.leaves = t.leaves;
  out.ext = t.ext;
  out.extShapes = t.extShapes;
  out.extIndex.clear();
  out.rootOutputs = t.rootOutputs;
  for (int slot : f.inputs)
    out.extShapes[size_t(slot)][0] = n;
  Shape shapes[kMaxTensorArgs];
  for (TraceOp& op : out.ops) {
    for (int i = 0; i < op.numIn; ++i)
      shapes[i] = op.in[i] >= 0 ? out.ops[size_t(op.in[i])].out
                                : out.extShapes[size_t(-op.in[i] - 1)];
    try {
      op.out = inferShape(op.op, shapes, op.numIn, op.scalars, "sub-batch",
                          &out.leaves[size_t(op.leaf)].name);
    } catch (const UserError&) {
      return false;
    }
    if (op.out[0] != n)
      return false;
  }
  return true;
}

} // namespace hpvm::rt
