// FeatureSequences.cpp - the pass that holds sequences of features B x C x
// L as B x C x 1 x L images (FeatureSequences.h).
#include "passes/FeatureSequences.h"

#include "onnx/OpAttrs.h"
#include "passes/ConstantTensors.h"
#include "passes/Matchers.h"
#include "passes/OpGeometry.h"
#include "passes/Regions.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

namespace hpvm::fe {

namespace {

/// \p enter is a Reshape of a B x C x H x W activation to B x C x H*W.
bool isSequenceEntry(const Node* enter) {
  if (enter->kind != OpKind::OnnxReshape)
    return false;
  const Value* x = enter->inputs[0];
  const std::vector<int64_t>& s = x->shape;
  return !x->isConstant() && s.size() == 4 && s[2] > 0 && s[3] > 0 &&
         enter->output->shape == std::vector<int64_t>{s[0], s[1], s[2] * s[3]};
}

/// Axis \p a of a B x C x L sequence as an axis of its B x C x 1 x L image.
int64_t imageAxis(int64_t a) {
  static const int64_t map[] = {0, 1, 3};
  if (a < -3 || a >= 3)
    return a; // no axis of a sequence: stays one (lowering refuses it)
  return map[a < 0 ? a + 3 : a];
}

/// The dims of constant \p c of a binary op on B x C x L sequences aligned
/// to rank 3, if it broadcasts against \p out there without a batch of its
/// own: 1 x (1 or C) x (1 or L).
std::optional<std::vector<int64_t>>
sequenceConstantDims(const Value* c, const std::vector<int64_t>& out) {
  const std::vector<int64_t>& d = c->constant->dims;
  if (d.size() > 3)
    return std::nullopt;
  std::vector<int64_t> a(3 - d.size(), 1);
  a.insert(a.end(), d.begin(), d.end());
  if (a[0] != 1 || (a[1] != 1 && a[1] != out[1]) ||
      (a[2] != 1 && a[2] != out[2]))
    return std::nullopt;
  return a;
}

/// \p u, reading sequence \p v, works on sequences: see FeatureSequences.h.
bool worksOnSequences(const Node* u, const Value* v, int64_t opset) {
  const std::vector<int64_t>& out = u->output->shape;
  if (out.size() != 3)
    return false;
  switch (u->kind) {
  case OpKind::OnnxConcat: {
    const int64_t axis = imageAxis(OpAttrs(*u, opset).getInt("axis"));
    bool fits = axis == 1 || axis == 3;
    for (const Value* in : u->inputs)
      fits = fits && !in->isConstant() && in->shape.size() == 3;
    return fits;
  }
  case OpKind::OnnxSlice: {
    std::vector<int64_t> begin, step, extent;
    if (u->inputs[0] != v ||
        !sliceGeometry(*u, opset, v->shape, begin, step, extent))
      return false;
    auto whole = [&](size_t d) {
      return begin[d] == 0 && step[d] == 1 && extent[d] == v->shape[d];
    };
    return whole(0) && (whole(1) || whole(2)) && step[2] >= 1 &&
           extent[1] > 0 && extent[2] > 0;
  }
  case OpKind::OnnxAdd:
  case OpKind::OnnxSub:
  case OpKind::OnnxMul:
  case OpKind::OnnxDiv:
  case OpKind::OnnxMax:
  case OpKind::OnnxMin: {
    // (Before opset 7, broadcasting was an attribute.)
    bool fits = u->inputs.size() == 2 && opset >= 7;
    for (const Value* in : u->inputs)
      fits = fits &&
             (in->isConstant() ? in->constant->dtype == DataType::Float &&
                                     sequenceConstantDims(in, out).has_value()
                               : in->shape == out);
    return fits;
  }
  case OpKind::OnnxSoftmax:
  case OpKind::OnnxLogSoftmax: {
    // Over the features (before opset 13, axis 1 meant C and L together).
    const int64_t axis = OpAttrs(*u, opset).getInt("axis");
    return opset >= 13 && u->inputs[0] == v && (axis == 1 || axis == -2);
  }
  default:
    return isActivationOf(u, v);
  }
}

/// YOLOv8's box decoding (DFL) on B x C x L sequence \p v from Reshape
/// \p r: B x G x K x L, Transpose (0, 2, 1, 3), Softmax over the K bins, a
/// 1 x 1 Conv of K channels to one, Reshape to B x G x L.
struct BinDecoding {
  std::vector<Node*> nodes; ///< Reshape, Transpose, Softmax, Conv, Reshape.
  int64_t groups = 0, bins = 0;
};

std::optional<BinDecoding> matchBinDecoding(const Graph& g, Node* r,
                                            const Value* v) {
  const int64_t opset = g.source.opset;
  const std::vector<int64_t>& s = v->shape;
  const std::vector<int64_t>& rs = r->output->shape;
  if (r->kind != OpKind::OnnxReshape || r->inputs[0] != v || s.size() != 3 ||
      rs.size() != 4 || rs[0] != s[0] || rs[3] != s[2] || rs[1] < 1 ||
      rs[2] < 1 || rs[1] * rs[2] != s[1] || opset < 13)
    return std::nullopt;
  const int64_t G = rs[1], K = rs[2];
  Node* t = soleUser(r->output);
  if (!isTranspose(t, r->output, {0, 2, 1, 3}, opset))
    return std::nullopt;
  Node* soft = soleUser(t->output);
  if (!soft || soft->kind != OpKind::OnnxSoftmax)
    return std::nullopt;
  if (const int64_t axis = OpAttrs(*soft, opset).getInt("axis");
      axis != 1 && axis != -3)
    return std::nullopt;
  Node* conv = soleUser(soft->output);
  if (!conv || conv->kind != OpKind::OnnxConv ||
      conv->inputs[0] != soft->output || !conv->inputs[1]->isConstant() ||
      conv->inputs[1]->constant->dims != std::vector<int64_t>{1, K, 1, 1} ||
      conv->inputs[1]->constant->dtype != DataType::Float ||
      conv->output->shape != std::vector<int64_t>{s[0], 1, G, s[2]})
    return std::nullopt;
  if (conv->inputs.size() > 2 && !conv->inputs[2]->name.empty() &&
      (!conv->inputs[2]->isConstant() ||
       conv->inputs[2]->constant->numElements() != 1 ||
       conv->inputs[2]->constant->dtype != DataType::Float))
    return std::nullopt;
  OpAttrs a(*conv, opset);
  auto all = [](const std::vector<int64_t>& xs, int64_t x) {
    return std::all_of(xs.begin(), xs.end(), [x](int64_t e) { return e == x; });
  };
  if (a.getInt("group") != 1 || !all(a.getInts("strides"), 1) ||
      !all(a.getInts("dilations"), 1) || !all(a.getInts("pads"), 0) ||
      (a.has("auto_pad") && a.getString("auto_pad") != "NOTSET"))
    return std::nullopt;
  Node* back = soleUser(conv->output);
  if (!back || back->kind != OpKind::OnnxReshape ||
      back->output->shape != std::vector<int64_t>{s[0], G, s[2]})
    return std::nullopt;
  for (const Node* n : {r, t, soft, conv})
    if (g.isOutput(n->output))
      return std::nullopt;
  return BinDecoding{{r, t, soft, conv, back}, G, K};
}

/// Rewrites \p m as group_softmax of its sequence and a 1 x 1 Conv of G
/// groups of K channels to one each (the Conv's weights and bias in each).
void replaceBinDecoding(Graph& g, const BinDecoding& m) {
  const Node* conv = m.nodes[3];
  Value* x = m.nodes[0]->inputs[0];
  const std::vector<int64_t> held = {x->shape[0], x->shape[1], 1, x->shape[2]};
  std::vector<Origin> softOrigins;
  for (size_t i = 0; i < 3; ++i)
    softOrigins.insert(softOrigins.end(), m.nodes[i]->origins.begin(),
                       m.nodes[i]->origins.end());
  Value* soft = g.addValue(m.nodes[2]->output->name, DataType::Float, held);
  Node* groups = g.addNode(OpKind::GroupSoftmax, {x}, soft, softOrigins,
                           g.position(m.nodes[0]));
  groups->scalars = {Scalar::integer(m.groups)};
  const Value* w = conv->inputs[1];
  std::vector<float> k = w->constant->toFloats(), weights;
  for (int64_t i = 0; i < m.groups; ++i)
    weights.insert(weights.end(), k.begin(), k.end());
  Value* filter =
      g.addConstant(w->name, floatTensor(weights, {m.groups, m.bins, 1, 1}),
                    w->initializerIndex);
  filter->shape = {m.groups, m.bins, 1, 1};
  std::vector<Value*> ins = {soft, filter};
  if (conv->inputs.size() > 2 && !conv->inputs[2]->name.empty()) {
    const Value* b = conv->inputs[2];
    Value* bias = g.addConstant(
        b->name,
        floatTensor(
            std::vector<float>(size_t(m.groups), b->constant->toFloats()[0]),
            {m.groups}),
        b->initializerIndex);
    bias->shape = {m.groups};
    ins.push_back(bias);
  }
  Node* grouped = replaceChain(g, OpKind::OnnxConv, std::move(ins),
                               {m.nodes[3], m.nodes[4]});
  grouped->attrs["group"] = m.groups;
  grouped->attrs["kernel_shape"] = std::vector<int64_t>{1, 1};
  grouped->output->shape = {x->shape[0], m.groups, 1, x->shape[2]};
  for (size_t i = 3; i-- > 0;)
    g.eraseNode(m.nodes[i]);
}

} // namespace

void makeSequencesImages(Graph& g) {
  const int64_t opset = g.source.opset;
  std::unordered_set<Node*> erased;
  for (Node* enter : nodeList(g)) {
    if (erased.count(enter) || !isSequenceEntry(enter) ||
        g.isOutput(enter->output))
      continue;
    std::vector<Node*> entries = {enter};
    std::vector<BinDecoding> decodings;
    std::optional<Region> region;
    auto step = [&](Node* u, const Value* v) {
      if (std::optional<BinDecoding> m = matchBinDecoding(g, u, v)) {
        decodings.push_back(*m);
        return RegionStep{RegionStep::Block, m->nodes};
      }
      // Back to B x C x H x W: the same values (a memory reshape).
      const std::vector<int64_t>& out = u->output->shape;
      if (u->kind == OpKind::OnnxReshape && out.size() == 4 &&
          out[0] == v->shape[0] && out[1] == v->shape[1] && out[2] > 0 &&
          out[3] > 0 && out[2] * out[3] == v->shape[2] && !g.isOutput(v))
        return RegionStep{RegionStep::Exit};
      return RegionStep{worksOnSequences(u, v, opset) ? RegionStep::Member
                                                      : RegionStep::Leave};
    };
    // Sequences other entries make join the region where its nodes read
    // them (YOLOv8's scales, concatenated along the positions).
    for (;;) {
      decodings.clear();
      std::vector<Value*> starts;
      for (Node* e : entries)
        starts.push_back(e->output);
      const Value* outside = nullptr;
      region = walkRegion(g, starts, step, true, nullptr, &outside);
      if (region || outside == nullptr || outside->producer == nullptr ||
          !isSequenceEntry(outside->producer) || g.isOutput(outside))
        break;
      entries.push_back(outside->producer);
    }
    if (!region)
      continue;
    erased.insert(entries.begin(), entries.end());
    // Outputs of the region are written with their B x C x L dims: where
    // the model left them symbolic, the inferred ones.
    for (GraphOutput& o : g.outputs) {
      const Node* p = o.value->producer;
      const bool inside =
          std::find(region->members.begin(), region->members.end(), p) !=
              region->members.end() ||
          std::any_of(
              decodings.begin(), decodings.end(),
              [&](const BinDecoding& m) { return m.nodes.back() == p; });
      const bool known = o.declared.size() == 3 &&
                         std::all_of(o.declared.begin() + 1, o.declared.end(),
                                     [](int64_t d) { return d > 0; });
      if (inside && !known)
        o.declared = o.value->shape;
    }
    auto held = [](const std::vector<int64_t>& s) {
      return std::vector<int64_t>{s[0], s[1], 1, s[2]};
    };
    for (Node* e : entries)
      e->output->shape = held(e->output->shape);
    for (const BinDecoding& m : decodings) {
      erased.insert(m.nodes.begin(), m.nodes.end());
      replaceBinDecoding(g, m);
    }
    for (Node* u : region->members) {
      u->output->shape = held(u->output->shape);
      switch (u->kind) {
      case OpKind::OnnxConcat:
        u->attrs["axis"] = imageAxis(OpAttrs(*u, opset).getInt("axis"));
        break;
      case OpKind::OnnxSlice:
        remapSliceAxes(g, *u, imageAxis);
        break;
      case OpKind::OnnxSoftmax:
      case OpKind::OnnxLogSoftmax:
        rewriteChannelFirst(g, u, erased);
        break;
      default:
        // Constants of binary ops: 1 x (1 or C) x 1 x (1 or L).
        for (size_t i = 0; i < u->inputs.size(); ++i) {
          const Value* in = u->inputs[i];
          if (!in->isConstant() || in->constant->numElements() == 1 ||
              u->inputs.size() != 2)
            continue;
          const std::vector<int64_t> d = held(*sequenceConstantDims(
              in, {1, u->output->shape[1], u->output->shape[3]}));
          Value* c = g.addConstant(in->name, withDims(*in->constant, d),
                                   in->initializerIndex);
          c->shape = d;
          g.setInput(u, i, c);
        }
      }
    }
  }
  g.pruneValues();
}

} // namespace hpvm::fe
