// Plan.h - the tracing executor's data: the trace a launch records, the
// execution plan built from it (HPVM's fused nodes) and the schedule of
// execution groups and buffers a configuration gives the plan.
#ifndef HPVM_RT_CORE_PLAN_H
#define HPVM_RT_CORE_PLAN_H

#include "config/Match.h"
#include "core/Core.h"
#include "core/Launch.h"
#include "hpvm_rt/Dataflow.h"

#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace hpvm::rt {

/// Operand code: >= 0 is the output of that op; < 0 is external tensor
/// slot -(code + 1); kNoOperand is none.
constexpr int32_t kNoOperand = INT32_MIN;

/// One recorded op call.
struct TraceOp {
  HpvmOp op;
  int leaf; ///< Index in Trace::leaves.
  int numIn;
  int32_t in[kMaxTensorArgs];
  double scalars[kMaxScalarArgs];
  Shape out;
};

/// One leaf node function that ran ops, in execution order.
struct LeafRec {
  std::string name;
  int hint;
  int nodeId;
  bool hasNodeId;
  int firstOp;
  int numOps;
};

/// Everything one launch recorded.
struct Trace {
  std::vector<TraceOp> ops;
  std::vector<LeafRec> leaves;
  std::vector<Tensor*> ext;
  std::vector<Shape> extShapes;
  std::unordered_map<const Tensor*, int> extIndex;
  std::vector<int> rootOutputs;

  void clear() {
    ops.clear();
    leaves.clear();
    ext.clear();
    extShapes.clear();
    extIndex.clear();
    rootOutputs.clear();
  }
};

/// One kernel call: a primary op and the ops fused into it.
struct Group {
  HpvmOp kind;
  std::vector<int> members;
  int last = 0;
  int32_t x = kNoOperand, w = kNoOperand;
  int32_t bias = kNoOperand;
  int32_t bn[4] = {kNoOperand, kNoOperand, kNoOperand, kNoOperand};
  double bnEps = 0;
  Act act = Act::None;
  float actLo = 0, actHi = 0;
  int32_t residual = kNoOperand;
  /// A squeeze-and-excitation gate multiplying x before a convolution: the
  /// multiply is the group's first member, folded into the filter
  /// (PostOps::gate).
  int32_t gate = kNoOperand;
  Act act2 = Act::None;
  float act2Lo = 0, act2Hi = 0;
  int32_t inPlace = kNoOperand; ///< Operand whose storage the output reuses.
  bool swapped = false;  ///< An add's operands are swapped (inPlace: the 2nd).
  float quantizeOut = 0; ///< PostOps::quantizeOut (int8 chains).
  bool quantizeS8 = false; ///< PostOps::quantizeS8.
  bool bf16Out = false;    ///< PostOps::bf16Out (bf16 chains).
  bool halfOut = false;    ///< PostOps::halfOut (fp16 chains).
  KnobSpec knob;
  double flops = 0;
  std::vector<int> release; ///< Ops whose storage dies after this group.
};

/// The op whose kernel group \p g runs (after a gate multiply folded in).
inline int primaryOp(const Group& g) {
  return g.members[g.gate != kNoOperand ? 1 : 0];
}

/// Where an op's output lives when a concatenation is computed without
/// copies: channels [offset, offset + C) of the output of op `whole` (a
/// concatenation), or nowhere special (whole < 0). The whole's own entry
/// is {itself, 0}.
struct ChannelView {
  int32_t whole = -1;
  int64_t offset = 0;
};

/// What splitting a launch's batch needs (SubBatch.h), found with the
/// schedule.
struct BatchFacts {
  bool separable = false;    ///< Every op computes each image on its own.
  std::vector<int> inputs;   ///< Trace::ext slots of the batch's images.
  int64_t bytesPerImage = 0; ///< Largest input + output of one group.
  /// A layer runs faster per image on the whole batch: an exact fp32
  /// convolution on Winograd's algorithm (F(4x4, 3x3) above batch 1,
  /// F(2x2, 3x3) at 1; some none at all on a small slice).
  bool batchBound = false;
};

/// The part of a plan that depends on the launch's settings.
struct Schedule {
  /// LaunchSettings::scheduleStamp() of the settings it was built under
  /// (0: not built).
  uint64_t settingsStamp = 0;
  std::vector<KnobSpec> knobs; ///< Per op.
  std::vector<Group> groups;
  std::vector<OpRecord> records;  ///< Per op, timing fields zero.
  std::vector<ChannelView> views; ///< Per op (planChannelViews()).
  int64_t numViews = 0;           ///< Ops with a view of another's output.
  BatchFacts batch;
};

/// A cached execution plan for one trace signature.
struct Plan {
  /// The plan's number among those the process built (from 1).
  uint64_t serial = 0;
  api::AnyFn root = nullptr;
  std::vector<uint64_t> sig;
  uint64_t hash = 0;
  std::vector<TraceOp> ops;
  std::vector<LeafRec> leaves;
  std::vector<int> rootOutputs;
  std::vector<int> consumers; ///< Readers of each op's output (+ root).
  std::vector<int> consumer;  ///< The last op reading it.
  std::vector<char> isRootOut;
  std::vector<FusedNodeInfo> fused;
  std::vector<std::vector<int>> fusedOps;
  std::vector<int> fusedOf; ///< Op -> fused node index.
  bool programSetsIds = false;
  std::vector<Tensor*> store;  ///< Plan-owned outputs, created lazily.
  int64_t storeBytes = 0;      ///< Bytes of the tensors in store.
  std::vector<Tensor*> actual; ///< Where each op's output is this launch.
  Schedule sched;

  ~Plan() {
    for (Tensor* t : store)
      deleteTensor(t);
  }
};

/// The shape of operand \p code: an op's output, or an external tensor of
/// trace \p t.
inline const Shape& shapeOf(const Plan& p, const Trace& t, int32_t code) {
  return code >= 0 ? p.ops[size_t(code)].out : t.extShapes[size_t(-code - 1)];
}

/// An op's part in HPVM's fusion rule (hpvm_rt/Fusion.h; Ops.def Fuse
/// column).
inline FuseRole fuseRole(HpvmOp op) { return opInfo(op).facts->fuse; }

inline bool isAct(HpvmOp op) { return fuseRole(op) == FuseRole::Activation; }

/// The convolutions and HPVM's dense mul: oneDNN primitives that take
/// their group's bias, batch norm, activations and residual as post-ops.
inline bool isDense(HpvmOp op) { return isConvOp(op) || op == HpvmOp::Mul; }

/// The signature of trace \p t of a launch of \p root: equal signatures
/// have equal plans.
std::vector<uint64_t> signatureOf(const Trace& t, api::AnyFn root);
/// A hash of \p sig.
uint64_t hashOf(const std::vector<uint64_t>& sig);
/// The plan of trace \p t (signature \p sig, hash \p hash): its consumers
/// and HPVM's fused nodes (reference section 7.1), no schedule yet.
std::unique_ptr<Plan> buildPlan(const Trace& t, api::AnyFn root,
                                std::vector<uint64_t> sig, uint64_t hash);

} // namespace hpvm::rt

#endif // HPVM_RT_CORE_PLAN_H
