// Rank3Input.cpp - a 3-D input held in 4-D (Rank3Input.h).
#include "onnx/Rank3Input.h"

#include "ir/Printer.h" // formatShape

#include <algorithm>
#include <cstring>

namespace hpvm::fe {

std::vector<int64_t> heldShape(const std::vector<int64_t>& shape) {
  return {shape[0], 1, shape[1], shape[2]};
}

namespace {

/// The target of a Reshape of the 4-D input to \p out (a symbolic batch
/// copied from the input: 0).
Value* reshapeTarget(Graph& g, const std::vector<int64_t>& out) {
  auto target = std::make_shared<TensorData>();
  target->dtype = DataType::Int64;
  target->dims = {static_cast<int64_t>(out.size())};
  target->bytes.resize(out.size() * sizeof(int64_t));
  for (size_t d = 0; d < out.size(); ++d) {
    const int64_t v = d == 0 && out[0] < 0 ? 0 : out[d];
    std::memcpy(target->bytes.data() + d * sizeof(int64_t), &v, sizeof v);
  }
  return g.addConstant("", std::move(target));
}

/// Why a node reading 3-D input \p name (of \p shape, "1x28x28") the way
/// \p how says is refused: the ways a 3-D input is supported.
std::string rank3Problem(const std::string& name, const std::string& shape,
                         const std::string& how) {
  return "the 3-D input '" + escapeName(name) + "' (" + shape + "): the node " +
         how +
         "; a 3-D input is supported where the model first reshapes it to "
         "4-D (N x 1 x A x B, N x A x B x 1) or 2-D (N x A*B), as "
         "Unsqueeze(axes=[1]) does";
}

} // namespace

bool isTokensOfRank3Input(const Graph& g, const Node& n) {
  return n.kind == OpKind::OnnxReshape && g.inputRank == 3 &&
         !n.inputs.empty() && n.inputs[0] == g.input &&
         n.output->shape.size() == 3;
}

const char* const kPerTokenRule =
    "works per token (LayerNorm, Linear, Softmax over D, element-wise ops, "
    "self-attention, a MatMul of two token sequences; a Transpose of the "
    "last two axes and back) until a mean over the tokens, the Gather of one "
    "or a graph output";

std::string rank3InputRefusal(const Node& n) {
  return rank3Problem(n.inputs[0]->name, formatShape(n.output->shape),
                      "reads it as it is") +
         ", or as a sequence of tokens N x T x D where every node on it " +
         kPerTokenRule;
}

void adoptRank3Input(Graph& g, Value* asRead, ErrorList& errors) {
  const std::string shown = formatShape(asRead->shape);
  const std::vector<Node*> readers = asRead->users;
  std::vector<Origin> asItIs;
  for (Node* n : readers) {
    const OpKind k = n->kind;
    if (k == OpKind::Refused) {
      // Refused already; it reads the input as held (it is never lowered).
      std::vector<Value*> ins = n->inputs;
      std::replace(ins.begin(), ins.end(), asRead, g.input);
      g.setInputs(n, std::move(ins));
      continue;
    }
    const bool reshapes = k == OpKind::OnnxUnsqueeze ||
                          k == OpKind::OnnxSqueeze ||
                          k == OpKind::OnnxReshape || k == OpKind::OnnxFlatten;
    const std::vector<int64_t>& out = n->output->shape;
    // Known: every dim but a symbolic batch, which must then stay the
    // batch (the other dims holding all of an image).
    bool known = !out.empty();
    int64_t image = 1;
    for (size_t d = 1; d < out.size(); ++d) {
      known = known && out[d] >= 0;
      image *= out[d];
    }
    const std::vector<int64_t>& in = asRead->shape;
    if (known && out[0] < 0)
      known = image == in[1] * in[2];
    // The shapes the passes take: N x 1 x A x B, N x A x B x 1, N x A*B.
    const bool batch = known && (out[0] == in[0] || out[0] < 0);
    const bool taken =
        batch && (out == std::vector<int64_t>{out[0], 1, in[1], in[2]} ||
                  out == std::vector<int64_t>{out[0], in[1], in[2], 1} ||
                  out == std::vector<int64_t>{out[0], in[1] * in[2]});
    if (!reshapes || n->inputs[0] != asRead) {
      asItIs.push_back(n->origins.front());
      continue;
    }
    if (!known || !taken) {
      const std::string how =
          !known ? "reshapes it to a shape not known when compiling"
                 : "reshapes it to " + formatShape(out);
      errors.add(n->origins.front(), rank3Problem(asRead->name, shown, how));
      continue;
    }
    // The same node as a Reshape of the 4-D input to its output shape.
    // (Rewritten in place: the loader still maps the output's name to its
    // value, for the graph outputs.)
    n->kind = OpKind::OnnxReshape;
    n->attrs.clear();
    g.setInputs(n, {g.input, reshapeTarget(g, out)});
  }
  if (asItIs.empty())
    return;
  // The value read as it is: the 4-D input reshaped back, first of all
  // nodes (a value of its own name: the input's is g.input's).
  asRead->name += ".tokens";
  g.addNode(OpKind::OnnxReshape, {g.input, reshapeTarget(g, asRead->shape)},
            asRead, asItIs, 0);
}

} // namespace hpvm::fe
