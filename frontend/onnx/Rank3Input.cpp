// Rank3Input.cpp - a 3-D input held in 4-D (Rank3Input.h).
#include "onnx/Rank3Input.h"

#include "ir/Printer.h" // formatShape

#include <algorithm>
#include <cstring>

namespace hpvm::fe {

std::vector<int64_t> heldShape(const std::vector<int64_t>& shape) {
  return {shape[0], 1, shape[1], shape[2]};
}

void adoptRank3Input(Graph& g, Value* asRead, ErrorList& errors) {
  const std::string shown = formatShape(asRead->shape);
  const std::vector<Node*> readers = asRead->users;
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
    if (!reshapes || n->inputs[0] != asRead || !known || !taken) {
      const std::string how =
          !reshapes || n->inputs[0] != asRead ? "reads it as it is"
          : !known ? "reshapes it to a shape not known when compiling"
                   : "reshapes it to " + formatShape(out);
      errors.add(n->origins.front(),
                 "the 3-D input '" + escapeName(asRead->name) + "' (" + shown +
                     "): the node " + how +
                     "; a 3-D input is supported where the model first "
                     "reshapes it to 4-D (N x 1 x A x B, N x A x B x 1) or "
                     "2-D (N x A*B), as Unsqueeze(axes=[1]) does");
      continue;
    }
    // The same node as a Reshape of the 4-D input to its output shape (a
    // symbolic batch copied from the input: 0).
    auto target = std::make_shared<TensorData>();
    target->dtype = DataType::Int64;
    target->dims = {static_cast<int64_t>(out.size())};
    target->bytes.resize(out.size() * sizeof(int64_t));
    for (size_t d = 0; d < out.size(); ++d) {
      const int64_t v = d == 0 && out[0] < 0 ? 0 : out[d];
      std::memcpy(target->bytes.data() + d * sizeof(int64_t), &v, sizeof v);
    }
    Value* shape = g.addConstant("", std::move(target));
    // (Rewritten in place: the loader still maps the output's name to its
    // value, for the graph outputs.)
    n->kind = OpKind::OnnxReshape;
    n->attrs.clear();
    g.setInputs(n, {g.input, shape});
  }
}

} // namespace hpvm::fe
