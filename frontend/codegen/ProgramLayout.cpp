// ProgramLayout.cpp - identifiers, root parameters and wiring of a program.
#include "codegen/ProgramLayout.h"

#include "codegen/Sanitizer.h"
#include "ir/OpTable.h"
#include "ir/Printer.h"
#include "passes/OpGeometry.h"
#include "support/Diagnostics.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

namespace hpvm::fe {

namespace {

// Names the templates use themselves; model names never take them.
std::vector<std::string> templateNames(size_t numNodes) {
  std::vector<std::string> names = {
      "root",     "args",     "info",   "dfg",   "dir",     "status",
      "r",        "w",        "tensor", "bytes", "input_t", "loadWeights",
      "runBatch", "runGraph", "argc",   "argv",  "RootIn",  "Weights"};
  for (size_t i = 0; i < numNodes; ++i) {
    names.push_back("var_" + std::to_string(i));
    names.push_back("var_" + std::to_string(i) + "_node");
  }
  return names;
}

std::string originName(const Origin& o) {
  return o.name.empty() ? "#" + std::to_string(o.index) : o.name;
}

} // namespace

std::string scalarLiteral(const Scalar& s) {
  if (s.isInteger)
    return std::to_string(s.i);
  if (std::isinf(s.d))
    return s.d > 0 ? "__builtin_inf()" : "-__builtin_inf()";
  std::string text = fmt::format("{}", s.d);
  if (text.find_first_of(".en") == std::string::npos)
    text += ".0";
  return text;
}

std::string describeOrigins(const std::vector<Origin>& origins) {
  if (origins.empty())
    return "no ONNX node";
  std::string text = origins.size() == 1 ? "ONNX node " : "ONNX nodes ";
  for (size_t i = 0; i < origins.size(); ++i) {
    const Origin& o = origins[i];
    if (i)
      text += ", ";
    text += fmt::format("'{}' ({}, #{})", originName(o), o.opType, o.index);
  }
  return escapeText(text);
}

ProgramLayout layoutProgram(const Graph& g, const std::string& modelPath) {
  ProgramLayout layout;
  if (g.nodes().empty())
    throw UserError(modelPath + ": the model has no tensor operations left "
                                "after lowering; there is nothing to run");
  if (!g.input || (g.input->shape.size() != 4 && g.input->shape.size() != 2))
    throw UserError(
        modelPath +
        ": the model input must be 4-D (N, C, H, W) or 2-D (N, "
        "K), got " +
        (g.input ? formatShape(g.input->shape) : std::string("none")));
  for (size_t i = 1; i < g.input->shape.size(); ++i)
    if (g.input->shape[i] <= 0)
      throw UserError(modelPath +
                      ": the model input has a symbolic or empty "
                      "dimension " +
                      std::to_string(i) + " (" + formatShape(g.input->shape) +
                      "); only the batch dimension may be symbolic");
  // A 2-D input (N, K): K x 1 x 1 images, as every 2-D activation is held.
  const std::vector<int64_t> in4 = form4d(g.input->shape);
  layout.channels = in4[1];
  layout.height = in4[2];
  layout.width = in4[3];

  IdentifierTable idents(templateNames(g.nodes().size()));
  layout.inputIdent = idents.claim(g.input->name, {"_bytes"});

  std::map<const Value*, int> rootPairOf;
  std::map<const Value*, int> producerOf;
  rootPairOf[g.input] = 0;
  for (size_t n = 0; n < g.nodes().size(); ++n) {
    const Node& node = *g.nodes()[n];
    HPVM_ASSERT(isHpvmOp(node.kind), "codegen of a graph that is not lowered");
    const HpvmOpDesc& desc = hpvmOpDesc(node.kind);
    std::string where =
        nodeContext(modelPath, node.origins.empty() ? Origin{"", "?", -1}
                                                    : node.origins.front());
    NodeLayout nl;
    nl.node = &node;
    nl.id = static_cast<int>(n) + 1;
    nl.var = "var_" + std::to_string(n);
    nl.func = nl.var + "_node";
    nl.jsonName = std::string(desc.jsonType) + "_" + std::to_string(n);
    nl.origin = describeOrigins(node.origins);
    HPVM_ASSERT(arityFits(*desc.facts, static_cast<int>(node.inputs.size())) &&
                    static_cast<int>(node.scalars.size()) ==
                        desc.facts->scalarArgs,
                "node arity differs from Ops.def");
    for (const Value* v : node.inputs) {
      OperandLayout op;
      op.value = v;
      if (auto it = producerOf.find(v); it != producerOf.end()) {
        op.producerNode = it->second;
      } else if (auto it2 = rootPairOf.find(v); it2 != rootPairOf.end()) {
        op.rootPair = it2->second;
      } else {
        HPVM_ASSERT(v->isConstant(),
                    "operand '" + v->name +
                        "' is neither an earlier "
                        "node's output, the input nor a constant");
        if (v->shape.size() != 4)
          throw UserError(where + ": constant '" + escapeText(v->name) +
                          "' has shape " + formatShape(v->shape) +
                          ", but HPVM weights are 4-D");
        if (v->dtype != DataType::Float)
          throw UserError(where + ": constant '" + escapeText(v->name) +
                          "' is not float32; HPVM weights are float32");
        WeightLayout w;
        w.value = v;
        w.ident = idents.claim(v->name, {"_bytes"});
        w.fileName = w.ident + ".bin";
        for (int d = 0; d < 4; ++d)
          w.dims[d] = v->shape[d];
        w.rootPair = static_cast<int>(layout.weights.size()) + 1;
        rootPairOf[v] = w.rootPair;
        op.rootPair = w.rootPair;
        layout.weights.push_back(std::move(w));
      }
      nl.operands.push_back(op);
    }
    for (const Scalar& s : node.scalars) {
      if (!s.isInteger && std::isnan(s.d))
        throw UserError(where + ": a scalar operand is NaN");
      nl.scalars.push_back(scalarLiteral(s));
    }
    producerOf[node.output] = static_cast<int>(n);
    layout.nodes.push_back(std::move(nl));
  }
  for (const GraphOutput& o : g.outputs) {
    const Value* v = o.value;
    auto it = producerOf.find(v);
    HPVM_ASSERT(it != producerOf.end() && v->shape.size() == 4,
                "graph output '" + o.name + "' is not a node's 4-D result");
    OutputLayout out;
    out.name = escapeText(o.name);
    out.node = it->second;
    out.elems = v->shape[1] * v->shape[2] * v->shape[3];
    // The declared dims where they hold these values (a classifier's
    // N x K), else the computed N x C x H x W.
    int64_t declared = 1;
    bool known = o.declared.size() >= 2 && o.declared.size() <= 5;
    for (size_t d = 1; known && d < o.declared.size(); ++d) {
      known = o.declared[d] > 0;
      declared *= o.declared[d];
    }
    if (known && declared == out.elems)
      out.dims.assign(o.declared.begin() + 1, o.declared.end());
    else
      out.dims.assign(v->shape.begin() + 1, v->shape.end());
    layout.numClasses += out.elems;
    layout.outputs.push_back(std::move(out));
  }
  HPVM_ASSERT(g.isOutput(g.nodes().back()->output),
              "the last node's output is not a graph output");
  return layout;
}

} // namespace hpvm::fe
