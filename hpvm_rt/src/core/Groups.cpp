// Groups.cpp - forms a plan's execution groups (a convolution or dense op
// with its bias, batch norm, activation, residual add and second
// activation; any other op with the activation its kernel applies, in
// place where it may), chains low-precision layers, and records each op.
#include "core/Groups.h"

#include "approx/HalfConv.h"

#include "kernels/ConvGated.h"
#include "kernels/Kernels.h"

#include <algorithm>
#include <unordered_map>

namespace hpvm::rt {

namespace {

/// Sets \p act, \p lo and \p hi to what activation op \p q is as a post-op:
/// its Act and its parameters (actParam).
void setAct(const TraceOp& q, Act& act, float& lo, float& hi) {
  const OpFacts& f = *opInfo(q.op).facts;
  act = f.act;
  lo = actParam(f, q.scalars, 0);
  hi = actParam(f, q.scalars, 1);
}

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

/// Low-precision chains. int8: an exact int8 convolution whose result is
/// read only by int8 convolutions (directly, or through an exact max pool
/// when it adds no residual), as their input (one calibrated quantization,
/// u8 or s8 and its scale; at least one such reader) or as their residual
/// (the kernel adds it scaled), writes it quantized so, whatever its
/// post-ops (the kernel applies them in fp32 first): the values those
/// layers would quantize themselves, at a quarter of the memory traffic
/// and without their quantizing pass; so does an exact fp32 multiply by
/// a gate (squeeze-and-excitation) read so. bf16: a bf16 convolution
/// feeding only bf16 convolutions or mul stores its result as bf16 (round
/// to nearest even, as the next layer would round it; a max pool between
/// commutes with the rounding): the same values at half the memory
/// traffic. A result also read as a bf16 convolution's residual is stored
/// as bf16 too (residual networks: the skip path carried in bf16, as
/// bf16 inference carries it; the add itself is in fp32), and so is a
/// bf16 convolution's result after its residual add (perforated and sampled
/// bf16 readers take such a result too). fp16, where the
/// convolutions run in half arithmetic: a result read only by exact fp16
/// convolutions, as their input, is stored as NHWC half, the layout and
/// values they read (it is rounded to half already).
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
  auto anyConv = [](const Group& g) { return isConvOp(g.kind); };
  auto exactConv = [&](const Group& g) {
    return anyConv(g) && g.knob.variant == Variant::Exact;
  };
  // True when op o's output has readers and each reads it as its input or
  // as its residual (not both) and passes ok(reader, asResidual).
  auto everyReader = [&](int o, auto ok) {
    if (p.isRootOut[o])
      return false;
    int reads = 0;
    for (const Group& r : groups) {
      const bool asInput = r.x == o, asResidual = r.residual == o;
      if (!asInput && !asResidual)
        continue;
      if (asInput == asResidual || !ok(r, asResidual))
        return false;
      ++reads;
    }
    return reads > 0 && reads == p.consumers[o];
  };
  // The quantization every reader of op o's output takes it with, when all
  // of them are int8 convolutions (exact, perforated or sampled: the
  // approximate engines quantize their input the same way) reading it as
  // their input (one calibrated quantization: type and scale) or as their
  // residual (any: the kernel adds it scaled), and one at least as input;
  // scale 0 otherwise.
  auto sharedInputQuant = [&](int o) -> Int8Quant {
    Int8Quant shared{true, 0.f};
    const bool all = everyReader(o, [&](const Group& r, bool asResidual) {
      if (!anyConv(r) || !isInt8(r.knob.precision))
        return false;
      if (asResidual)
        return true;
      const Int8Quant q = int8Calibrated(r.knob);
      if (q.scale <= 0.f || (shared.scale > 0.f &&
                             (q.scale != shared.scale || q.u8 != shared.u8)))
        return false;
      shared = q;
      return true;
    });
    return all ? shared : Int8Quant{true, 0.f};
  };
  // Group g's result quantized as the readers of op o's output take it,
  // where they all are such int8 convolutions.
  auto quantizeFor = [&](Group& g, int o) {
    const Int8Quant q = sharedInputQuant(o);
    g.quantizeOut = q.scale;
    g.quantizeS8 = !q.u8;
  };
  // True when every reader of op o's output is a bf16 convolution (exact,
  // perforated or sampled) reading it as its input or as its residual.
  auto bf16Readers = [&](int o) {
    return everyReader(o, [&](const Group& r, bool) {
      return anyConv(r) && r.knob.precision == Precision::BF16;
    });
  };
  // An exact fp16 convolution with no groups (ConvHalf.h).
  auto halfConv = [](const Group& g) {
    return g.kind == HpvmOp::Conv && g.knob.variant == Variant::Exact &&
           g.knob.precision == Precision::FP16;
  };
  // True when every reader of op o's output is such a convolution reading
  // it as its input, where they run in half arithmetic.
  auto halfReaders = [&](int o) {
    return approx::halfConvAvailable() &&
           everyReader(o, [&](const Group& r, bool asResidual) {
             return !asResidual && halfConv(r);
           });
  };
  for (Group& g : groups) {
    if (halfConv(g)) {
      g.halfOut = halfReaders(g.last);
      continue;
    }
    if (g.kind == HpvmOp::Multiply && g.knob.precision == Precision::FP32 &&
        g.knob.variant == Variant::Exact && g.act == Act::None &&
        g.inPlace == kNoOperand) {
      // A squeeze-and-excitation gate's product read only by int8
      // convolutions (runMultiply quantizes where it broadcasts a gate).
      quantizeFor(g, g.last);
      continue;
    }
    const bool bf16 = g.knob.precision == Precision::BF16;
    if (!exactConv(g) || (!isInt8(g.knob.precision) && !bf16))
      continue;
    if (bf16 && g.residual != kNoOperand) {
      g.bf16Out = bf16Readers(g.last);
      continue;
    }
    int out = g.last;
    const Group* next = readerOf(out);
    if (g.residual == kNoOperand && next &&
        (next->kind == HpvmOp::MaxPool || next->kind == HpvmOp::MaxPoolPads) &&
        next->knob.precision == Precision::FP32 && next->x == out) {
      out = next->last;
      next = readerOf(out);
    }
    if (!bf16) {
      quantizeFor(g, out);
      continue;
    }
    g.bf16Out = (next && next->x == out &&
                 (exactConv(*next) || next->kind == HpvmOp::Mul) &&
                 next->knob.precision == Precision::BF16 &&
                 next->knob.variant == Variant::Exact) ||
                (out == g.last && bf16Readers(out));
  }
}

/// Squeeze-and-excitation gates folded into the convolution that reads
/// their product, one image at a time: an exact fp32 multiply of an
/// activation by its 1 x C x 1 x 1 gate (no activation, not in place, not
/// quantized) whose only reader is an exact fp32 convolution without
/// groups, reading it as its input, joins that convolution's group where
/// the filter is smaller per channel than the activation
/// (gateFoldsIntoFilter): the convolution scales its filter by the gate
/// and reads the activation as it is, and the multiply's pass over the
/// activation goes (EfficientNet-B0 at batch 1: its widest activations).
void foldGateMultiplies(const Plan& p, const Trace& t,
                        std::vector<Group>& groups) {
  std::unordered_map<int, size_t> byMember;
  for (size_t gi = 0; gi < groups.size(); ++gi)
    byMember[groups[gi].members[0]] = gi;
  std::vector<char> folded(groups.size(), 0);
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Group& m = groups[gi];
    const TraceOp& op = p.ops[m.members[0]];
    if (m.kind != HpvmOp::Multiply || m.members.size() != 1 || op.numIn != 2 ||
        m.knob.precision != Precision::FP32 ||
        m.knob.variant != Variant::Exact || m.act != Act::None ||
        m.inPlace != kNoOperand || m.quantizeOut != 0 ||
        p.consumers[m.last] != 1 || p.isRootOut[m.last])
      continue;
    auto reader = byMember.find(p.consumer[m.last]);
    if (reader == byMember.end())
      continue;
    Group& conv = groups[reader->second];
    if (conv.kind != HpvmOp::Conv || conv.x != m.last ||
        conv.residual == m.last || conv.knob.precision != Precision::FP32 ||
        conv.knob.variant != Variant::Exact || conv.quantizeOut != 0 ||
        conv.bf16Out || conv.halfOut || conv.gate != kNoOperand ||
        convArgs(conv.kind, p.ops[conv.members[0]].scalars).groups != 1)
      continue;
    // (The multiply broadcasts its second operand only.)
    const int32_t x = op.in[0], gate = op.in[1];
    if (gate == x ||
        !kern::gateFoldsIntoFilter(shapeOf(p, t, gate), shapeOf(p, t, x),
                                   shapeOf(p, t, p.ops[conv.members[0]].in[1])))
      continue;
    conv.members.insert(conv.members.begin(), m.members[0]);
    conv.x = x;
    conv.gate = gate;
    folded[gi] = 1;
  }
  size_t kept = 0;
  for (size_t gi = 0; gi < groups.size(); ++gi)
    if (!folded[gi]) {
      if (kept != gi)
        groups[kept] = std::move(groups[gi]);
      ++kept;
    }
  groups.resize(kept);
}

} // namespace

/// Forms the execution groups of \p p's ops under the knobs \p s.knobs
/// (a primary op with the post-ops that may join it), in execution order.
void formGroups(const Plan& p, const Trace& t, Schedule& s, bool foldGates) {
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
          const Shape os = shapeOf(p, t, other);
          int64_t oe = numElements(os);
          // (A bias: one value per channel as runAdd reads it, not C
          // values broadcast along another dim.)
          if (oe == elems && stage < 4) {
            g.residual = other;
            stage = 4;
          } else if (oe == channels && oe != elems && stage < 1 &&
                     q.in[0] == cur &&
                     addForm(op.out, os) == AddForm::PerChannel) {
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
            Act a2;
            float lo2, hi2;
            setAct(q, a2, lo2, hi2);
            if (!actsChain(g.act, g.actLo, g.actHi, a2, lo2, hi2))
              break; // (runs as an op of its own)
            g.act2 = a2;
            g.act2Lo = lo2;
            g.act2Hi = hi2;
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
  if (foldGates)
    foldGateMultiplies(p, t, s.groups);
  // A group runs where its last op was traced: every value it reads from
  // outside is a group output traced earlier.
  std::stable_sort(
      s.groups.begin(), s.groups.end(),
      [](const Group& a, const Group& b) { return a.last < b.last; });
}

/// Each op's record (shapes, knob, FLOPs) and each group's FLOPs.
void recordOps(const Plan& p, const Trace& t, Schedule& s) {
  const size_t n = p.ops.size();
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
      in[k] = shapeOf(p, t, op.in[k]);
      r.inputShapes.emplace_back(in[k].begin(), in[k].end());
    }
    r.outputShape.assign(op.out.begin(), op.out.end());
    r.flops = opFlops(op.op, in, op.out, op.scalars);
  }
  for (Group& g : s.groups)
    for (int m : g.members)
      g.flops += s.records[m].flops;
}

} // namespace hpvm::rt
