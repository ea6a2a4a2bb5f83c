// LayoutRegions.cpp - the pass that makes channel-last regions (ConvNeXt,
// Swin) channel-first, so that HPVM's N x C x H x W ops compute them.
#include "passes/LayoutRegions.h"

#include "onnx/OpAttrs.h"
#include "passes/AttentionMatchers.h"
#include "passes/Matchers.h"
#include "passes/OpGeometry.h"
#include "passes/Regions.h"

#include <optional>
#include <unordered_set>

namespace hpvm::fe {

namespace {

/// of it: a Slice of rows or columns (Swin's patch merging takes every
/// second one), a Concat along the channels, or a constant Pad of rows and
/// columns (Swin pads to whole windows).
bool movesPixels(const Node* u, const Value* v, int64_t opset) {
  if (v->shape.size() != 4 || u->output->shape.size() != 4)
    return false;
  if (u->kind == OpKind::OnnxConcat) {
    const int64_t axis = OpAttrs(*u, opset).getInt("axis");
    return axis == 3 || axis == -1;
  }
  if (u->kind == OpKind::OnnxPad) {
    std::vector<int64_t> pads;
    double value = 0;
    return u->inputs[0] == v &&
           padGeometry(*u, opset, pads, value, true).empty() &&
           OpAttrs(*u, opset).getString("mode") == "constant";
  }
  std::vector<int64_t> begin, step, extent;
  return u->kind == OpKind::OnnxSlice && u->inputs[0] == v &&
         sliceGeometry(*u, opset, v->shape, begin, step, extent) &&
         begin[0] == 0 && step[0] == 1 && extent[0] == v->shape[0] &&
         begin[3] == 0 && step[3] == 1 && extent[3] == v->shape[3] &&
         step[1] > 0 && step[2] > 0 && extent[1] > 0 && extent[2] > 0;
}

} // namespace

void makeChannelFirst(Graph& g) {
  const int64_t opset = g.source.opset;
  auto permOf = [&](const Node* n) {
    return OpAttrs(*n, opset).getInts("perm");
  };
  const std::vector<int64_t> toLast = {0, 2, 3, 1}, toFirst = {0, 3, 1, 2};
  std::unordered_set<Node*> erased;
  for (Node* enter : nodeList(g)) {
    if (erased.count(enter) || enter->kind != OpKind::OnnxTranspose ||
        enter->inputs[0]->shape.size() != 4 || enter->inputs[0]->isConstant() ||
        permOf(enter) != toLast || g.isOutput(enter->output))
      continue;
    // The region: every node reachable from the channel-last value before
    // a Transpose back; each must work per pixel on the last axis.
    // Swin's window attentions are taken whole.
    std::vector<WindowAttentionMatch> windows;
    std::optional<Region> region =
        walkRegion(g, {enter->output}, [&](Node* u, Value* v) {
          if (u->kind == OpKind::OnnxTranspose && permOf(u) == toFirst)
            return RegionStep{RegionStep::Exit};
          WindowAttentionMatch m;
          if ((u->kind == OpKind::OnnxSlice ||
               u->kind == OpKind::OnnxReshape) &&
              matchWindowAttention(g, v, m)) {
            windows.push_back(m);
            return RegionStep{RegionStep::Block, m.nodes};
          }
          return RegionStep{
              (worksPerPixel(u, v, opset) || movesPixels(u, v, opset)) &&
                      u->output->shape.size() == 4
                  ? RegionStep::Member
                  : RegionStep::Leave};
        });
    if (!region)
      continue;
    // Rewrite: shapes N x H x W x C become N x C x H x W.
    for (Node* u : region->members) {
      const std::vector<int64_t> s = u->output->shape;
      u->output->shape = {s[0], s[3], s[1], s[2]};
      rewriteChannelFirst(g, u, erased);
    }
    for (const WindowAttentionMatch& m : windows) {
      for (Node* n : m.nodes)
        erased.insert(n);
      replaceWindowAttention(g, m);
    }
    for (Node* x : region->exits) {
      g.replaceAllUses(x->output, x->inputs[0]);
      g.eraseNode(x);
      erased.insert(x);
    }
    g.replaceAllUses(enter->output, enter->inputs[0]);
    g.eraseNode(enter);
    erased.insert(enter);
  }
  g.pruneValues();
}

} // namespace hpvm::fe
