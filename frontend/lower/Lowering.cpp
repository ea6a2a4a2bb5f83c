// Lowering.cpp - turns each ONNX-level node into HPVM tensor ops, with the
// operand conventions of HPVM's intrinsics (reference section 2): the
// dispatch to each row's lower<Lowering> function (LowerConvDensePool.cpp,
// LowerElementwise.cpp, LowerShapeOps.cpp), and the operand range checks.
#include "lower/Lowering.h"

#include "ir/OpTable.h"
#include "lower/LoweringState.h"
#include "onnx/Attributes.h"
#include "onnx/Rank3Input.h"
#include "support/InputFile.h"

#include <algorithm>
#include <limits>
#include <set>
#include <unordered_set>

namespace hpvm::fe {

namespace {

/// Lowers ONNX-level node \p n into HPVM ops with its row's function;
/// returns why it cannot be, or why the passes left a node of a kind they
/// remove, or "".
std::string lowerNode(Lowering& L, Node* n) {
  switch (n->kind) {
#define HPVM_ONNX(OnnxName, MinOpset, Stem, Produces, IgnoredAttrs)            \
  case OpKind::Onnx##Stem:                                                     \
    return lower##Stem(L, n);
#include "hpvm_rt/Ops.def"
    // lowerNodes() lowers ONNX-level nodes only.
#define HPVM_OP(Kind, ...) case OpKind::Kind:
#include "hpvm_rt/Ops.def"
  case OpKind::Refused: // (lowerNodes() reports its reasons)
    break;
  }
  HPVM_UNREACHABLE("lowerNode of HPVM kind " +
                   std::string(opKindName(n->kind)));
}

} // namespace

void lowerNodes(Graph& g) {
  Lowering L(g);
  ErrorList errors(g.source.path);
  std::vector<Node*> nodes;
  for (const auto& n : g.nodes())
    if (!isHpvmOp(n->kind))
      nodes.push_back(n.get());
  std::vector<std::pair<Node*, std::string>> refused;
  for (Node* n : nodes) {
    if (n->kind == OpKind::Refused) {
      refused.emplace_back(n, ""); // its reasons: g.refusals
      continue;
    }
    std::string reason;
    try {
      reason = lowerNode(L, n);
    } catch (const AttrError& e) {
      reason = e.what();
    } catch (const LoweringRefusal& e) {
      reason = e.what();
    }
    if (!reason.empty())
      refused.emplace_back(n, std::move(reason));
  }
  // A refused node that reads what another computes (through any nodes)
  // and has an operand of unknown shape, or one a refused node computes
  // from constants alone (which would have been folded), is not reported:
  // its problem would only be the other's, told again (an unknown shape,
  // an operand not folded). (Refused nodes stay in the graph, lowered ones
  // were rewired in place: the paths are the model's.)
  // Every node after the refused ones \p from: one walk from all of them.
  auto nodesAfter = [&](auto from) {
    std::unordered_set<const Node*> after;
    std::vector<const Value*> work;
    for (const auto& [n, reason] : refused)
      if (from(n))
        work.push_back(n->output);
    while (!work.empty()) {
      const Value* v = work.back();
      work.pop_back();
      for (const Node* u : v->users)
        if (after.insert(u).second)
          work.push_back(u->output);
    }
    return after;
  };
  const std::unordered_set<const Node*> after =
      nodesAfter([](const Node*) { return true; });
  auto unknownOperand = [](const Node* n) {
    return std::any_of(n->inputs.begin(), n->inputs.end(), [](const Value* v) {
      return !v->isConstant() &&
             (v->shape.empty() ||
              std::any_of(v->shape.begin() + 1, v->shape.end(),
                          [](int64_t d) { return d < 0; }));
    });
  };
  std::unordered_set<const Value*> refusedResults;
  for (const auto& [n, reason] : refused)
    if (std::all_of(n->inputs.begin(), n->inputs.end(),
                    [](const Value* v) { return v->isConstant(); }))
      refusedResults.insert(n->output);
  auto readsUnfolded = [&](const Node* n) {
    return std::any_of(n->inputs.begin(), n->inputs.end(), [&](const Value* v) {
      return refusedResults.count(v) != 0;
    });
  };
  int64_t downstream = 0;
  // The loader's refusals and lowering's, in ONNX node order.
  std::vector<std::pair<Origin, std::string>> told = g.refusals;
  // A 3-D input read as it is: told for each node reading it, which is
  // not told again.
  std::set<int> readers;
  for (const auto& [n, reason] : refused)
    if (isTokensOfRank3Input(g, *n))
      for (const Origin& o : n->origins) {
        told.emplace_back(o, reason);
        readers.insert(o.index);
      }
  // (What they compute is as good as not computed.)
  for (const auto& [n, reason] : refused)
    if (readers.count(n->origins.front().index))
      refusedResults.insert(n->output);
  // A token stage the passes could not keep channel-first: told once, at
  // its first entry node refused, for why (g.tokenStages); the nodes
  // after it are only counted.
  auto stageOf = [&](const Node* n) {
    return g.tokenStages.find(n->origins.front().index);
  };
  const std::unordered_set<const Node*> afterStage = nodesAfter(
      [&](const Node* n) { return stageOf(n) != g.tokenStages.end(); });
  for (const auto& [n, reason] : refused) {
    if (n->kind == OpKind::Refused || isTokensOfRank3Input(g, *n) ||
        readers.count(n->origins.front().index))
      continue;
    if (afterStage.count(n)) {
      ++downstream;
      continue;
    }
    if (auto stage = stageOf(n); stage != g.tokenStages.end()) {
      told.emplace_back(n->origins.front(), stage->second);
      continue;
    }
    if (after.count(n) &&
        (unknownOperand(n) || readsUnfolded(n) || L.downstream.count(n)))
      ++downstream;
    else
      told.emplace_back(n->origins.front(), reason);
  }
  std::stable_sort(told.begin(), told.end(), [](const auto& a, const auto& b) {
    return a.first.index < b.first.index;
  });
  // (One ONNX node made into several, DynamicQuantizeLinear's outputs,
  // is told once.)
  std::set<std::pair<int, std::string>> seen;
  for (const auto& [origin, reason] : told)
    if (seen.emplace(origin.index, reason).second)
      errors.add(origin, reason);
  if (downstream > 0)
    errors.note("(" + std::to_string(downstream) + " more node" +
                (downstream == 1 ? "" : "s") +
                " after these could not be checked until they are fixed)");
  errors.throwIfAny();
  // A 2-D input (N, K) is held, as every 2-D activation, as N x K x 1 x 1.
  g.input->shape = form4d(g.input->shape);
  g.pruneValues();
}

void checkOperandRanges(const Graph& g, uint64_t maxBytes) {
  ErrorList errors(g.source.path);
  for (const auto& n : g.nodes()) {
    if (!isHpvmOp(n->kind))
      continue;
    const HpvmOpDesc& desc = hpvmOpDesc(n->kind);
    // The name of operand i: its group's ("pads" for both pads).
    const std::vector<std::string> labels = scalarLabels(*desc.facts);
    std::string group = "operand";
    for (size_t i = 0; i < n->scalars.size(); ++i) {
      if (i < labels.size() && !labels[i].empty())
        group = labels[i];
      const Scalar& s = n->scalars[i];
      if (s.isInteger && (s.i < std::numeric_limits<int32_t>::min() ||
                          s.i > std::numeric_limits<int32_t>::max())) {
        errors.add(n->origins.front(), group + " " + std::to_string(s.i) +
                                           " does not fit the int operand of " +
                                           desc.intrinsic);
        break; // one message per node
      }
    }
    // Per image: the batch dimension is left out.
    const std::vector<int64_t>& shape = n->output->shape;
    const std::optional<uint64_t> bytes =
        tensorBytes(std::vector<int64_t>(
                        shape.begin() + (shape.empty() ? 0 : 1), shape.end()),
                    sizeof(float));
    if (!bytes || *bytes > maxBytes)
      errors.add(n->origins.front(),
                 "its output " + formatShape(shape) + " takes " +
                     (bytes ? byteSize(*bytes) : "more bytes than 2^63") +
                     " per image, more than the " + byteSize(maxBytes) +
                     " limit (raise it with --max-size)");
  }
  errors.throwIfAny();
}

} // namespace hpvm::fe
