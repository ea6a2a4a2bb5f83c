// Simplify.cpp - the passes that remove what HPVM needs no code for: dead
// nodes, identities, Pads folded into their consumer, aliased reshapes.
#include "passes/Simplify.h"

#include "onnx/OpAttrs.h"
#include "passes/Matchers.h"
#include "passes/OpGeometry.h"

#include <algorithm>
#include <unordered_set>

namespace hpvm::fe {

namespace {

/// A Pad of constant pads, all 0 (Swin pads its windows by 0 when they
/// tile the image already).
bool isIdentityPad(const Node& n, int64_t opset) {
  std::vector<int64_t> pads;
  return n.kind == OpKind::OnnxPad && constantPads(n, opset, pads) &&
         std::all_of(pads.begin(), pads.end(),
                     [](int64_t p) { return p == 0; });
}

/// A Slice that keeps every element of its (statically shaped) input.
bool isIdentitySlice(const Node& n, int64_t opset) {
  if (n.kind != OpKind::OnnxSlice || n.inputs.empty())
    return false;
  const Value* x = n.inputs[0];
  std::vector<int64_t> begin, step, extent;
  if (x->isConstant() || x->shape.empty() ||
      !sliceGeometry(n, opset, x->shape, begin, step, extent))
    return false;
  for (size_t d = 0; d < x->shape.size(); ++d)
    if (begin[d] != 0 || step[d] != 1 || extent[d] != x->shape[d])
      return false;
  return true;
}

} // namespace

void eliminateDeadNodes(Graph& g) {
  std::unordered_set<const Node*> live;
  std::vector<const Node*> work;
  for (const GraphOutput& o : g.outputs)
    if (o.value->producer != nullptr)
      work.push_back(o.value->producer);
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    if (!live.insert(n).second)
      continue;
    for (const Value* in : n->inputs)
      if (in->producer != nullptr)
        work.push_back(in->producer);
  }
  std::vector<Node*> nodes = nodeList(g);
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it)
    if (!live.count(*it))
      g.eraseNode(*it);
  g.pruneValues();
}

void removeIdentities(Graph& g) {
  for (Node* n : nodeList(g)) {
    if (n->kind == OpKind::OnnxDropout && n->inputs.size() > 2) {
      // opset 12+: training_mode must be a constant false, or the ratio a
      // constant 0 (F.dropout(x, p=0.0) keeps training=True: Swin's).
      const Value* mode = n->inputs[2];
      const Value* ratio = n->inputs[1];
      const bool inference = mode->isConstant() &&
                             mode->constant->numElements() == 1 &&
                             mode->constant->asInt(0) == 0;
      const bool none = ratio->isConstant() &&
                        ratio->constant->numElements() == 1 &&
                        ratio->constant->asDouble(0) == 0.0;
      if (!inference && !none)
        continue;
    }
    if (n->kind == OpKind::OnnxIdentity || n->kind == OpKind::OnnxDropout ||
        isIdentityPad(*n, g.source.opset) ||
        isIdentitySlice(*n, g.source.opset)) {
      g.replaceAllUses(n->output, n->inputs[0]);
      g.eraseNode(n);
    }
  }
  g.pruneValues();
}

void foldPads(Graph& g) {
  for (Node* pad : nodeList(g)) {
    if (pad->kind != OpKind::OnnxPad ||
        !padFoldBlocker(*pad, g.source.opset).empty())
      continue;
    OpAttrs attrs(*pad, g.source.opset);
    std::vector<int64_t> pads;
    if (pad->inputs.size() > 1)
      pads = pad->inputs[1]->constant->toInts();
    else
      pads =
          attrs.has("pads") ? attrs.getInts("pads") : attrs.getInts("paddings");
    Node* user = pad->output->users.front();
    OpAttrs userAttrs(*user, g.source.opset);
    std::vector<int64_t> own = userAttrs.getInts("pads");
    if (own.size() != 4 || userAttrs.getString("auto_pad") == "VALID")
      own.assign(4, 0);
    // ONNX pads: [top, left, bottom, right] for the consumer, and
    // [n, c, top, left, n, c, bottom, right] for Pad.
    own[0] += pads[2];
    own[1] += pads[3];
    own[2] += pads[6];
    own[3] += pads[7];
    user->attrs["pads"] = own;
    user->attrs["auto_pad"] = std::string("NOTSET");
    if (user->kind == OpKind::OnnxAveragePool)
      user->attrs["count_include_pad"] = int64_t{1};
    g.setInput(user, 0, pad->inputs[0]);
    user->origins.push_back(pad->origins.front());
    g.eraseNode(pad);
  }
  g.pruneValues();
}

void aliasReshapes(Graph& g) {
  for (Node* n : nodeList(g)) {
    if (n->kind != OpKind::OnnxFlatten && n->kind != OpKind::OnnxReshape)
      continue;
    if (n->inputs[0]->isConstant() ||
        !reshapeAliasBlocker(*n, g.source.opset).empty())
      continue;
    g.replaceAllUses(n->output, n->inputs[0]);
    g.eraseNode(n);
  }
  g.pruneValues();
}

} // namespace hpvm::fe
