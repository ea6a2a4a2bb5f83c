// Verify.cpp - IR invariant checks, run after every pass.
#include "ir/Verify.h"

#include "ir/OpTable.h"
#include "ir/Printer.h"
#include "support/Diagnostics.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace hpvm::fe {

void verify(const Graph& g) {
  HPVM_ASSERT(g.input != nullptr, "graph without an input");
  HPVM_ASSERT(!g.outputs.empty(), "graph without an output");
  std::unordered_set<const Value*> owned;
  for (const auto& v : g.values())
    owned.insert(v.get());
  HPVM_ASSERT(owned.count(g.input), "graph input not owned by the graph");
  for (const GraphOutput& o : g.outputs)
    HPVM_ASSERT(owned.count(o.value),
                "graph output '" + o.name + "' not owned by the graph");

  bool lowered = true;
  std::unordered_set<const Value*> defined = {g.input};
  for (const auto& node : g.nodes()) {
    const Node& n = *node;
    std::string where = std::string(opKindName(n.kind)) + " node " +
                        (n.origins.empty() ? "" : n.origins.front().name);
    HPVM_ASSERT(n.output != nullptr && owned.count(n.output),
                where + ": output missing or not owned");
    HPVM_ASSERT(n.output->producer == &n, where + ": producer link broken");
    HPVM_ASSERT(!n.output->isConstant(), where + ": output is a constant");
    HPVM_ASSERT(!n.origins.empty(), where + ": no origin");
    for (const Value* in : n.inputs) {
      HPVM_ASSERT(in != nullptr && owned.count(in),
                  where + ": input missing or not owned");
      HPVM_ASSERT(in->isConstant() || defined.count(in),
                  where + ": input '" + in->name +
                      "' is not defined before its use");
      HPVM_ASSERT(std::find(in->users.begin(), in->users.end(), &n) !=
                      in->users.end(),
                  where + ": user link of input '" + in->name + "' missing");
    }
    defined.insert(n.output);
    if (!isHpvmOp(n.kind)) {
      lowered = false;
      continue;
    }
    const HpvmOpDesc& desc = hpvmOpDesc(n.kind);
    HPVM_ASSERT(arityFits(*desc.facts, static_cast<int>(n.inputs.size())),
                where + ": " + std::to_string(n.inputs.size()) +
                    " tensor operands, expected " +
                    (desc.facts->variadic
                         ? "1 to " + std::to_string(kMaxTensorArgs)
                         : std::to_string(desc.facts->tensorArgs)));
    HPVM_ASSERT(static_cast<int>(n.scalars.size()) == desc.facts->scalarArgs,
                where + ": " + std::to_string(n.scalars.size()) +
                    " scalar operands, expected " +
                    std::to_string(desc.facts->scalarArgs));
    HPVM_ASSERT(n.output->shape.size() == 4, where + ": output shape " +
                                                 formatShape(n.output->shape) +
                                                 " is not 4-D");
    for (const Value* in : n.inputs) {
      HPVM_ASSERT(in->shape.size() == 4,
                  where + ": operand '" + in->name + "' shape " +
                      formatShape(in->shape) + " is not 4-D");
      if (in->isConstant())
        HPVM_ASSERT(in->constant->dtype == DataType::Float &&
                        in->constant->numElements() ==
                            in->shape[0] * in->shape[1] * in->shape[2] *
                                in->shape[3],
                    where + ": constant '" + in->name +
                        "' is not float32 of its shape");
    }
  }
  // Users only point at nodes of this graph.
  std::unordered_set<const Node*> nodes;
  for (const auto& node : g.nodes())
    nodes.insert(node.get());
  for (const auto& v : g.values())
    for (const Node* user : v->users)
      HPVM_ASSERT(nodes.count(user), "value '" + v->name +
                                         "' lists a user that is not in the "
                                         "graph");
  for (const GraphOutput& o : g.outputs)
    HPVM_ASSERT(o.value == g.input || o.value->isConstant() ||
                    defined.count(o.value),
                "graph output '" + o.name + "' is not computed");
  // Nodes after the last output's producer would be dead.
  if (lowered && !g.nodes().empty())
    HPVM_ASSERT(g.isOutput(g.nodes().back()->output),
                "the last node's output is not a graph output");
}

} // namespace hpvm::fe
