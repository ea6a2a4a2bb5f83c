// Fusions.cpp - the passes that turn the node chains exporters write for
// one operator (channel shuffle, LayerNorm, GELU, SiLU) into that one node.
#include "passes/Fusions.h"

#include "onnx/OpAttrs.h"
#include "passes/ConstantTensors.h"
#include "passes/Matchers.h"

#include <cmath>
#include <unordered_set>

namespace hpvm::fe {

namespace {

/// True if \p n is a ReduceMean of \p x over its last axis, keeping it.
bool isLastAxisMean(Node* n, const Value* x, int64_t opset) {
  if (n == nullptr || n->kind != OpKind::OnnxReduceMean ||
      n->inputs.size() != 1 || n->inputs[0] != x || x->shape.empty())
    return false;
  OpAttrs a(*n, opset);
  std::vector<int64_t> axes = a.getInts("axes");
  int64_t last = static_cast<int64_t>(x->shape.size()) - 1;
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == last) &&
         a.getInt("keepdims") != 0;
}

} // namespace

void fuseChannelShuffles(Graph& g) {
  std::unordered_set<Node*> erased;
  for (Node* t : nodeList(g)) {
    if (erased.count(t) || t->kind != OpKind::OnnxTranspose)
      continue;
    Node* r1 = t->inputs[0]->producer;
    Node* r2 = soleUser(t->output);
    if (!r1 || !r2 || r1->kind != OpKind::OnnxReshape ||
        r2->kind != OpKind::OnnxReshape || soleUser(r1->output) != t ||
        g.isOutput(t->output) || g.isOutput(r1->output))
      continue;
    const std::vector<int64_t>& x = r1->inputs[0]->shape;
    const std::vector<int64_t>& mid = r1->output->shape;
    if (x.size() != 4 || mid.size() != 5 || r2->output->shape != x ||
        OpAttrs(*t, g.source.opset).getInts("perm") !=
            std::vector<int64_t>{0, 2, 1, 3, 4})
      continue;
    const int64_t groups = mid[1];
    if (mid[0] != x[0] || groups < 1 || mid[1] * mid[2] != x[1] ||
        mid[3] != x[2] || mid[4] != x[3])
      continue;
    const std::vector<Node*> chain = {r1, t, r2};
    erased.insert(chain.begin(), chain.end());
    Node* shuffle =
        replaceChain(g, OpKind::ChannelShuffle, {r1->inputs[0]}, chain);
    shuffle->scalars = {Scalar::integer(groups)};
  }
  g.pruneValues();
}

void fuseLayerNorms(Graph& g) {
  const int64_t opset = g.source.opset;
  std::unordered_set<Node*> erased;
  for (Node* mean : nodeList(g)) {
    if (erased.count(mean) || mean->kind != OpKind::OnnxReduceMean)
      continue;
    Value* x = mean->inputs[0];
    if (!isLastAxisMean(mean, x, opset) || x->isConstant())
      continue;
    Node* sub = soleUser(mean->output);
    if (!sub || sub->kind != OpKind::OnnxSub || sub->inputs.size() != 2 ||
        sub->inputs[0] != x || sub->inputs[1] != mean->output ||
        sub->output->users.size() != 2)
      continue;
    Node* pow = nullptr;
    Node* div = nullptr;
    for (Node* u : sub->output->users) {
      if (u->kind == OpKind::OnnxPow && u->inputs.size() == 2 &&
          u->inputs[0] == sub->output && scalarValue(u->inputs[1]) == 2.0)
        pow = u;
      else if (u->kind == OpKind::OnnxDiv && u->inputs.size() == 2 &&
               u->inputs[0] == sub->output)
        div = u;
    }
    if (!pow || !div)
      continue;
    Node* var = soleUser(pow->output);
    if (!isLastAxisMean(var, pow->output, opset))
      continue;
    Node* addEps = soleUser(var->output);
    if (!addEps || addEps->kind != OpKind::OnnxAdd)
      continue;
    Value* epsValue = otherInput(addEps, var->output);
    double eps = epsValue ? scalarValue(epsValue) : std::nan("");
    Node* sqrt = soleUser(addEps->output);
    if (!(eps >= 0) || !sqrt || sqrt->kind != OpKind::OnnxSqrt ||
        soleUser(sqrt->output) != div || div->inputs[1] != sqrt->output)
      continue;
    std::vector<Node*> chain = {mean, sub, pow, var, addEps, sqrt, div};
    // The optional affine part: times a scale, plus a bias (per channel of
    // the last axis).
    const int64_t C = x->shape.back();
    if (C <= 0) // (a symbolic last axis)
      continue;
    auto perChannel = [&](const Value* v) {
      return v && v->isConstant() && v->constant->numElements() == C &&
             !v->constant->dims.empty() && v->constant->dims.back() == C;
    };
    Value* scale = nullptr;
    Value* bias = nullptr;
    Node* tail = div;
    if (Node* mul = soleUser(tail->output);
        mul && mul->kind == OpKind::OnnxMul &&
        perChannel(otherInput(mul, tail->output))) {
      scale = otherInput(mul, tail->output);
      chain.push_back(mul);
      tail = mul;
      if (Node* add = soleUser(tail->output);
          add && add->kind == OpKind::OnnxAdd &&
          perChannel(otherInput(add, tail->output))) {
        bias = otherInput(add, tail->output);
        chain.push_back(add);
      }
    }
    if (g.isOutput(chain.back()->output) && chain.back() != tail &&
        chain.back()->kind != OpKind::OnnxAdd)
      continue;
    auto constant = [&](const Value* v, float fill, const char* what) {
      if (v)
        return g.addConstant(v->name, withDims(*v->constant, {C}),
                             v->initializerIndex);
      auto t = floatTensor(std::vector<float>(size_t(C), fill), {C});
      return g.addConstant(chain.back()->output->name + what, t);
    };
    Value* s = constant(scale, 1.f, ".scale");
    Value* b = constant(bias, 0.f, ".bias");
    s->shape = {C};
    b->shape = {C};
    for (Node* n : chain)
      erased.insert(n);
    Node* ln =
        replaceChain(g, OpKind::OnnxLayerNormalization, {x, s, b}, chain);
    ln->attrs["axis"] = int64_t{-1};
    ln->attrs["epsilon"] = eps;
  }
  g.pruneValues();
}

void fuseGelus(Graph& g) {
  std::unordered_set<Node*> erased;
  for (Node* erf : nodeList(g)) {
    if (erased.count(erf) || erf->kind != OpKind::OnnxErf)
      continue;
    // (A node the checker did not see, an unsupported one, may have no
    // inputs: the kinds are checked before any input is read.)
    Node* div = erf->inputs.size() == 1 ? erf->inputs[0]->producer : nullptr;
    if (!div || soleUser(div->output) != erf || div->inputs.size() != 2 ||
        (div->kind != OpKind::OnnxDiv && div->kind != OpKind::OnnxMul))
      continue;
    // x / sqrt(2), or x * (1 / sqrt(2)).
    Value* x = div->inputs[0];
    double c = scalarValue(div->inputs[1]);
    bool scaled =
        (div->kind == OpKind::OnnxDiv && std::abs(c - std::sqrt(2.0)) < 1e-6) ||
        (div->kind == OpKind::OnnxMul && std::abs(c - std::sqrt(0.5)) < 1e-6);
    // (An HPVM op reads 4-D activations only.)
    if (!scaled || x->isConstant() || x->shape.size() != 4)
      continue;
    Node* plus = soleUser(erf->output);
    if (!plus || plus->kind != OpKind::OnnxAdd)
      continue;
    Value* one = otherInput(plus, erf->output);
    if (!one || scalarValue(one) != 1.0)
      continue;
    Node* times = soleUser(plus->output);
    if (!times || times->kind != OpKind::OnnxMul ||
        otherInput(times, plus->output) != x)
      continue;
    Node* half = soleUser(times->output);
    Value* h = half && half->kind == OpKind::OnnxMul
                   ? otherInput(half, times->output)
                   : nullptr;
    if (!h || scalarValue(h) != 0.5)
      continue;
    std::vector<Node*> chain = {div, erf, plus, times, half};
    for (Node* n : chain)
      erased.insert(n);
    replaceChain(g, OpKind::Gelu, {x}, chain);
  }
  g.pruneValues();
}

void fuseSilus(Graph& g) {
  std::unordered_set<Node*> erased;
  for (Node* sigmoid : nodeList(g)) {
    if (erased.count(sigmoid) || sigmoid->kind != OpKind::OnnxSigmoid ||
        g.isOutput(sigmoid->output))
      continue;
    // x * Sigmoid(x), either operand first; the sigmoid read by the
    // product only (a squeeze-and-excitation gate multiplies another
    // value, and stays a sigmoid and a multiply).
    Value* x = sigmoid->inputs[0];
    Node* times = soleUser(sigmoid->output);
    if (x->isConstant() || x->shape.size() != 4 || !times ||
        times->kind != OpKind::OnnxMul ||
        otherInput(times, sigmoid->output) != x)
      continue;
    const std::vector<Node*> chain = {sigmoid, times};
    erased.insert(chain.begin(), chain.end());
    replaceChain(g, OpKind::Silu, {x}, chain);
  }
  g.pruneValues();
}

} // namespace hpvm::fe
