// Executor.cpp - the tracing executor: records the tensor ops of a launch,
// finds or builds its plan (Plan.cpp: HPVM's fused nodes, reference
// section 7.1) and the plan's schedule under the launch's settings
// (KnobResolution.cpp, Groups.cpp, Memory.cpp), and runs the execution
// groups on the kernels, caching plans and their intermediate buffers
// across launches with the same trace. The settings a launch runs under
// come from the one binding point, bindLaunchSettings() (Launch.h).
#include "Executor.h"
#include "base/Errors.h"
#include "core/Groups.h"
#include "core/KnobResolution.h"
#include "core/Launch.h"
#include "core/Memory.h"
#include "core/Plan.h"
#include "core/SubBatch.h"
#include "hpvm.h"
#include "kernels/Kernels.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

namespace hpvm::rt {

namespace {

/// Plans cached per executor (different batch sizes, graphs).
constexpr size_t kMaxPlans = 8;
/// The executor's process-wide state (one executor per process; launches
/// do not nest): the trace of the launch in progress, the plan cache and
/// the settings bound for the launches.
struct ExecState {
  Trace trace;
  /// The trace at a sub-batch's size and at the last, smaller one's
  /// (SubBatch.h).
  Trace subTrace, tailTrace;
  api::AnyFn root = nullptr;
  std::string rootName;
  std::vector<Tensor*> sym;
  std::unordered_map<const Tensor*, int> symIndex;
  std::vector<std::unique_ptr<Plan>> plans; ///< Most recent first.
  int64_t keepBytes = 0; ///< keepStorageBytes() at the last schedule build.
  int64_t plansBuilt = 0;
  /// bindLaunchSettings(); nullptr: `unbound`.
  LaunchSettings* bound = nullptr;
  /// The settings of launches with none bound: exact FP32, no recording.
  LaunchSettings unbound;

  ~ExecState() {
    for (Tensor* t : sym)
      deleteTensor(t);
  }
};

/// The executor of this process (its state is process-wide).
ExecState& processExecutor() {
  static ExecState s;
  return s;
}

/// Sets \p t's extents to \p s (symbolic tensors are reused per launch).
void setShape(Tensor* t, const Shape& s) {
  for (int i = 0; i < 4; ++i)
    t->dims.dim_sizes[i] = static_cast<size_t>(s[i]);
  t->num_elems = static_cast<size_t>(numElements(s));
  t->size_in_bytes = t->num_elems * sizeof(float);
}

Tensor* symTensor(size_t index, const Shape& s) {
  ExecState& st = processExecutor();
  while (st.sym.size() <= index) {
    Tensor* t = newTensor(s, 4, /*tracked=*/false);
    st.symIndex[t] = static_cast<int>(st.sym.size());
    st.sym.push_back(t);
  }
  setShape(st.sym[index], s);
  return st.sym[index];
}

/// The part of \p p's plan (traced as \p t) that depends on the launch's
/// \p settings.
void buildSchedule(Plan& p, const Trace& t, const LaunchSettings& settings) {
  ExecState& st = processExecutor();
  Schedule& s = p.sched;
  // Buffers start afresh: the last schedule's channel views may differ.
  for (Tensor*& t : p.store) {
    deleteTensor(t);
    t = nullptr;
  }
  p.storeBytes = 0;
  s.knobs =
      resolveKnobs(p, settings.configuration(), settings.configurationPath(),
                   settings.calibration(), st.rootName);
  formGroups(p, t, s, settings.gateFolding());
  planChannelViews(p, t, s, settings.channelViews());
  recordOps(p, t, s);
  st.keepBytes = keepStorageBytes();
  planStorage(p, s, st.keepBytes);
  s.batch = batchFactsOf(p, t);
  s.settingsStamp = settings.scheduleStamp();
}

// --- Execution --------------------------------------------------------------

Tensor* operand(const Plan& p, const Trace& t, int32_t code) {
  if (code == kNoOperand)
    return nullptr;
  return code >= 0 ? p.actual[code] : t.ext[-code - 1];
}

void runGroup(Plan& p, const Trace& t, const Group& g, Tensor* out) {
  auto in = [&](int32_t c) { return operand(p, t, c); };
  const TraceOp& first = p.ops[primaryOp(g)];
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
    post.quantizeS8 = g.quantizeS8;
    post.bf16Out = g.bf16Out;
    post.halfOut = g.halfOut;
    post.gate = in(g.gate);
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
                             PostAct{g.act, g.actLo, g.actHi, g.quantizeOut,
                                     g.quantizeS8},
                             g.knob, out});
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

/// A new tensor for root output op \p op of \p p, computed straight into
/// the caller's buffer where \p settings give one for it
/// (LaunchSettings::setOutputBuffers()).
Tensor* rootOutputTensor(const Plan& p, int op,
                         const LaunchSettings& settings) {
  Tensor* out = newTensor(p.ops[op].out, 4, /*tracked=*/true);
  const auto slot = std::find(p.rootOutputs.begin(), p.rootOutputs.end(), op);
  if (float* buffer = settings.outputBuffer(
          size_t(slot - p.rootOutputs.begin()), numElements(p.ops[op].out))) {
    out->host_data = buffer; // adopted, never freed (hostModified)
    hostModified(out);
  }
  return out;
}

/// The tensor group \p g writes its output to.
Tensor* outputOf(Plan& p, const Trace& t, const Group& g,
                 const LaunchSettings& settings) {
  if (g.inPlace != kNoOperand)
    return operand(p, t, g.inPlace);
  if (p.isRootOut[g.last])
    return rootOutputTensor(p, g.last, settings);
  Tensor* out = stored(p, g.last);
  const ChannelView& v = p.sched.views[g.last];
  if (v.whole >= 0)
    bindChannelView(out, stored(p, v.whole), v.offset);
  return out;
}

/// Runs \p p's groups. With \p accumulate (a later sub-batch of the
/// launch), the op records of the earlier ones gain this one's time.
void execute(Plan& p, const Trace& t, LaunchSettings& settings,
             bool accumulate = false) {
  const Schedule& s = p.sched;
  const bool recording = settings.recording();
  const InputObserver observer = settings.inputObserver();
  void* const observerContext = settings.observerContext();
  std::vector<OpRecord>& records = settings.results().records;
  using Clock = std::chrono::steady_clock;
  Clock::time_point start;
  size_t recorded = 0;
  if (recording) {
    // Assigning into kept records reuses their shape vectors' storage.
    if (!accumulate)
      records.resize(p.ops.size());
    start = Clock::now();
  }
  for (const Group& g : s.groups) {
    Tensor* out = outputOf(p, t, g, settings);
    if (observer && hasInt8Knob(g.kind)) {
      Tensor* x = operand(p, t, g.x);
      ensureHost(x);
      const float* seen = static_cast<const float*>(x->host_data);
      std::vector<float> gated;
      if (g.gate != kNoOperand) {
        // The layer's input is x times the gate (one image).
        Tensor* gate = operand(p, t, g.gate);
        ensureHost(gate);
        const float* gv = static_cast<const float*>(gate->host_data);
        const size_t C = gate->num_elems, plane = x->num_elems / C;
        gated.resize(x->num_elems);
        for (size_t i = 0; i < gated.size(); ++i)
          gated[i] = seen[i] * gv[i / plane];
        seen = gated.data();
      }
      observer(observerContext, p.fused[p.fusedOf[primaryOp(g)]].ordinal,
               g.kind, seen, int64_t(x->num_elems));
    }
    if (!recording) {
      runGroup(p, t, g, out);
    } else {
      Clock::time_point t0 = Clock::now();
      runGroup(p, t, g, out);
      double secs = std::chrono::duration<double>(Clock::now() - t0).count();
      double begin = std::chrono::duration<double>(t0 - start).count();
      for (int m : g.members) {
        if (recorded == records.size())
          break; // (a last sub-batch grouped otherwise)
        OpRecord& r = records[recorded++];
        const double part = g.flops > 0 ? secs * s.records[m].flops / g.flops
                                        : secs / double(g.members.size());
        if (accumulate) {
          // The record is the whole batch's: times, FLOPs and the images
          // of the batch operands (not parameters, nor a broadcast image:
          // of one-image slices, a broadcast op's operands are all taken
          // as the images) add up over the sub-batches.
          const OpRecord& slice = s.records[m];
          r.seconds += part;
          r.flops += slice.flops;
          const int64_t n =
              slice.outputShape.empty() ? 0 : slice.outputShape[0];
          if (!r.outputShape.empty())
            r.outputShape[0] += n;
          const BatchRole role = opInfo(slice.op).facts->batch;
          for (size_t i = 0; i < r.inputShapes.size(); ++i)
            if (!r.inputShapes[i].empty() &&
                !(role == BatchRole::Params && i > 0) &&
                slice.inputShapes[i][0] == n)
              r.inputShapes[i][0] += n;
          continue;
        }
        r = s.records[m];
        r.startSeconds = begin;
        r.seconds = part;
      }
    }
    p.actual[g.last] = out;
    for (int o : g.release)
      releaseStorage(p.store[o]);
  }
}

/// The cached plan of trace \p t, built if new, moved to the front of the
/// cache; the plan \p keep is not evicted to make room.
Plan& planFor(ExecState& st, const Trace& t, const Plan* keep) {
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
    st.plans.front()->serial = static_cast<uint64_t>(st.plansBuilt);
    if (st.plans.size() > kMaxPlans) {
      auto victim = st.plans.end() - 1;
      if (victim->get() == keep)
        --victim;
      st.plans.erase(victim);
    }
  } else if (found != st.plans.begin()) {
    std::rotate(st.plans.begin(), found, found + 1);
  }
  return *st.plans.front();
}

/// Runs the launch traced as \p t (plan \p whole) over sub-batches of
/// \p size images (SubBatch.h) and returns its outputs (\p symOut: root
/// output slot and op) as whole-batch tensors; false, with nothing run,
/// where a sub-batch's shapes cannot be inferred.
bool runSubBatches(ExecState& st, Plan& whole, const Trace& t,
                   LaunchSettings& settings, int64_t size,
                   const std::vector<std::pair<size_t, int>>& symOut,
                   std::vector<api::Value>& rootOutputs) {
  const BatchFacts facts = whole.sched.batch;
  const int64_t batch = whole.ops[whole.rootOutputs.front()].out[0];
  // Every slice has `size` images but the last: both sizes must trace.
  const int64_t tail = batch % size;
  if (!traceWithBatch(t, facts, size, st.subTrace) ||
      (tail > 0 && !traceWithBatch(t, facts, tail, st.tailTrace)))
    return false;
  std::vector<Tensor*> outs;
  for (auto [k, op] : symOut) {
    Tensor* out = rootOutputTensor(whole, op, settings);
    allocHost(out);
    outs.push_back(out);
  }
  std::vector<Tensor*> views;
  for (int64_t first = 0; first < batch; first += size) {
    const int64_t n = std::min(size, batch - first);
    Trace& sub = n == size ? st.subTrace : st.tailTrace;
    // The slice's images: views of the inputs' host buffers.
    for (int slot : facts.inputs) {
      Tensor* in = t.ext[size_t(slot)];
      ensureHost(in);
      const Shape& shape = sub.extShapes[size_t(slot)];
      Tensor* view = newTensor(shape, in->dims.num_dims, /*tracked=*/false);
      view->host_data =
          static_cast<float*>(in->host_data) + first * (numElements(shape) / n);
      sub.ext[size_t(slot)] = view;
      views.push_back(view);
    }
    Plan& p = planFor(st, sub, &whole);
    if (p.sched.settingsStamp != settings.scheduleStamp())
      buildSchedule(p, sub, settings);
    execute(p, sub, settings, /*accumulate=*/first > 0);
    for (size_t i = 0; i < symOut.size(); ++i) {
      Tensor* part = p.actual[symOut[i].second];
      ensureHost(part);
      const size_t bytes = part->num_elems * sizeof(float);
      std::memcpy(static_cast<char*>(outs[i]->host_data) +
                      size_t(first) * (bytes / size_t(n)),
                  part->host_data, bytes);
    }
    for (Tensor* v : views)
      deleteTensor(v);
    views.clear();
  }
  for (size_t i = 0; i < symOut.size(); ++i) {
    rootOutputs[symOut[i].first] = api::makeValue(static_cast<void*>(outs[i]));
    rootOutputs[symOut[i].first].type = &api::TypeOf<void*>::desc;
  }
  return true;
}

} // namespace

// --- Tracing entry points ---------------------------------------------------

void traceBegin(api::AnyFn root, const std::string& rootName) {
  ExecState& st = processExecutor();
  st.trace.clear();
  st.root = root;
  st.rootName = rootName;
}

void traceAbort() { processExecutor().trace.clear(); }

void* traceOp(LeafContext& leaf, HpvmOp op, const char* api, int numTensors,
              void* const* tensors, const double* scalars) {
  ExecState& st = processExecutor();
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
  ExecState& st = processExecutor();
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
  Plan& p = planFor(st, t, nullptr);
  // The settings are read once per launch: here.
  LaunchSettings& settings = st.bound ? *st.bound : st.unbound;
  LaunchResults& results = settings.results();
  if (results.nodesOfPlan != p.serial) {
    results.nodes = p.fused;
    results.nodesOfPlan = p.serial;
  }
  if (p.sched.settingsStamp != settings.scheduleStamp())
    buildSchedule(p, t, settings);
  results.channelViews = p.sched.numViews;
  results.gatesFolded =
      std::count_if(p.sched.groups.begin(), p.sched.groups.end(),
                    [](const Group& g) { return g.gate != kNoOperand; });
  // A batch whose activations overflow the cache runs in sub-batches
  // (not while calibration observes the inputs whole).
  bool split = false;
  if (p.sched.batch.separable && !settings.inputObserver()) {
    const int64_t batch = p.ops[p.rootOutputs.front()].out[0];
    const int64_t size = subBatchSize(p.sched.batch, batch, numThreads());
    split = size < batch &&
            runSubBatches(st, p, t, settings, size, symOut, rootOutputs);
  }
  if (!split)
    execute(p, t, settings);
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
  if (!split)
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

// --- Launch.h binding point and plan cache statistics -----------------------

LaunchSettings* bindLaunchSettings(LaunchSettings* settings) {
  ExecState& st = processExecutor();
  LaunchSettings* previous = st.bound;
  st.bound = settings;
  return previous;
}

int64_t plansBuilt() { return processExecutor().plansBuilt; }

} // namespace hpvm::rt
