// Regions.h - regions of activations that ONNX holds in another layout
// than HPVM's N x C x H x W (channel-last stages, token sequences), kept
// channel-first: the walk that finds one, the per-pixel ops it may hold
// and their channel-first rewrite. The passes of LayoutRegions.h and
// TokenStages.h share them.
#ifndef TORCH2HPVM_FRONTEND_PASSES_REGIONS_H
#define TORCH2HPVM_FRONTEND_PASSES_REGIONS_H

#include "ir/Graph.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_set>
#include <vector>

namespace hpvm::fe {

/// True if node \p u, reading channel-last value \p v, works per pixel on
/// the last axis: LayerNormalization over it, MatMul by a constant matrix
/// (a Linear layer), elementwise ops whose constants are scalars or hold
/// one value per channel of the last axis, activations (Erf included: the
/// pieces of a GELU not fused yet). Whether every non-constant operand
/// comes from the same region is for the caller to check.
bool worksPerPixel(const Node* u, const Value* v, int64_t opset);

/// True if node \p u is an activation of \p v, element by element
/// (Sigmoid, Relu, Tanh, LeakyRelu, HardSigmoid, HardSwish, Clip), its
/// other inputs constants or absent: the same op on any layout.
bool isActivationOf(const Node* u, const Value* v);

/// Rewrites node \p u of a channel-last region for channel-first data
/// (its output shape already is): a LayerNormalization over the last axis
/// becomes layer_norm, a MatMul by a constant K x N matrix a 1 x 1 Conv,
/// and constants over the last axis of elementwise ops C x 1 x 1. Adds the
/// nodes it replaces to \p erased.
void rewriteChannelFirst(Graph& g, Node* u, std::unordered_set<Node*>& erased);

/// Maps the axes Slice \p u slices by \p axisOf (an axis of its input's
/// layout to one of the layout it is rewritten for), its attribute before
/// opset 10, its axes input from opset 10.
void remapSliceAxes(Graph& g, Node& u, int64_t (*axisOf)(int64_t));

/// What a region walk makes of a user of a value inside the region.
struct RegionStep {
  enum Kind { Member, Exit, Block, Leave } kind;
  /// Block: nodes taken as a whole; the walk goes on from the last one's
  /// output (they are not members: the caller rewrites them itself).
  std::vector<Node*> block = {};
};

/// A region of activations in another layout: the nodes reachable from a
/// value before they leave it again.
struct Region {
  std::vector<Node*> members; ///< Rewritten node by node.
  std::vector<Node*> exits;   ///< Where the walk stopped, in order.
  /// The names of the members' values that are graph outputs (only when
  /// the walk was allowed them).
  std::vector<std::string> outputs;
};

/// Walks every node reachable from \p starts, in graph (topological)
/// order, so that a node's inputs from the region are classified before it
/// is: step(u, v) classifies each node u reading a value v of the region
/// (its first). Nothing when a step leaves, the walk reaches a graph output
/// (unless \p outputs: then that value is one of the region's outputs), a
/// member reads a value from outside the region that is not a constant (no
/// mixing of layouts: then \p outside, if given, is that value), or no exit
/// is found; then \p stop (if given) is the node where it stopped (null: no
/// exit).
template <typename Step>
std::optional<Region>
walkRegion(const Graph& g, const std::vector<Value*>& starts, Step step,
           bool outputs = false, const Node** stop = nullptr,
           const Value** outside = nullptr) {
  auto stopAt = [&](const Node* n) {
    if (stop)
      *stop = n;
    return std::nullopt;
  };
  Region r;
  std::unordered_set<const Node*> seen;
  std::unordered_set<const Value*> inside;
  // Value v joins the region; false if it may not (a graph output).
  auto join = [&](Value* v) {
    inside.insert(v);
    if (!g.isOutput(v))
      return true;
    if (!outputs || std::find(starts.begin(), starts.end(), v) != starts.end())
      return false;
    r.outputs.push_back(v->name);
    return true;
  };
  for (Value* start : starts)
    if (!join(start))
      return stopAt(start->producer);
  for (const auto& owned : g.nodes()) {
    Node* u = owned.get();
    auto in = std::find_if(u->inputs.begin(), u->inputs.end(),
                           [&](const Value* v) { return inside.count(v); });
    if (in == u->inputs.end() || !seen.insert(u).second)
      continue;
    RegionStep s = step(u, *in);
    switch (s.kind) {
    case RegionStep::Leave:
      return stopAt(u);
    case RegionStep::Exit:
      r.exits.push_back(u);
      break;
    case RegionStep::Member:
      r.members.push_back(u);
      if (!join(u->output))
        return stopAt(u);
      break;
    case RegionStep::Block:
      seen.insert(s.block.begin(), s.block.end());
      if (!join(s.block.back()->output))
        return stopAt(s.block.back());
      break;
    }
  }
  for (const Node* u : r.members)
    for (const Value* in : u->inputs)
      if (!inside.count(in) && !in->isConstant()) {
        if (outside)
          *outside = in;
        return stopAt(u);
      }
  if (r.exits.empty() && r.outputs.empty())
    return stopAt(nullptr);
  return r;
}

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_PASSES_REGIONS_H
