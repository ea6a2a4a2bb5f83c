// Matchers.cpp - see Matchers.h.
#include "passes/Matchers.h"

#include "onnx/OpAttrs.h"

#include <cmath>

namespace hpvm::fe {

std::vector<Node*> nodeList(const Graph& g) {
  std::vector<Node*> out;
  out.reserve(g.nodes().size());
  for (const auto& n : g.nodes())
    out.push_back(n.get());
  return out;
}

Node* soleUser(const Value* v) {
  return v->users.size() == 1 ? v->users[0] : nullptr;
}

double scalarValue(const Value* v) {
  if (!v->isConstant() || v->constant->numElements() != 1)
    return std::nan("");
  return v->constant->asDouble(0);
}

Value* otherInput(const Node* n, const Value* v) {
  if (n->inputs.size() != 2 || n->inputs[0] == n->inputs[1])
    return nullptr;
  if (n->inputs[0] == v)
    return n->inputs[1];
  return n->inputs[1] == v ? n->inputs[0] : nullptr;
}

Node* replaceChain(Graph& g, OpKind kind, std::vector<Value*> inputs,
                   const std::vector<Node*>& chain) {
  Node* last = chain.back();
  std::vector<Origin> origins;
  for (const Node* n : chain)
    origins.insert(origins.end(), n->origins.begin(), n->origins.end());
  Value* out =
      g.addValue(last->output->name, DataType::Float, last->output->shape);
  Node* n = g.addNode(kind, std::move(inputs), out, std::move(origins),
                      g.position(last));
  g.replaceAllUses(last->output, out);
  for (size_t i = chain.size(); i-- > 0;)
    g.eraseNode(chain[i]);
  return n;
}

std::vector<int64_t> permOf(const Node* n, int64_t opset) {
  return OpAttrs(*n, opset).getInts("perm");
}

bool isTranspose(const Node* n, const Value* v, std::vector<int64_t> perm,
                 int64_t opset) {
  return n && n->kind == OpKind::OnnxTranspose && n->inputs[0] == v &&
         permOf(n, opset) == perm;
}

bool isConstantOf(const Value* v, int64_t n, int64_t last) {
  return v && v->isConstant() && v->constant->dtype == DataType::Float &&
         v->constant->numElements() == n && !v->constant->dims.empty() &&
         v->constant->dims.back() == last;
}

bool isMeanOver(const Node* u, const Value* v, int64_t axis, int64_t opset) {
  if (u->kind != OpKind::OnnxReduceMean || u->inputs.size() != 1 ||
      u->inputs[0] != v)
    return false;
  OpAttrs a(*u, opset);
  const std::vector<int64_t> axes = a.getInts("axes");
  const int64_t rank = static_cast<int64_t>(v->shape.size());
  return a.getInt("keepdims") == 0 && axes.size() == 1 &&
         (axes[0] == axis || axes[0] == axis - rank);
}

int64_t channelFirstAxis(int64_t a) {
  static const int64_t map[] = {0, 2, 3, 1};
  if (a < -4 || a >= 4)
    return a; // no axis of a 4-D value: stays one (callers compare or refuse)
  return map[a < 0 ? a + 4 : a];
}

} // namespace hpvm::fe
