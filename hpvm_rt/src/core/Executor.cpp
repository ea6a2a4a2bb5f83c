// Executor.cpp - the tracing executor: records the tensor ops of a launch,
// groups them into HPVM's fused nodes (reference section 7.1), checks the
// active configuration against them (section 4.4), forms execution groups
// (a convolution or dense op with its bias, batch norm, activation,
// residual add and second activation) and runs them on the kernels, caching
// the plan and its intermediate buffers across launches with the same trace.
#include "Executor.h"
#include "base/Errors.h"
#include "config/Match.h"
#include "core/Launch.h"
#include "hpvm.h"
#include "hpvm_rt/Fusion.h"
#include "kernels/Kernels.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <unordered_map>

namespace hpvm::rt {

namespace {

/// Operand code: >= 0 is the output of that op; < 0 is external tensor
/// slot -(code + 1); kNoOperand is none.
constexpr int32_t kNoOperand = INT32_MIN;

/// Plans cached per executor (different batch sizes, graphs).
constexpr size_t kMaxPlans = 8;
/// Above this many bytes of intermediate storage (default 3 GiB, or
/// HPVM_RT_KEEP_BYTES) a plan frees each buffer after its last use instead
/// of keeping it for the next launch, and plans cached for other shapes
/// drop their buffers.
int64_t keepStorageBytes() {
  if (const char* env = std::getenv("HPVM_RT_KEEP_BYTES")) {
    char* end = nullptr;
    long long v = std::strtoll(env, &end, 10);
    if (end != env && !*end && v >= 0)
      return v;
    reportWarning("hpvm_rt", std::string("ignoring HPVM_RT_KEEP_BYTES='") +
                                 env + "' (not a byte count)");
  }
  return int64_t(3) << 30;
}

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
  Act act2 = Act::None;
  float act2Lo = 0, act2Hi = 0;
  int32_t inPlace = kNoOperand; ///< Operand whose storage the output reuses.
  bool swapped = false;  ///< An add's operands are swapped (inPlace: the 2nd).
  float quantizeOut = 0; ///< PostOps::quantizeOut (int8 chains).
  bool bf16Out = false;  ///< PostOps::bf16Out (bf16 chains).
  KnobSpec knob;
  double flops = 0;
  std::vector<int> release; ///< Ops whose storage dies after this group.
};

/// Where an op's output lives when a concatenation is computed without
/// copies: channels [offset, offset + C) of the output of op `whole` (a
/// concatenation), or nowhere special (whole < 0). The whole's own entry
/// is {itself, 0}.
struct ChannelView {
  int32_t whole = -1;
  int64_t offset = 0;
};

/// The part of a plan that depends on the active configuration.
struct Schedule {
  uint64_t configGen = 0;
  std::vector<KnobSpec> knobs; ///< Per op.
  std::vector<Group> groups;
  std::vector<OpRecord> records;  ///< Per op, timing fields zero.
  std::vector<ChannelView> views; ///< Per op (planChannelViews()).
  int64_t numViews = 0;           ///< Ops with a view of another's output.
};

/// A cached execution plan for one trace signature.
struct Plan {
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

/// The executor's state (one per process; launches do not nest).
struct ExecState {
  Trace trace;
  api::AnyFn root = nullptr;
  std::string rootName;
  std::vector<Tensor*> sym;
  std::unordered_map<const Tensor*, int> symIndex;
  std::vector<std::unique_ptr<Plan>> plans; ///< Most recent first.
  Plan* last = nullptr;
  const Configuration* config = nullptr;
  std::string configPath;
  const Int8Calibration* calibration = nullptr;
  InputObserver observer = nullptr;
  void* observerContext = nullptr;
  uint64_t configGen = 1;
  bool recording = false;
  std::vector<OpRecord> records;
  int64_t keepBytes = 0; ///< keepStorageBytes() at the last schedule build.
  int64_t plansBuilt = 0;
  bool channelViews = true; ///< setChannelViews().

  ~ExecState() {
    for (Tensor* t : sym)
      deleteTensor(t);
  }
};

ExecState& S() {
  static ExecState s;
  return s;
}

/// An op's part in HPVM's fusion rule (hpvm_rt/Fusion.h; Ops.def Fuse
/// column).
FuseRole fuseRole(HpvmOp op) { return opInfo(op).facts->fuse; }

bool isAct(HpvmOp op) { return fuseRole(op) == FuseRole::Activation; }

/// The convolutions and HPVM's dense mul: oneDNN primitives that take
/// their group's bias, batch norm, activations and residual as post-ops.
bool isDense(HpvmOp op) {
  return op == HpvmOp::Conv || op == HpvmOp::GroupConv || op == HpvmOp::Mul;
}

/// Sets \p act, \p lo and \p hi to what activation op \p q is as a post-op:
/// its Act and its parameters (actParam).
void setAct(const TraceOp& q, Act& act, float& lo, float& hi) {
  const OpFacts& f = *opInfo(q.op).facts;
  act = f.act;
  lo = actParam(f, q.scalars, 0);
  hi = actParam(f, q.scalars, 1);
}

/// Sets \p t's extents to \p s (symbolic tensors are reused per launch).
void setShape(Tensor* t, const Shape& s) {
  for (int i = 0; i < 4; ++i)
    t->dims.dim_sizes[i] = static_cast<size_t>(s[i]);
  t->num_elems = static_cast<size_t>(numElements(s));
  t->size_in_bytes = t->num_elems * sizeof(float);
}

Tensor* symTensor(size_t index, const Shape& s) {
  ExecState& st = S();
  while (st.sym.size() <= index) {
    Tensor* t = newTensor(s, 4, /*tracked=*/false);
    st.symIndex[t] = static_cast<int>(st.sym.size());
    st.sym.push_back(t);
  }
  setShape(st.sym[index], s);
  return st.sym[index];
}

// --- Plan construction ------------------------------------------------------

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

// --- Configuration ----------------------------------------------------------

/// Gives an INT8 knob on fused node \p node the input range the active
/// calibration measured for it; \p where locates the knob for errors.
void calibrate(KnobSpec& spec, const FusedNodeInfo& node, HpvmOp op,
               const std::string& where) {
  const Int8Calibration* cal = S().calibration;
  auto need = [&] {
    return where + "knob " + std::to_string(spec.id) + " (" +
           knobById(spec.id)->confName + ") on " + opInfo(op).confName +
           " of fused node " + std::to_string(node.ordinal) + " needs";
  };
  if (!cal)
    throw UserError(need() + " an int8 calibration: pass --calibration FILE "
                             "(written by the program's calibrate mode), "
                             "or use int8_dyn (312)");
  for (const Int8Range& e : cal->nodes)
    if (e.ordinal == node.ordinal) {
      if (e.op != op)
        throw UserError(cal->path + ":" + std::to_string(e.line) + ": node " +
                        std::to_string(e.ordinal) + " is " +
                        opInfo(e.op).confName + " in the calibration but " +
                        opInfo(op).confName +
                        " in the program: the calibration is of another "
                        "program");
      spec.hasRange = true;
      spec.inLo = e.lo;
      spec.inHi = e.hi;
      return;
    }
  throw UserError(need() + " a range that calibration '" + cal->path +
                  "' lacks (it has " + std::to_string(cal->nodes.size()) +
                  " nodes): the calibration is of another program");
}

/// Resolves the knob of every op from the active configuration, checking
/// that it describes this program's fused nodes.
std::vector<KnobSpec> resolveKnobs(const Plan& p) {
  const ExecState& st = S();
  std::vector<KnobSpec> knobs(p.ops.size(), exactKnob());
  const Configuration* conf = st.config;
  if (!conf)
    return knobs;
  // As in HPVM, only hpvm::TENSOR_TARGET nodes are configured; others
  // (HPVM's cudnn target) run exact FP32.
  std::vector<char> configurable(p.fused.size(), 0);
  bool any = false;
  for (size_t f = 0; f < p.fused.size(); ++f)
    any |= configurable[f] =
        p.leaves[p.ops[p.fusedOps[f][0]].leaf].hint == hpvm::TENSOR_TARGET;
  if (!any) {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "hpvm_rt: note: %s has no hpvm::TENSOR_TARGET nodes "
                 "(HPVM's cudnn target); configuration '%s' is not applied, "
                 "every op runs exact FP32\n",
                 st.rootName.c_str(), conf->name.c_str());
    return knobs;
  }
  const std::vector<const NodeConfig*> lines = matchConfiguration(
      *conf, st.configPath, p.fused, configurable, p.programSetsIds);
  for (size_t f = 0; f < p.fused.size(); ++f) {
    if (!lines[f])
      continue;
    const FusedNodeInfo& node = p.fused[f];
    for (size_t k = 0; k < node.ops.size(); ++k) {
      const OpChoice& c = lines[f]->ops[k];
      KnobSpec& spec = knobs[p.fusedOps[f][k]] = knobById(c.knobId)->spec;
      if (spec.precision == Precision::INT8)
        calibrate(spec, node, node.ops[k],
                  st.configPath + ":" + std::to_string(c.line) + ":" +
                      std::to_string(c.column) + ": ");
    }
  }
  return knobs;
}

// --- Execution groups -------------------------------------------------------

/// True if an op with knob \p b may join the group of a primary op with
/// knob \p a: an exact op of the same precision, or an fp32 op after a
/// bf16 or int8 convolution or dense layer (whose results are fp32
/// already, so fusing the post-op changes nothing but the memory traffic).
bool samePrecision(const KnobSpec& a, const KnobSpec& b) {
  return b.variant == Variant::Exact &&
         (a.precision == b.precision ||
          ((a.precision == Precision::BF16 || isInt8(a.precision)) &&
           b.precision == Precision::FP32));
}

/// True if op \p i's output may be overwritten by its single reader.
bool reusable(const Plan& p, int32_t code) {
  return code >= 0 && p.consumers[code] == 1 && !p.isRootOut[code];
}

/// Low-precision chains. int8: an int8 convolution whose result feeds
/// (directly, or through an exact max pool) only an int8 convolution with
/// an unsigned calibrated input hands that layer its u8 input instead of
/// fp32 values quantized again, where this is exact: no residual,
/// activation None or ReLU (the u8 quantization clamps negatives to 0
/// either way). bf16: a bf16 convolution feeding only bf16 convolutions or
/// mul stores its result as bf16 (round to nearest even, as the next layer
/// would round it; a max pool between commutes with the rounding): the
/// same values at half the memory traffic.
void chainLowPrecision(const Plan& p, std::vector<Group>& groups) {
  std::unordered_map<int, size_t> byFirst;
  for (size_t gi = 0; gi < groups.size(); ++gi)
    byFirst[groups[gi].members[0]] = gi;
  // The group reading op o's output, if it is the only reader.
  auto readerOf = [&](int o) -> const Group* {
    if (p.consumers[o] != 1 || p.isRootOut[o])
      return nullptr;
    auto it = byFirst.find(p.consumer[o]);
    return it == byFirst.end() ? nullptr : &groups[it->second];
  };
  for (Group& g : groups) {
    const bool bf16 = g.knob.precision == Precision::BF16;
    if ((g.kind != HpvmOp::Conv && g.kind != HpvmOp::GroupConv) ||
        g.knob.variant != Variant::Exact ||
        (!isInt8(g.knob.precision) && !bf16) || g.residual != kNoOperand ||
        (!bf16 && g.act != Act::None && g.act != Act::Relu))
      continue;
    int out = g.last;
    const Group* next = readerOf(out);
    if (next &&
        (next->kind == HpvmOp::MaxPool || next->kind == HpvmOp::MaxPoolPads) &&
        next->knob.precision == Precision::FP32 && next->x == out) {
      out = next->last;
      next = readerOf(out);
    }
    if (!next || next->x != out)
      continue;
    const bool conv =
        next->kind == HpvmOp::Conv || next->kind == HpvmOp::GroupConv;
    if (bf16)
      g.bf16Out = (conv || next->kind == HpvmOp::Mul) &&
                  next->knob.precision == Precision::BF16 &&
                  next->knob.variant == Variant::Exact;
    else if (conv && next->knob.variant == Variant::Exact)
      g.quantizeOut = int8UnsignedScale(next->knob);
  }
}

/// Forms the execution groups of \p p's ops under the knobs \p s.knobs
/// (a primary op with the post-ops that may join it), in execution order.
void formGroups(const Plan& p, Schedule& s) {
  s.groups.clear();
  size_t n = p.ops.size();
  std::vector<char> taken(n, 0);
  // The single reader j of op i's output if it may join i's group.
  auto next = [&](int i, const KnobSpec& knob) -> int {
    if (p.consumers[i] != 1 || p.isRootOut[i])
      return -1;
    int j = p.consumer[i];
    if (taken[j] || !samePrecision(knob, s.knobs[j]))
      return -1;
    return j;
  };
  for (size_t i = 0; i < n; ++i) {
    if (taken[i])
      continue;
    const TraceOp& op = p.ops[i];
    Group g;
    g.kind = op.op;
    g.members.push_back(static_cast<int>(i));
    g.knob = s.knobs[i];
    g.x = op.in[0];
    taken[i] = 1;
    int cur = static_cast<int>(i);
    auto absorb = [&](int j) {
      g.members.push_back(j);
      taken[j] = 1;
      cur = j;
    };
    if (isDense(op.op)) {
      // bias, batch norm, activation, residual add and a second activation
      // join as oneDNN post-ops, in that order.
      g.w = op.in[1];
      int stage = 0; // 1 bias, 2 bn, 3 act, 4 residual, 5 act2
      int64_t channels = op.out[1], elems = numElements(op.out);
      for (int j; stage < 5 && (j = next(cur, g.knob)) >= 0;) {
        const TraceOp& q = p.ops[j];
        if (q.op == HpvmOp::Add) {
          if (q.in[0] == q.in[1])
            break;
          int32_t other = q.in[0] == cur ? q.in[1] : q.in[0];
          int64_t oe = other >= 0
                           ? numElements(p.ops[other].out)
                           : numElements(S().trace.extShapes[-other - 1]);
          if (oe == elems && stage < 4) {
            g.residual = other;
            stage = 4;
          } else if (oe == channels && oe != elems && stage < 1 &&
                     q.in[0] == cur) {
            g.bias = other;
            stage = 1;
          } else {
            break;
          }
        } else if (q.op == HpvmOp::BatchNorm && q.in[0] == cur && stage < 2) {
          bool own = false;
          for (int k = 1; k < 5; ++k)
            own |= q.in[k] == cur;
          if (own)
            break;
          std::copy(q.in + 1, q.in + 5, g.bn);
          g.bnEps = q.scalars[0];
          stage = 2;
        } else if (isAct(q.op) && (stage < 3 || stage == 4)) {
          if (stage < 3) {
            setAct(q, g.act, g.actLo, g.actHi);
            stage = 3;
          } else {
            setAct(q, g.act2, g.act2Lo, g.act2Hi);
            stage = 5;
          }
        } else {
          break;
        }
        absorb(j);
      }
    } else {
      // Every other op runs alone through runSingleOp, with the activation
      // that follows it when its kernel applies one, in place (Ops.def
      // InPlace) when its first operand dies here (never an external
      // tensor); an add may reuse its second operand instead.
      int j = fusesActivation(op.op) ? next(cur, g.knob) : -1;
      if (j >= 0 && isAct(p.ops[j].op)) {
        setAct(p.ops[j], g.act, g.actLo, g.actHi);
        absorb(j);
      }
      if (opInfo(op.op).facts->inPlace && reusable(p, op.in[0])) {
        g.inPlace = op.in[0];
      } else if (op.op == HpvmOp::Add && op.in[0] != op.in[1] &&
                 reusable(p, op.in[1]) &&
                 numElements(p.ops[op.in[1]].out) == numElements(op.out)) {
        g.inPlace = op.in[1];
        g.swapped = true;
      }
    }
    g.last = g.members.back();
    // A program output gets a tensor of its own (the program may free it;
    // a swapped elementwise add stays correct, addition commutes).
    if (p.isRootOut[g.last])
      g.inPlace = kNoOperand;
    s.groups.push_back(std::move(g));
  }
  chainLowPrecision(p, s.groups);
  // A group runs where its last op was traced: every value it reads from
  // outside is a group output traced earlier.
  std::stable_sort(
      s.groups.begin(), s.groups.end(),
      [](const Group& a, const Group& b) { return a.last < b.last; });
}

/// Each op's record (shapes, knob, FLOPs) and each group's FLOPs.
void recordOps(const Plan& p, Schedule& s) {
  const size_t n = p.ops.size();
  const Trace& t = S().trace;
  auto shapeOfCode = [&](int32_t c) {
    return c >= 0 ? p.ops[c].out : t.extShapes[-c - 1];
  };
  s.records.assign(n, OpRecord{});
  for (size_t i = 0; i < n; ++i) {
    const TraceOp& op = p.ops[i];
    OpRecord& r = s.records[i];
    const LeafRec& leaf = p.leaves[op.leaf];
    r.opId = leaf.hasNodeId ? leaf.nodeId : 0;
    r.fusedOrdinal = p.fused[p.fusedOf[i]].ordinal;
    r.op = op.op;
    r.knob = s.knobs[i];
    Shape in[kMaxTensorArgs];
    for (int k = 0; k < op.numIn; ++k) {
      in[k] = shapeOfCode(op.in[k]);
      r.inputShapes.emplace_back(in[k].begin(), in[k].end());
    }
    r.outputShape.assign(op.out.begin(), op.out.end());
    r.flops = opFlops(op.op, in, op.out, op.scalars);
  }
  for (Group& g : s.groups)
    for (int m : g.members)
      g.flops += s.records[m].flops;
}

/// Zero-copy concatenation (batch 1): the parts of a concatenation are
/// written by their producers straight into the concatenation's buffer,
/// at their channel offsets, and a concatenation of parts that already
/// lie one after another in one buffer (DenseNet's concatenation of all
/// earlier feature maps of a block, for every layer) is a view of them.
/// Each placed output is then channels of one concatenation's buffer, its
/// `whole`. The concatenations are visited last to first, so that a
/// concatenation feeding a later one (a tree of concatenations, or the
/// prefixes of a dense block's last one) finds its place taken already.
///
/// The plan only says where outputs should go; runConcat() copies every
/// part not found there when it runs (a producer that wrote another
/// layout). It places only what can be written once and then only read:
///  - a concatenation with fp32 numerics (rounding it would round its
///    parts) of batch-1 parts of whole 16-channel blocks (a contiguous run
///    of an nChw16c buffer), not a program output;
///  - a part that is another op's output, written by the group that
///    computes it (not in place), not a program output, and not placed
///    already (a part of two concatenations at different offsets is
///    copied into the second);
///  - and no group may then work in place on a placed output (it would
///    overwrite a part later concatenations read): such a group gets a
///    buffer of its own.
void planChannelViews(const Plan& p, Schedule& s) {
  const size_t n = p.ops.size();
  s.views.assign(n, ChannelView{});
  s.numViews = 0;
  if (!S().channelViews)
    return;
  std::vector<int> groupOf(n, -1); // The group an op's output comes from.
  for (size_t gi = 0; gi < s.groups.size(); ++gi)
    groupOf[s.groups[gi].last] = static_cast<int>(gi);
  auto placeable = [&](int32_t c) {
    return c >= 0 && !p.isRootOut[c] && groupOf[c] >= 0 &&
           s.groups[groupOf[c]].inPlace == kNoOperand;
  };
  for (size_t gi = s.groups.size(); gi-- > 0;) {
    const Group& g = s.groups[gi];
    const TraceOp& op = p.ops[g.last];
    if (g.kind != HpvmOp::Concat || !placeable(g.last) || op.out[0] != 1 ||
        g.knob.precision != Precision::FP32)
      continue;
    std::vector<int64_t> at(op.numIn); // Each part's first channel.
    int64_t channel = 0;
    bool blocks16 = true;
    for (int k = 0; k < op.numIn; ++k) {
      at[k] = channel;
      const int64_t c = op.in[k] >= 0 ? p.ops[op.in[k]].out[1]
                                      : S().trace.extShapes[-op.in[k] - 1][1];
      blocks16 = blocks16 && c % 16 == 0;
      channel += c;
    }
    if (!blocks16)
      continue;
    ChannelView& self = s.views[g.last];
    if (self.whole < 0) {
      // Parts already one after another in one buffer: a view of them.
      const ChannelView first =
          op.in[0] >= 0 ? s.views[op.in[0]] : ChannelView{};
      bool view = first.whole >= 0;
      for (int k = 1; view && k < op.numIn; ++k) {
        const ChannelView& v =
            op.in[k] >= 0 ? s.views[op.in[k]] : ChannelView{};
        view = v.whole == first.whole && v.offset == first.offset + at[k];
      }
      if (view) {
        self = first;
        ++s.numViews;
        continue;
      }
      self = ChannelView{g.last, 0};
    }
    for (int k = 0; k < op.numIn; ++k) {
      const int32_t c = op.in[k];
      if (placeable(c) && s.views[c].whole < 0) {
        s.views[c] = ChannelView{self.whole, self.offset + at[k]};
        ++s.numViews;
      }
    }
  }
  for (Group& g : s.groups)
    if (g.inPlace != kNoOperand && s.views[g.inPlace].whole >= 0)
      g.inPlace = kNoOperand;
}

/// Which buffers each group's output uses, and which it frees after running
/// when keeping every intermediate buffer would take too much memory.
void planStorage(const Plan& p, Schedule& s) {
  const size_t n = p.ops.size();
  // Storage: keep every buffer for the next launch unless that is too much
  // memory; then free each buffer after its last reader. A channel view
  // belongs to its whole.
  std::vector<int> owner(n, -1);
  int64_t bytes = 0;
  for (const Group& g : s.groups) {
    const ChannelView& v = s.views[g.last];
    if (g.inPlace != kNoOperand) {
      owner[g.last] = owner[g.inPlace];
    } else if (v.whole >= 0) {
      owner[g.last] = v.whole;
      if (v.whole == g.last)
        bytes += numElements(p.ops[g.last].out) * 4;
    } else if (!p.isRootOut[g.last]) {
      owner[g.last] = g.last;
      bytes += numElements(p.ops[g.last].out) * 4;
    }
  }
  S().keepBytes = keepStorageBytes();
  if (bytes > S().keepBytes) {
    std::vector<int> lastUse(n, -1);
    for (size_t gi = 0; gi < s.groups.size(); ++gi)
      for (int m : s.groups[gi].members)
        for (int k = 0; k < p.ops[m].numIn; ++k) {
          int32_t c = p.ops[m].in[k];
          if (c >= 0 && owner[c] >= 0)
            lastUse[owner[c]] = static_cast<int>(gi);
        }
    for (size_t o = 0; o < n; ++o)
      if (lastUse[o] >= 0 && owner[o] == static_cast<int>(o))
        s.groups[lastUse[o]].release.push_back(static_cast<int>(o));
  }
}

/// The part of \p p's plan that depends on the active configuration.
void buildSchedule(Plan& p) {
  Schedule& s = p.sched;
  // Buffers start afresh: the last schedule's channel views may differ.
  for (Tensor*& t : p.store) {
    deleteTensor(t);
    t = nullptr;
  }
  p.storeBytes = 0;
  s.knobs = resolveKnobs(p);
  formGroups(p, s);
  planChannelViews(p, s);
  recordOps(p, s);
  planStorage(p, s);
  s.configGen = S().configGen;
}

// --- Execution --------------------------------------------------------------

Tensor* operand(const Plan& p, const Trace& t, int32_t code) {
  if (code == kNoOperand)
    return nullptr;
  return code >= 0 ? p.actual[code] : t.ext[-code - 1];
}

void runGroup(Plan& p, const Trace& t, const Group& g, Tensor* out) {
  auto in = [&](int32_t c) { return operand(p, t, c); };
  const TraceOp& first = p.ops[g.members[0]];
  if (isDense(g.kind)) {
    PostOps post;
    post.bias = in(g.bias);
    if (g.bn[0] != kNoOperand) {
      post.bnGamma = in(g.bn[0]);
      post.bnBeta = in(g.bn[1]);
      post.bnMean = in(g.bn[2]);
      post.bnVar = in(g.bn[3]);
      post.bnEps = g.bnEps;
    }
    post.act = g.act;
    post.actLo = g.actLo;
    post.actHi = g.actHi;
    post.residual = in(g.residual);
    post.act2 = g.act2;
    post.act2Lo = g.act2Lo;
    post.act2Hi = g.act2Hi;
    post.quantizeOut = g.quantizeOut;
    post.bf16Out = g.bf16Out;
    if (g.kind == HpvmOp::Mul)
      runDense(in(g.x), in(g.w), post, g.knob, out);
    else
      runConv(in(g.x), in(g.w), convArgs(g.kind, first.scalars), post, g.knob,
              out);
    return;
  }
  Tensor* operands[kMaxTensorArgs];
  for (int k = 0; k < first.numIn; ++k)
    operands[k] = in(first.in[k]);
  if (g.swapped)
    std::swap(operands[0], operands[1]);
  runSingleOp(g.kind, OpCall{operands, first.numIn, first.scalars,
                             PostAct{g.act, g.actLo, g.actHi}, g.knob, out});
}

/// The plan's tensor for op \p o's output, created on first use.
Tensor* stored(Plan& p, int o) {
  Tensor*& slot = p.store[o];
  if (!slot) {
    slot = newTensor(p.ops[o].out, 4, /*tracked=*/false);
    const ChannelView& v = p.sched.views[o];
    if (v.whole < 0 || v.whole == o)
      p.storeBytes += int64_t(slot->size_in_bytes);
  }
  return slot;
}

/// The tensor group \p g writes its output to.
Tensor* outputOf(Plan& p, const Trace& t, const Group& g) {
  if (g.inPlace != kNoOperand)
    return operand(p, t, g.inPlace);
  if (p.isRootOut[g.last])
    return newTensor(p.ops[g.last].out, 4, /*tracked=*/true);
  Tensor* out = stored(p, g.last);
  const ChannelView& v = p.sched.views[g.last];
  if (v.whole >= 0)
    bindChannelView(out, stored(p, v.whole), v.offset);
  return out;
}

void execute(Plan& p, const Trace& t) {
  ExecState& st = S();
  const Schedule& s = p.sched;
  using Clock = std::chrono::steady_clock;
  Clock::time_point start;
  size_t recorded = 0;
  if (st.recording) {
    // Assigning into kept records reuses their shape vectors' storage.
    st.records.resize(p.ops.size());
    start = Clock::now();
  }
  for (const Group& g : s.groups) {
    Tensor* out = outputOf(p, t, g);
    if (st.observer && (g.kind == HpvmOp::Conv || g.kind == HpvmOp::GroupConv ||
                        g.kind == HpvmOp::Mul)) {
      Tensor* x = operand(p, t, g.x);
      ensureHost(x);
      st.observer(st.observerContext, p.fused[p.fusedOf[g.members[0]]].ordinal,
                  g.kind, static_cast<const float*>(x->host_data),
                  int64_t(x->num_elems));
    }
    if (!st.recording) {
      runGroup(p, t, g, out);
    } else {
      Clock::time_point t0 = Clock::now();
      runGroup(p, t, g, out);
      double secs = std::chrono::duration<double>(Clock::now() - t0).count();
      double begin = std::chrono::duration<double>(t0 - start).count();
      for (int m : g.members) {
        OpRecord& r = st.records[recorded++];
        r = s.records[m];
        r.startSeconds = begin;
        r.seconds = g.flops > 0 ? secs * r.flops / g.flops
                                : secs / double(g.members.size());
      }
    }
    p.actual[g.last] = out;
    for (int o : g.release)
      releaseStorage(p.store[o]);
  }
}

} // namespace

// --- Tracing entry points ---------------------------------------------------

void traceBegin(api::AnyFn root, const std::string& rootName) {
  ExecState& st = S();
  st.trace.clear();
  st.root = root;
  st.rootName = rootName;
}

void traceAbort() { S().trace.clear(); }

void* traceOp(LeafContext& leaf, HpvmOp op, const char* api, int numTensors,
              void* const* tensors, const double* scalars) {
  ExecState& st = S();
  Trace& t = st.trace;
  if (leaf.leafIndex < 0) {
    leaf.leafIndex = static_cast<int>(t.leaves.size());
    t.leaves.push_back(LeafRec{*leaf.name, leaf.hint, leaf.nodeId,
                               leaf.hasNodeId, static_cast<int>(t.ops.size()),
                               0});
  }
  LeafRec& rec = t.leaves[leaf.leafIndex];
  rec.hint = leaf.hint;
  rec.nodeId = leaf.nodeId;
  rec.hasNodeId = leaf.hasNodeId;
  ++rec.numOps;
  const OpInfo& info = opInfo(op);
  auto where = [&] { return "node " + *leaf.name + ": " + api; };
  TraceOp r;
  r.op = op;
  r.leaf = leaf.leafIndex;
  r.numIn = numTensors;
  Shape shapes[kMaxTensorArgs];
  for (int i = 0; i < numTensors; ++i) {
    auto* tensor = static_cast<Tensor*>(tensors[i]);
    if (!tensor)
      throw UserError(where() + ": tensor operand " + std::to_string(i + 1) +
                      " is NULL");
    auto sym = st.symIndex.find(tensor);
    if (sym != st.symIndex.end()) {
      if (static_cast<size_t>(sym->second) >= t.ops.size())
        throw UserError(where() + ": tensor operand " + std::to_string(i + 1) +
                        " is an intermediate result of an earlier launch");
      r.in[i] = sym->second;
      shapes[i] = t.ops[sym->second].out;
      continue;
    }
    auto it = t.extIndex.find(tensor);
    if (it == t.extIndex.end()) {
      it = t.extIndex.emplace(tensor, static_cast<int>(t.ext.size())).first;
      t.ext.push_back(tensor);
      t.extShapes.push_back(shapeOf(tensor));
    }
    r.in[i] = -it->second - 1;
    shapes[i] = t.extShapes[it->second];
  }
  for (int i = 0; i < info.facts->scalarArgs; ++i)
    r.scalars[i] = scalars[i];
  r.out = inferShape(op, shapes, numTensors, r.scalars, api, leaf.name);
  size_t index = t.ops.size();
  t.ops.push_back(r);
  return symTensor(index, r.out);
}

void traceEnd(std::vector<api::Value>& rootOutputs) {
  ExecState& st = S();
  Trace& t = st.trace;
  // Root outputs that are symbolic tensors of this launch.
  std::vector<std::pair<size_t, int>> symOut;
  for (size_t k = 0; k < rootOutputs.size(); ++k) {
    if (rootOutputs[k].type->kind != api::ValueKind::Pointer)
      continue;
    auto* ptr = api::valueAs<Tensor*>(rootOutputs[k]);
    auto it = st.symIndex.find(ptr);
    if (it != st.symIndex.end() &&
        static_cast<size_t>(it->second) < t.ops.size()) {
      symOut.emplace_back(k, it->second);
      t.rootOutputs.push_back(it->second);
    }
  }
  std::vector<uint64_t> sig = signatureOf(t, st.root);
  uint64_t hash = hashOf(sig);
  auto found = std::find_if(st.plans.begin(), st.plans.end(),
                            [&](const std::unique_ptr<Plan>& p) {
                              return p->hash == hash && p->sig == sig;
                            });
  if (found == st.plans.end()) {
    ++st.plansBuilt;
    st.plans.insert(st.plans.begin(),
                    buildPlan(t, st.root, std::move(sig), hash));
    if (st.plans.size() > kMaxPlans)
      st.plans.pop_back();
  } else if (found != st.plans.begin()) {
    std::rotate(st.plans.begin(), found, found + 1);
  }
  Plan& p = *st.plans.front();
  st.last = &p;
  if (p.sched.configGen != st.configGen)
    buildSchedule(p);
  execute(p, t);
  // Cached plans of other shapes keep their buffers only while all plans
  // together stay within the budget (they are recreated on reuse).
  int64_t held = 0;
  for (const std::unique_ptr<Plan>& q : st.plans)
    held += q->storeBytes;
  if (held > st.keepBytes)
    for (size_t i = 1; i < st.plans.size(); ++i) {
      for (Tensor*& s : st.plans[i]->store) {
        deleteTensor(s);
        s = nullptr;
      }
      st.plans[i]->storeBytes = 0;
    }
  for (auto [k, op] : symOut) {
    Tensor* out = p.actual[op];
    ensureHost(out);
    rootOutputs[k] = api::makeValue(static_cast<void*>(out));
    rootOutputs[k].type = &api::TypeOf<void*>::desc;
  }
  t.clear();
}

void* tensorOp(HpvmOp op, const char* api, int numTensors, void* const* tensors,
               const double* scalars) {
  LeafContext* leaf = currentLeafContext();
  if (opInfo(op).facts->variadic &&
      (numTensors < 1 || numTensors > kMaxTensorArgs))
    throw UserError((leaf ? "node " + *leaf->name + ": " : std::string()) +
                    api + ": " + std::to_string(numTensors) +
                    " tensor operands (need 1 to " +
                    std::to_string(kMaxTensorArgs) + ")");
  if (leaf)
    return traceOp(*leaf, op, api, numTensors, tensors, scalars);
  return eagerOp(op, api, numTensors, tensors, scalars);
}

// --- Runtime.h hooks --------------------------------------------------------

void setActiveConfiguration(const Configuration* config,
                            const std::string& path) {
  ExecState& st = S();
  st.config = config;
  st.configPath = path;
  ++st.configGen;
}

void setActiveInt8Calibration(const Int8Calibration* cal) {
  S().calibration = cal;
  ++S().configGen;
}

const Int8Calibration* activeInt8Calibration() { return S().calibration; }

void setInputObserver(InputObserver observer, void* context) {
  S().observer = observer;
  S().observerContext = context;
}

const std::vector<FusedNodeInfo>& programNodes() {
  static const std::vector<FusedNodeInfo> none;
  return S().last ? S().last->fused : none;
}

void setRecording(bool on) {
  S().recording = on;
  if (!on)
    S().records.clear();
}

const std::vector<OpRecord>& lastLaunchRecords() { return S().records; }

int64_t plansBuilt() { return S().plansBuilt; }

int64_t channelViews() { return S().last ? S().last->sched.numViews : 0; }

void setChannelViews(bool on) {
  S().channelViews = on;
  ++S().configGen;
}

} // namespace hpvm::rt
