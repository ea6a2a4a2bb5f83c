// TokenOrder.cpp - see TokenOrder.h.
#include "passes/TokenOrder.h"

#include "onnx/OpAttrs.h"
#include "passes/Matchers.h"
#include "passes/Regions.h"

#include <algorithm>
#include <map>
#include <unordered_set>
#include <vector>

namespace hpvm::fe {

namespace {

const std::vector<int64_t> kFlip = {0, 2, 1}; ///< B x D x T <-> B x T x D
const std::vector<int64_t> kSwap = {1, 0, 2}; ///< B x T x D <-> T x B x D

/// A Transpose of 3-D \p v by \p perm, named \p name, placed before
/// \p before and credited to its ONNX nodes.
Value* addTranspose(Graph& g, Value* v, const std::vector<int64_t>& perm,
                    Node* before, const std::string& name) {
  std::vector<int64_t> dims;
  for (int64_t p : perm)
    dims.push_back(v->shape[size_t(p)]);
  Value* out = g.addValue(name, DataType::Float, dims);
  g.addNode(OpKind::OnnxTranspose, {v}, out, before->origins,
            g.position(before))
      ->attrs["perm"] = perm;
  return out;
}

/// A (2, 0, 1) of the B x D x T tokens a Reshape or Flatten makes becomes
/// (0, 2, 1) then (1, 0, 2); then every other Transpose of a 3-D value
/// with a (0, 2, 1) reader reads that reader's output.
void shareTokenTransposes(Graph& g, int64_t opset) {
  for (Node* t : nodeList(g)) {
    Value* v = t->inputs.empty() ? nullptr : t->inputs[0];
    const Node* p = v ? v->producer : nullptr;
    if (!p || v->shape.size() != 3 || !isTranspose(t, v, {2, 0, 1}, opset) ||
        (p->kind != OpKind::OnnxReshape && p->kind != OpKind::OnnxFlatten))
      continue;
    if (std::none_of(v->users.begin(), v->users.end(), [&](const Node* u) {
          return isTranspose(u, v, kFlip, opset);
        }))
      addTranspose(g, v, kFlip, t, t->output->name + "/tokens");
  }
  for (Node* t : nodeList(g)) {
    Value* v = t->inputs.empty() ? nullptr : t->inputs[0];
    if (!v || v->shape.size() != 3 || !isTranspose(t, v, kFlip, opset))
      continue;
    const std::vector<Node*> readers = v->users;
    for (Node* u : readers) {
      if (u == t || u->kind != OpKind::OnnxTranspose ||
          g.position(u) < g.position(t))
        continue;
      const std::vector<int64_t> b = permOf(u, opset), axes = {0, 1, 2};
      if (b.size() != 3 ||
          !std::is_permutation(b.begin(), b.end(), axes.begin()))
        continue;
      // t's perm is its own inverse: u's dim i is t's output dim c[i].
      std::vector<int64_t> c;
      for (int64_t i : b)
        c.push_back(i == 0 ? 0 : 3 - i);
      g.setInput(u, 0, t->output);
      u->attrs["perm"] = c;
    }
  }
}

/// nn.MultiheadAttention's input projection (a MatMul whose bias Add is
/// read by the Slices of queries, keys and values): it reads the tokens
/// sequence-first in its batch_first form too.
bool isAttentionProjection(const Node* u) {
  const Node* bias =
      u->kind == OpKind::OnnxMatMul ? soleUser(u->output) : nullptr;
  return bias && bias->kind == OpKind::OnnxAdd &&
         !bias->output->users.empty() &&
         std::all_of(
             bias->output->users.begin(), bias->output->users.end(),
             [](const Node* r) { return r->kind == OpKind::OnnxSlice; });
}

/// Puts the sequence-first tokens Transpose \p t makes (T x B x D) batch
/// first (TokenOrder.h), adding the Transposes it makes to \p made; false
/// if nothing on them works per token.
bool makeBatchFirst(Graph& g, Node* t, int64_t opset,
                    std::unordered_set<const Node*>& made) {
  Value* x = t->inputs[0]; // B x T x D
  Value* s = t->output;    // T x B x D
  const std::vector<int64_t> seqShape = s->shape;
  // The ops working per token on them, in graph order.
  std::unordered_set<const Value*> seq = {s};
  std::vector<Node*> members;
  for (size_t i = 0; i <= members.size(); ++i) {
    const Value* v = i == 0 ? s : members[i - 1]->output;
    for (Node* u : v->users) {
      if (seq.count(u->output) || g.isOutput(u->output) ||
          u->output->shape.size() != 3 || u->output->shape[1] != seqShape[1] ||
          !worksPerPixel(u, v, opset) || isAttentionProjection(u))
        continue;
      const bool fits =
          std::all_of(u->inputs.begin(), u->inputs.end(), [&](const Value* w) {
            return w->isConstant() || w->name.empty() || seq.count(w) ||
                   w->shape == u->output->shape;
          });
      if (!fits)
        continue;
      seq.insert(u->output);
      members.push_back(u);
    }
  }
  if (members.empty())
    return false;
  std::sort(members.begin(), members.end(), [&](const Node* a, const Node* b) {
    return g.position(a) < g.position(b);
  });
  // Other T x B x D inputs of the members, read through a Transpose (one
  // for each such input).
  std::map<const Value*, Value*> batchFirst;
  for (Node* u : members)
    for (size_t k = 0; k < u->inputs.size(); ++k) {
      Value* w = u->inputs[k];
      if (w->isConstant() || w->name.empty() || seq.count(w))
        continue;
      auto [it, fresh] = batchFirst.try_emplace(w, nullptr);
      if (fresh) {
        it->second = addTranspose(g, w, kSwap, u, w->name + "/batch_first");
        made.insert(it->second->producer);
      }
      g.setInput(u, k, it->second);
    }
  for (Node* u : members) {
    for (size_t k = 0; k < u->inputs.size(); ++k)
      if (u->inputs[k] == s)
        g.setInput(u, k, x);
    const std::vector<int64_t> d = u->output->shape;
    u->output->shape = {d[1], d[0], d[2]};
  }
  // The members' other readers: a Transpose back is gone, a mean or a
  // Gather along the tokens takes axis 1; each other one reads the tokens
  // sequence-first through a Transpose of its own (of t's output, t).
  for (Node* u : std::vector<Node*>(members)) {
    Value* v = u->output;
    for (Node* r : std::vector<Node*>(v->users)) {
      if (seq.count(r->output))
        continue;
      OpAttrs a(*r, opset);
      if (isTranspose(r, v, kSwap, opset) && !g.isOutput(r->output)) {
        g.replaceAllUses(r->output, v);
        g.eraseNode(r);
        continue;
      }
      // (Both B x D: keepdims 0, one token.)
      if (isMeanOver(r, v, 0, opset)) {
        r->attrs["axes"] = std::vector<int64_t>{1};
        continue;
      }
      if (r->kind == OpKind::OnnxGather && r->inputs[0] == v &&
          r->inputs[1]->isConstant() && r->inputs[1]->constant->dims.empty() &&
          (a.getInt("axis") == 0 || a.getInt("axis") == -3)) {
        r->attrs["axis"] = int64_t{1};
        continue;
      }
      Value* seqView =
          addTranspose(g, v, kSwap, r, v->name + "/sequence_first");
      made.insert(seqView->producer);
      for (size_t k = 0; k < r->inputs.size(); ++k)
        if (r->inputs[k] == v)
          g.setInput(r, k, seqView);
    }
  }
  if (s->users.empty() && !g.isOutput(s))
    g.eraseNode(t);
  return true;
}

/// The batch-first token values: the B x T x D tokens a Transpose (0, 2,
/// 1) makes of a Reshape's, Flatten's or Squeeze's B x D x T, and what ops
/// working per token make of them (not the Transposes inside attention).
std::unordered_set<const Value*> batchFirstTokens(const Graph& g,
                                                  int64_t opset) {
  std::unordered_set<const Value*> tokens;
  for (const auto& n : g.nodes()) {
    const Value* v = n->inputs.empty() ? nullptr : n->inputs[0];
    const Node* p = v ? v->producer : nullptr;
    if (p && v->shape.size() == 3 && isTranspose(n.get(), v, kFlip, opset) &&
        (p->kind == OpKind::OnnxReshape || p->kind == OpKind::OnnxFlatten ||
         p->kind == OpKind::OnnxSqueeze))
      tokens.insert(n->output);
    else if (n->output->shape.size() == 3 &&
             std::any_of(
                 n->inputs.begin(), n->inputs.end(), [&](const Value* in) {
                   return tokens.count(in) && worksPerPixel(n.get(), in, opset);
                 }))
      tokens.insert(n->output);
  }
  return tokens;
}

} // namespace

void makeTokensBatchFirst(Graph& g) {
  const int64_t opset = g.source.opset;
  shareTokenTransposes(g, opset);
  // Every rewrite may erase nodes (Transposes back): the scan starts
  // again after each, past the Transposes left as they are and those the
  // rewrites made (whose readers are batch first already).
  std::unordered_set<const Node*> left, made;
  for (bool again = true; again;) {
    again = false;
    const std::unordered_set<const Value*> tokens = batchFirstTokens(g, opset);
    for (Node* t : nodeList(g)) {
      if (left.count(t) || made.count(t) || t->inputs.empty() ||
          !tokens.count(t->inputs[0]) ||
          !isTranspose(t, t->inputs[0], kSwap, opset))
        continue;
      if (makeBatchFirst(g, t, opset, made)) {
        again = true;
        break;
      }
      left.insert(t);
    }
  }
}

} // namespace hpvm::fe
