// AnchorMaps.cpp - the pass that holds per-anchor maps B x A x H x W x K as
// B x K x A*H x W images (AnchorMaps.h).
#include "passes/AnchorMaps.h"

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

/// A head's entry: Reshape \p view of B x A*K x H x W to B x A x K x H x
/// W, Transpose \p cells to B x A x H x W x K.
struct MapEntry {
  Node *view = nullptr, *cells = nullptr;
};

std::optional<MapEntry> matchMapEntry(const Graph& g, Node* view) {
  if (view->kind != OpKind::OnnxReshape)
    return std::nullopt;
  const Value* x = view->inputs[0];
  const std::vector<int64_t>&s = x->shape, &o = view->output->shape;
  if (x->isConstant() || s.size() != 4 || o.size() != 5 || o[0] != s[0] ||
      o[1] < 1 || o[2] < 1 || o[1] * o[2] != s[1] || o[3] != s[2] ||
      o[4] != s[3] || g.isOutput(view->output))
    return std::nullopt;
  Node* cells = soleUser(view->output);
  if (!isTranspose(cells, view->output, {0, 1, 3, 4, 2}, g.source.opset) ||
      g.isOutput(cells->output))
    return std::nullopt;
  return MapEntry{view, cells};
}

/// Axis \p a of a B x A x H x W x K map as an axis of its B x K x A*H x W
/// image (A and H share one: only K is ever sliced or joined).
int64_t heldAxis(int64_t a) {
  static const int64_t map[] = {0, 2, 2, 3, 1};
  if (a < -5 || a >= 5)
    return a; // no axis of a map: stays one (lowering refuses it)
  return map[a < 0 ? a + 5 : a];
}

/// Axis \p a of B x boxes x K boxes as an axis of their B x K x 1 x boxes
/// image.
int64_t boxesAxis(int64_t a) {
  static const int64_t map[] = {0, 3, 1};
  if (a < -3 || a >= 3)
    return a;
  return map[a < 0 ? a + 3 : a];
}

/// The dims of constant \p c of a binary op on maps of dims \p out,
/// aligned to rank 5, if it broadcasts against them at batch 1.
std::optional<std::vector<int64_t>>
mapConstantDims(const Value* c, const std::vector<int64_t>& out) {
  const std::vector<int64_t>& d = c->constant->dims;
  if (d.size() > 5 || c->constant->dtype != DataType::Float)
    return std::nullopt;
  std::vector<int64_t> a(5 - d.size(), 1);
  a.insert(a.end(), d.begin(), d.end());
  if (a[0] != 1)
    return std::nullopt;
  for (size_t i = 1; i < 5; ++i)
    if (a[i] != 1 && a[i] != out[i])
      return std::nullopt;
  return a;
}

/// \p u, reading map \p v (B x A x H x W x K), computes a map from maps
/// and constants, element by element or along K.
bool worksOnMaps(const Node* u, const Value* v, int64_t opset) {
  const std::vector<int64_t>& out = u->output->shape;
  if (out.size() != 5 || out[0] != v->shape[0])
    return false;
  switch (u->kind) {
  case OpKind::OnnxAdd:
  case OpKind::OnnxSub:
  case OpKind::OnnxMul:
  case OpKind::OnnxDiv: {
    // (Before opset 7, broadcasting was an attribute.)
    bool fits = u->inputs.size() == 2 && opset >= 7;
    for (const Value* in : u->inputs)
      fits = fits && (in->isConstant() ? mapConstantDims(in, out).has_value()
                                       : in->shape == out);
    return fits;
  }
  case OpKind::OnnxPow:
    return u->inputs.size() == 2 && u->inputs[0] == v &&
           u->inputs[1]->isConstant() &&
           u->inputs[1]->constant->numElements() == 1;
  case OpKind::OnnxSlice: {
    std::vector<int64_t> begin, step, extent;
    if (u->inputs[0] != v ||
        !sliceGeometry(*u, opset, v->shape, begin, step, extent))
      return false;
    for (size_t d = 0; d < 4; ++d)
      if (begin[d] != 0 || step[d] != 1 || extent[d] != v->shape[d])
        return false;
    return step[4] == 1 && extent[4] > 0;
  }
  case OpKind::OnnxConcat: {
    bool fits = heldAxis(OpAttrs(*u, opset).getInt("axis")) == 1;
    for (const Value* in : u->inputs)
      fits = fits && !in->isConstant() && in->shape.size() == 5;
    return fits;
  }
  default:
    return isActivationOf(u, v);
  }
}

/// Constant \p c of a map op, broadcast as \p a (mapConstantDims), for
/// the map held B x K x A*H x W of dims \p out: one value per K where it
/// varies along K only, else every value of 1 x K x A*H x W.
Value* heldConstant(Graph& g, const Value* c, const std::vector<int64_t>& a,
                    const std::vector<int64_t>& out) {
  const std::vector<float> src = c->constant->toFloats();
  const int64_t A = out[1], H = out[2], W = out[3], K = out[4];
  std::vector<int64_t> dims;
  std::vector<float> v;
  if (a[1] == 1 && a[2] == 1 && a[3] == 1) {
    dims = {1, a[4], 1, 1};
    v = src;
  } else {
    dims = {1, K, A * H, W};
    v.resize(size_t(K * A * H * W));
    auto at = [&](int64_t i, size_t d) { return a[d] == 1 ? 0 : i; };
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < A; ++n)
        for (int64_t y = 0; y < H; ++y)
          for (int64_t x = 0; x < W; ++x)
            v[size_t(((k * A + n) * H + y) * W + x)] = src[size_t(
                (((at(n, 1) * a[2] + at(y, 2)) * a[3] + at(x, 3)) * a[4]) +
                at(k, 4))];
  }
  Value* held =
      g.addConstant(c->name, floatTensor(v, dims), c->initializerIndex);
  held->shape = dims;
  return held;
}

} // namespace

void makeAnchorMapsImages(Graph& g) {
  const int64_t opset = g.source.opset;
  std::vector<MapEntry> entries;
  std::vector<Value*> starts;
  for (Node* n : nodeList(g))
    if (std::optional<MapEntry> e = matchMapEntry(g, n)) {
      entries.push_back(*e);
      starts.push_back(e->cells->output);
    }
  if (entries.empty())
    return;
  // Boxes: the maps viewed as B x A*H*W x K, and their concatenations.
  std::unordered_set<const Value*> boxes;
  auto step = [&](Node* u, const Value* v) {
    const std::vector<int64_t>& out = u->output->shape;
    if (boxes.count(v)) {
      bool fits = u->kind == OpKind::OnnxConcat && out.size() == 3 &&
                  boxesAxis(OpAttrs(*u, opset).getInt("axis")) == 3;
      for (const Value* in : u->inputs)
        fits = fits && !in->isConstant() && in->shape.size() == 3;
      if (!fits)
        return RegionStep{RegionStep::Leave};
      boxes.insert(u->output);
      return RegionStep{RegionStep::Member};
    }
    const std::vector<int64_t>& s = v->shape;
    if (u->kind == OpKind::OnnxReshape && u->inputs[0] == v &&
        out == std::vector<int64_t>{s[0], s[1] * s[2] * s[3], s[4]}) {
      boxes.insert(u->output);
      return RegionStep{RegionStep::Member};
    }
    return RegionStep{worksOnMaps(u, v, opset) ? RegionStep::Member
                                               : RegionStep::Leave};
  };
  std::optional<Region> region = walkRegion(g, starts, step, true);
  if (!region)
    return;
  // Only boxes leave as graph outputs (written B x boxes x K).
  for (GraphOutput& o : g.outputs)
    if (std::find(region->outputs.begin(), region->outputs.end(),
                  o.value->name) != region->outputs.end() &&
        !boxes.count(o.value))
      return;
  for (GraphOutput& o : g.outputs)
    if (boxes.count(o.value) &&
        !(o.declared.size() == 3 &&
          std::all_of(o.declared.begin() + 1, o.declared.end(),
                      [](int64_t d) { return d > 0; })))
      o.declared = o.value->shape;
  // Each entry: the A groups of K channels made K groups of A (channel
  // a*K + k to k*A + a), then viewed as B x K x A*H x W.
  for (const MapEntry& e : entries) {
    Value* x = e.view->inputs[0];
    const std::vector<int64_t>& m = e.cells->output->shape;
    Value* shuffled =
        g.addValue(x->name + ".by_value", DataType::Float, x->shape);
    Node* shuffle = g.addNode(OpKind::ChannelShuffle, {x}, shuffled,
                              e.view->origins, g.position(e.view));
    shuffle->scalars = {Scalar::integer(m[1])};
    Node* held =
        replaceChain(g, OpKind::Reshape, {shuffled}, {e.view, e.cells});
    held->scalars = {Scalar::integer(m[4]), Scalar::integer(m[1] * m[2]),
                     Scalar::integer(m[3])};
    held->output->shape = {m[0], m[4], m[1] * m[2], m[3]};
  }
  for (Node* u : region->members) {
    const std::vector<int64_t> s = u->output->shape;
    if (boxes.count(u->output)) {
      if (u->kind == OpKind::OnnxConcat) {
        u->attrs["axis"] = int64_t{3};
        u->output->shape = {s[0], s[2], 1, s[1]};
        continue;
      }
      // A map viewed as boxes: B x K x 1 x A*H*W, the same values.
      Node* flat = replaceChain(g, OpKind::Reshape, {u->inputs[0]}, {u});
      flat->scalars = {Scalar::integer(s[2]), Scalar::integer(1),
                       Scalar::integer(s[1])};
      flat->output->shape = {s[0], s[2], 1, s[1]};
      continue;
    }
    u->output->shape = {s[0], s[4], s[1] * s[2], s[3]};
    switch (u->kind) {
    case OpKind::OnnxConcat:
      u->attrs["axis"] = int64_t{1};
      break;
    case OpKind::OnnxSlice:
      remapSliceAxes(g, *u, heldAxis);
      break;
    case OpKind::OnnxAdd:
    case OpKind::OnnxSub:
    case OpKind::OnnxMul:
    case OpKind::OnnxDiv:
      for (size_t i = 0; i < 2; ++i) {
        const Value* in = u->inputs[i];
        if (in->isConstant() && in->constant->numElements() != 1)
          g.setInput(u, i, heldConstant(g, in, *mapConstantDims(in, s), s));
      }
      break;
    default:
      break;
    }
  }
  // Boxes at the graph outputs: written B x boxes x K (channels_last).
  for (GraphOutput& o : g.outputs) {
    Value* cf = o.value;
    if (cf->shape.size() != 4 ||
        std::find(region->outputs.begin(), region->outputs.end(), cf->name) ==
            region->outputs.end())
      continue;
    const std::vector<int64_t>& held = cf->shape;
    Value* last =
        g.addValue(cf->name, DataType::Float, {held[0], 1, held[3], held[1]});
    g.addNode(OpKind::ChannelsLast, {cf}, last, cf->producer->origins,
              g.position(cf->producer) + 1);
    o.value = last;
  }
  g.pruneValues();
}

} // namespace hpvm::fe
