// LowerElementwise.cpp - lowering of the elementwise and normalizing ops:
// Add, Mul, Sub, Div, the activations, BatchNormalization,
// LayerNormalization and Softmax.
#include "lower/LoweringState.h"

#include "onnx/Attributes.h"
#include "onnx/OpAttrs.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hpvm::fe {

namespace {

/// The constant operand \p b of elementwise op \p n on an activation of
/// 4-D form \p x4, as HPVM's binary ops take it: broadcast by ONNX's rules
/// (aligned to the right, or at `axis` for the legacy opset < 7 broadcast)
/// against the activation's ONNX shape, then made 1 x C x 1 x 1 (a scalar
/// or per-channel constant) or its own 4-D dims, each the activation's or
/// 1, at batch 1 (YOLO's anchors, 1 x 2 x 1 x L). Sets \p c, or returns
/// why it cannot; \p doing names the op in messages ("adding").
std::string constantOperand(Lowering& L, Node* n, Value* b,
                            const std::vector<int64_t>& x4, const char* doing,
                            const char* result, Value*& c) {
  const std::vector<int64_t>& onnx = n->output->shape;
  std::vector<int64_t> cd = b->constant->dims;
  if (onnx.size() != 2 && onnx.size() != 4)
    return std::string("the ") + result + " has shape " + formatShape(onnx) +
           "; only 4-D or 2-D activations are supported";
  if (cd.size() > onnx.size())
    return "the constant has shape " + formatShape(cd) +
           ", of higher rank than the activation";
  OpAttrs attrs(*n, L.g.source.opset);
  size_t offset = onnx.size() - cd.size();
  // (Only Add, Sub, Mul and Div had the legacy broadcast attributes.)
  const bool legacy = n->kind == OpKind::OnnxAdd ||
                      n->kind == OpKind::OnnxSub ||
                      n->kind == OpKind::OnnxMul || n->kind == OpKind::OnnxDiv;
  if (legacy && attrs.getInt("broadcast") != 0 && attrs.has("axis")) {
    const int64_t axis = attrs.getInt("axis");
    if (axis < 0 || axis > int64_t(onnx.size() - cd.size()))
      return "its broadcast axis " + std::to_string(axis) +
             " does not place a constant of shape " + formatShape(cd) +
             " within shape " + formatShape(onnx);
    offset = static_cast<size_t>(axis);
  }
  std::vector<int64_t> aligned(onnx.size(), 1);
  for (size_t i = 0; i < cd.size() && offset + i < aligned.size(); ++i)
    aligned[offset + i] = cd[i];
  int64_t C = x4[1];
  // (A declared channel count may be any int64: the constant made per
  // channel below must be a size a tensor can have.)
  if (C <= 0 || uint64_t(C) > L.g.maxTensorBytes / sizeof(float))
    return "the activation has " + std::to_string(C) +
           " channels: no per-channel constant can have that many values";
  int64_t count = b->constant->numElements();
  c = nullptr;
  std::vector<int64_t> perChannel(onnx.size(), 1);
  perChannel[1] = C;
  if (count == 1) {
    std::vector<float> v(static_cast<size_t>(C),
                         static_cast<float>(b->constant->asDouble(0)));
    c = L.addFloats(b->name, v, {1, C, 1, 1}, b->initializerIndex);
  } else if (aligned == perChannel) {
    c = L.constantAs(b, {1, C, 1, 1});
  } else if (aligned.size() == 4 && aligned[0] == 1 &&
             std::equal(
                 aligned.begin() + 1, aligned.end(), x4.begin() + 1,
                 [](int64_t a, int64_t x) { return a == x || a == 1; })) {
    c = L.constantAs(b, aligned);
  }
  if (c == nullptr)
    return std::string(doing) + " a constant of shape " + formatShape(cd) +
           " to an activation of shape " + formatShape(onnx) +
           " is not supported (only a constant of batch 1 whose other dims "
           "are the activation's or 1, per-channel 1xCx1x1 or a scalar)";
  return "";
}

/// The operands of elementwise binary op \p n: \p a an activation, \p b
/// an activation or a constant (swapped if the constant came first).
std::string binaryOperands(Node* n, Value*& a, Value*& b) {
  if (n->inputs.size() != 2)
    return std::string(n->origins.front().opType) + " needs two inputs";
  a = n->inputs[0];
  b = n->inputs[1];
  if (a->isConstant() && b->isConstant())
    return "both operands are constants (folding constant arithmetic is not "
           "supported)";
  if (a->isConstant())
    std::swap(a, b);
  return needActivation(a, "input", true);
}

/// The hard_sigmoid node computing \p gate from \p x with hard swish's
/// alpha 1/6 and beta 1/2 and read only by the product \p gate * \p x,
/// or null: x * HardSigmoid(x), PyTorch's export of hardswish before
/// opset 14. (With another alpha or beta the product stays a multiply.)
Node* hardSwishGate(const Graph& g, Value* gate, Value* x) {
  Node* hs = gate->producer;
  if (hs == nullptr || hs->kind != OpKind::HardSigmoid || hs->inputs[0] != x ||
      gate->users.size() != 1 || g.isOutput(gate))
    return nullptr;
  const float alpha = static_cast<float>(hs->scalars[0].d);
  const float beta = static_cast<float>(hs->scalars[1].d);
  return alpha == 1.f / 6.f && beta == 0.5f ? hs : nullptr;
}

/// A constant minus or divided by an activation (\p kind Add: Sub, else
/// Div): the activation times -1 plus the constant, or to the power -1
/// times the constant.
std::string lowerConstantFirst(Lowering& L, Node* n, OpKind kind) {
  Value* c = n->inputs[0];
  Value* x = n->inputs[1];
  if (auto r = needActivation(x, "input", true); !r.empty())
    return r;
  std::vector<int64_t> x4 = form4d(x->shape);
  Value* operand = nullptr;
  if (auto r = constantOperand(L, n, c, x4, "broadcasting", "result", operand);
      !r.empty())
    return r;
  int pos = L.position(n);
  Value* inner;
  if (kind == OpKind::Add) {
    Value* minusOne = L.addFloats(n->output->name + ".minus_one",
                                  std::vector<float>(size_t(x4[1]), -1.f),
                                  {1, x4[1], 1, 1}, -1);
    inner = L.emit(OpKind::Multiply, {x, minusOne}, {}, x4, n->output->name, *n,
                   pos);
  } else {
    inner = L.emit(OpKind::Pow, {x}, {Scalar::real(-1.0)}, x4, n->output->name,
                   *n, pos);
  }
  L.finish(n, L.emit(kind, {inner, operand}, {}, x4, n->output->name, *n, pos));
  return "";
}

/// An activation minus or divided by a constant (\p op of \p n): an add of
/// the negated, or a multiply by the reciprocal, constant; a constant minus
/// or divided by an activation, lowerConstantFirst; whatever else the
/// folding left is refused.
std::string lowerByConstant(Lowering& L, Node* n, float (*op)(float),
                            OpKind kind, const char* doing, const char* what) {
  if (n->inputs.size() != 2)
    return std::string(n->origins.front().opType) + " needs two inputs";
  Value* a = n->inputs[0];
  Value* b = n->inputs[1];
  if (a->isConstant() && !b->isConstant())
    return lowerConstantFirst(L, n, kind);
  if (!b->isConstant())
    return std::string(what) + " an activation is not supported (only " +
           "an activation " + doing + " a constant)";
  if (auto r = needActivation(a, "input", true); !r.empty())
    return r;
  std::vector<float> v = b->constant->toFloats();
  for (float& f : v)
    f = op(f);
  Value* negated = L.addFloats(b->name, v, b->constant->dims, -1);
  std::vector<int64_t> x4 = form4d(a->shape);
  Value* c = nullptr;
  if (auto r = constantOperand(L, n, negated, x4, doing, "result", c);
      !r.empty())
    return r;
  int pos = L.position(n);
  L.finish(n, L.emit(kind, {a, c}, {}, x4, n->output->name, *n, pos));
  return "";
}

/// Appends inputs 1.. of \p n, constants of \p C elements named \p roles,
/// to \p ops as 1 x C x 1 x 1; an absent optional one is the role's
/// identity (a scale of ones, a bias of zeros).
std::string perChannelOperands(Lowering& L, Node* n,
                               const std::vector<const char*>& roles, int64_t C,
                               std::vector<Value*>& ops) {
  for (size_t i = 1; i <= roles.size(); ++i) {
    const std::string role = roles[i - 1];
    if (i >= n->inputs.size() || n->inputs[i]->name.empty()) {
      ops.push_back(L.addFloats(
          n->output->name + "." + role,
          std::vector<float>(size_t(C), role == "scale" ? 1.f : 0.f),
          {1, C, 1, 1}, -1));
      continue;
    }
    Value* v = n->inputs[i];
    if (auto r = needConstant(v, role.c_str()); !r.empty())
      return r;
    if (v->constant->numElements() != C)
      return role + " has shape " + formatShape(v->constant->dims) +
             ", expected " + std::to_string(C) + " channels";
    ops.push_back(L.constantAs(v, {1, C, 1, 1}));
  }
  return "";
}

std::string lowerUnary(Lowering& L, Node* n, OpKind kind,
                       std::vector<Scalar> scalars = {}) {
  Value* x = n->inputs[0];
  if (auto r = needActivation(x, "input", true); !r.empty())
    return r;
  std::vector<int64_t> x4 = form4d(x->shape);
  int pos = L.position(n);
  L.finish(n,
           L.emit(kind, {x}, std::move(scalars), x4, n->output->name, *n, pos));
  return "";
}

/// \p n (Sub, Div, Max, Min) of two activations: op \p kind, the second
/// operand broadcast against the first (each of its 4-D dims the first's
/// or 1); a \p commutative op takes them in either order.
std::string lowerArith(Lowering& L, Node* n, OpKind kind, bool commutative,
                       const char* doing) {
  Value* a = n->inputs[0];
  Value* b = n->inputs[1];
  if (auto r = needActivation(a, "input", true); !r.empty())
    return r;
  if (auto r = needActivation(b, "input", true); !r.empty())
    return r;
  auto fits = [](const std::vector<int64_t>& x, const std::vector<int64_t>& y) {
    for (size_t i = 0; i < 4; ++i)
      if (y[i] != x[i] && y[i] != 1)
        return false;
    return true;
  };
  std::vector<int64_t> a4 = form4d(a->shape), b4 = form4d(b->shape);
  if (!fits(a4, b4)) {
    if (!commutative || !fits(b4, a4))
      return std::string(doing) + " activations of shapes " +
             formatShape(a->shape) + " and " + formatShape(b->shape) +
             " is not supported (only where the second's dims are the "
             "first's or 1)";
    std::swap(a, b);
    std::swap(a4, b4);
  }
  int pos = L.position(n);
  L.finish(n, L.emit(kind, {a, b}, {}, a4, n->output->name, *n, pos));
  return "";
}

} // namespace

std::string lowerAdd(Lowering& L, Node* n) {
  Value *a = nullptr, *b = nullptr;
  if (auto r = binaryOperands(n, a, b); !r.empty())
    return r;
  std::vector<int64_t> x4 = form4d(a->shape);
  int pos = L.position(n);
  if (!b->isConstant()) {
    if (auto r = needActivation(b, "input", true); !r.empty())
      return r;
    if (form4d(b->shape) != x4)
      return "adding activations of different shapes (" +
             formatShape(a->shape) + " and " + formatShape(b->shape) +
             ") is not supported";
    L.finish(n, L.emit(OpKind::Add, {a, b}, {}, x4, n->output->name, *n, pos));
    return "";
  }
  Value* c = nullptr;
  if (auto r = constantOperand(L, n, b, x4, "adding", "sum", c); !r.empty())
    return r;
  L.finish(n, L.emit(OpKind::Add, {a, c}, {}, x4, n->output->name, *n, pos));
  return "";
}

/// Elementwise product (multiply): activations of the same shape, or one
/// broadcast over the other's spatial extents (a squeeze-and-excitation
/// gate N x C x 1 x 1); an activation and a constant (per channel, scalar,
/// full shape at batch 1). x * HardSigmoid(x) (hardswish) becomes one
/// hard_swish.
std::string lowerMul(Lowering& L, Node* n) {
  Value *a = nullptr, *b = nullptr;
  if (auto r = binaryOperands(n, a, b); !r.empty())
    return r;
  std::vector<int64_t> x4 = form4d(a->shape);
  int pos = L.position(n);
  Node* gate = hardSwishGate(L.g, b, a);
  if (gate == nullptr && (gate = hardSwishGate(L.g, a, b)) != nullptr)
    std::swap(a, b);
  if (gate != nullptr) {
    Value* out = L.emit(OpKind::HardSwish, {a}, {}, form4d(a->shape),
                        n->output->name, *n, pos);
    out->producer->origins.push_back(gate->origins.front());
    L.finish(n, out);
    L.g.eraseNode(gate);
    return "";
  }
  if (b->isConstant()) {
    Value* c = nullptr;
    if (auto r = constantOperand(L, n, b, x4, "multiplying by", "product", c);
        !r.empty())
      return r;
    L.finish(
        n, L.emit(OpKind::Multiply, {a, c}, {}, x4, n->output->name, *n, pos));
    return "";
  }
  if (auto r = needActivation(b, "input", true); !r.empty())
    return r;
  if (a->shape.size() != b->shape.size())
    return "multiplying activations of different ranks (" +
           formatShape(a->shape) + " and " + formatShape(b->shape) +
           ") is not supported";
  std::vector<int64_t> b4 = form4d(b->shape);
  // The full-size operand first; the other broadcast over 1 x 1 spatially.
  auto fits = [](const std::vector<int64_t>& big,
                 const std::vector<int64_t>& small) {
    if (small == big)
      return true;
    return small[2] == 1 && small[3] == 1 &&
           (small[1] == big[1] || small[1] == 1) && small[0] == big[0];
  };
  if (!fits(x4, b4)) {
    std::swap(a, b);
    std::swap(x4, b4);
  }
  if (!fits(x4, b4))
    return "multiplying activations of shapes " + formatShape(a->shape) +
           " and " + formatShape(b->shape) +
           " is not supported (only the same shape, or one N x C x 1 x 1 or "
           "N x 1 x 1 x 1 against the other)";
  L.finish(n,
           L.emit(OpKind::Multiply, {a, b}, {}, x4, n->output->name, *n, pos));
  return "";
}

std::string lowerSub(Lowering& L, Node* n) {
  if (n->inputs.size() == 2 && !n->inputs[0]->isConstant() &&
      !n->inputs[1]->isConstant())
    return lowerArith(L, n, OpKind::Sub, false, "subtracting");
  return lowerByConstant(
      L, n, [](float f) { return -f; }, OpKind::Add, "minus", "subtracting");
}

std::string lowerDiv(Lowering& L, Node* n) {
  if (n->inputs.size() == 2 && !n->inputs[0]->isConstant() &&
      !n->inputs[1]->isConstant())
    return lowerArith(L, n, OpKind::Div, false, "dividing");
  return lowerByConstant(
      L, n, [](float f) { return 1.0f / f; }, OpKind::Multiply, "divided by",
      "dividing by");
}

/// ONNX Sum: the first input plus each other, one add at a time (inputs
/// of one shape).
std::string lowerSum(Lowering& L, Node* n) {
  if (n->inputs.empty())
    return "Sum needs at least one input";
  Value* acc = n->inputs[0];
  if (auto r = needActivation(acc, "input", true); !r.empty())
    return r;
  for (Value* v : n->inputs) {
    if (auto r = needActivation(v, "input", true); !r.empty())
      return r;
    if (form4d(v->shape) != form4d(acc->shape))
      return "summing activations of different shapes (" +
             formatShape(acc->shape) + " and " + formatShape(v->shape) +
             ") is not supported";
  }
  int pos = L.position(n);
  for (size_t i = 1; i < n->inputs.size(); ++i)
    acc = L.emit(OpKind::Add, {acc, n->inputs[i]}, {}, form4d(acc->shape),
                 n->output->name, *n, pos);
  L.finish(n, acc);
  return "";
}

std::string lowerBatchNormalization(Lowering& L, Node* n) {
  Value* x = n->inputs[0];
  if (auto r = needActivation(x, "input", true); !r.empty())
    return r;
  if (n->inputs.size() != 5)
    return "BatchNormalization needs 5 inputs";
  std::vector<int64_t> x4 = form4d(x->shape);
  std::vector<Value*> ops = {x};
  if (auto r = perChannelOperands(L, n, {"scale", "bias", "mean", "variance"},
                                  x4[1], ops);
      !r.empty())
    return r;
  OpAttrs attrs(*n, L.g.source.opset);
  double eps = shortestFloat(static_cast<float>(attrs.getFloat("epsilon")));
  int pos = L.position(n);
  L.finish(n, L.emit(OpKind::BatchNorm, ops, {Scalar::real(eps)}, x4,
                     n->output->name, *n, pos));
  return "";
}

std::string lowerClip(Lowering& L, Node* n) {
  OpAttrs attrs(*n, L.g.source.opset);
  constexpr double inf = std::numeric_limits<double>::infinity();
  double lo = attrs.getFloat("min"), hi = attrs.getFloat("max");
  for (size_t i = 1; i < n->inputs.size() && i < 3; ++i) {
    const Value* v = n->inputs[i];
    if (!v->isConstant() || v->constant->numElements() != 1)
      return std::string(i == 1 ? "min" : "max") + " is not a constant scalar";
    (i == 1 ? lo : hi) = v->constant->asDouble(0);
  }
  // opset < 11 spells "no bound" as the float range's limits (and
  // exporters write them for an absent bound).
  if (hi >= std::numeric_limits<float>::max())
    hi = inf;
  if (lo <= std::numeric_limits<float>::lowest())
    lo = -inf;
  if (lo == 0.0 && hi == inf)
    return lowerUnary(L, n, OpKind::Relu);
  if (std::isnan(lo) || std::isnan(hi) || lo > hi)
    return "Clip(" + formatScalar(Scalar::real(lo)) + ", " +
           formatScalar(Scalar::real(hi)) +
           ") is not supported (min must not exceed max, neither NaN)";
  // One bound or none: the other infinite (clipped_relu clamps to both).
  auto bound = [](double v) {
    return Scalar::real(std::isinf(v) ? v
                                      : shortestFloat(static_cast<float>(v)));
  };
  return lowerUnary(L, n, OpKind::ClippedRelu, {bound(lo), bound(hi)});
}

namespace {

/// Max or Min of an activation and a constant scalar: a clamp from below
/// (Max) or above (Min), clipped_relu with the other bound infinite.
std::string lowerBound(Lowering& L, Node* n, bool max) {
  Value* x = nullptr;
  double c = 0;
  int constants = 0;
  for (Value* v : n->inputs) {
    if (v->isConstant() && v->constant->numElements() == 1) {
      c = v->constant->asDouble(0);
      ++constants;
    } else if (!x) {
      x = v;
    } else {
      x = nullptr;
      break;
    }
  }
  const OpKind kind = max ? OpKind::Maximum : OpKind::Minimum;
  const char* doing = max ? "taking the maximum of" : "taking the minimum of";
  if (n->inputs.size() == 2 && !n->inputs[0]->isConstant() &&
      !n->inputs[1]->isConstant())
    return lowerArith(L, n, kind, true, doing);
  if (n->inputs.size() == 2 && constants == 0) {
    // An activation and a constant of more than one element.
    Value *a = nullptr, *b = nullptr, *c = nullptr;
    if (auto r = binaryOperands(n, a, b); !r.empty())
      return r;
    const std::vector<int64_t> x4 = form4d(a->shape);
    if (auto r = constantOperand(L, n, b, x4, doing, "result", c); !r.empty())
      return r;
    int pos = L.position(n);
    L.finish(n, L.emit(kind, {a, c}, {}, x4, n->output->name, *n, pos));
    return "";
  }
  if (!x || constants != 1 || n->inputs.size() != 2)
    return std::string("only ") + (max ? "Max" : "Min") +
           " of two operands is supported";
  if (std::isnan(c))
    return "the constant is NaN";
  if (auto r = needActivation(x, "input", true); !r.empty())
    return r;
  constexpr double inf = std::numeric_limits<double>::infinity();
  const Scalar bound = Scalar::real(shortestFloat(static_cast<float>(c)));
  int pos = L.position(n);
  L.finish(n, L.emit(OpKind::ClippedRelu, {x},
                     max ? std::vector<Scalar>{bound, Scalar::real(inf)}
                         : std::vector<Scalar>{Scalar::real(-inf), bound},
                     form4d(x->shape), n->output->name, *n, pos));
  return "";
}

} // namespace

std::string lowerMax(Lowering& L, Node* n) { return lowerBound(L, n, true); }

std::string lowerMin(Lowering& L, Node* n) { return lowerBound(L, n, false); }

/// Softmax and LogSoftmax (\p log): over the classes of N x classes
/// (HPVM's softmax; channel_softmax for the log), over the channels of
/// each pixel of N x C x H x W (channel_softmax; before opset 13, axis 1
/// is over C, H and W together: HPVM's softmax).
std::string lowerSoftmaxOf(Lowering& L, Node* n, bool log) {
  const Value* x = n->inputs[0];
  if (auto r = needActivation(x, "input", true); !r.empty())
    return r;
  // The axis refers to the ONNX shape (the output's), not to the 4-D form
  // the input may already have been lowered to.
  const std::vector<int64_t>& onnx = n->output->shape;
  const char* op = log ? "log-softmax" : "softmax";
  if (onnx.size() != 2 && onnx.size() != 4)
    return std::string(op) + " of shape " + formatShape(onnx) +
           " is not supported (only N x classes, or N x C x H x W over the "
           "channels)";
  OpAttrs attrs(*n, L.g.source.opset);
  int64_t rank = static_cast<int64_t>(onnx.size());
  int64_t axis = attrs.getInt("axis");
  axis = axis < 0 ? axis + rank : axis;
  std::vector<int64_t> x4 = form4d(onnx);
  const bool pixels = x4[2] != 1 || x4[3] != 1;
  // Before opset 13 the input is flattened from the axis on.
  const bool flattens = L.g.source.opset < 13;
  if (axis != 1 || (pixels && flattens && log))
    return std::string(op) + " over axis " + std::to_string(axis) +
           " of shape " + formatShape(onnx) +
           " is not supported (only over the classes of N x classes or the "
           "channels of N x C x H x W" +
           (flattens && pixels ? ", from opset 13 on" : "") + ")";
  if (!log && (!pixels || flattens))
    return lowerUnary(L, n, OpKind::Softmax);
  return lowerUnary(L, n, OpKind::ChannelSoftmax,
                    {Scalar::integer(log ? 1 : 0)});
}

std::string lowerSoftmax(Lowering& L, Node* n) {
  return lowerSoftmaxOf(L, n, false);
}

std::string lowerLogSoftmax(Lowering& L, Node* n) {
  return lowerSoftmaxOf(L, n, true);
}

std::string lowerRelu(Lowering& L, Node* n) {
  return lowerUnary(L, n, OpKind::Relu);
}
std::string lowerTanh(Lowering& L, Node* n) {
  return lowerUnary(L, n, OpKind::Tanh);
}
std::string lowerSigmoid(Lowering& L, Node* n) {
  return lowerUnary(L, n, OpKind::Sigmoid);
}
/// ONNX HardSigmoid: hard_sigmoid with alpha and beta as its scalars
/// (lowerMul makes x * HardSigmoid(x) one hard_swish).
std::string lowerHardSigmoid(Lowering& L, Node* n) {
  OpAttrs attrs(*n, L.g.source.opset);
  const auto alpha = static_cast<float>(attrs.getFloat("alpha"));
  const auto beta = static_cast<float>(attrs.getFloat("beta"));
  if (!std::isfinite(alpha) || !std::isfinite(beta))
    return "alpha " + std::to_string(alpha) + " and beta " +
           std::to_string(beta) + " must be finite float32 values";
  return lowerUnary(
      L, n, OpKind::HardSigmoid,
      {Scalar::real(shortestFloat(alpha)), Scalar::real(shortestFloat(beta))});
}
/// ONNX LeakyRelu: leaky_relu with alpha as its scalar.
std::string lowerLeakyRelu(Lowering& L, Node* n) {
  OpAttrs attrs(*n, L.g.source.opset);
  const auto alpha = static_cast<float>(attrs.getFloat("alpha"));
  if (!std::isfinite(alpha))
    return "alpha " + std::to_string(alpha) + " must be a finite float32 value";
  return lowerUnary(L, n, OpKind::LeakyRelu,
                    {Scalar::real(shortestFloat(alpha))});
}
/// ONNX HardSwish (opset 14): x * max(0, min(1, x / 6 + 1/2)).
std::string lowerHardSwish(Lowering& L, Node* n) {
  return lowerUnary(L, n, OpKind::HardSwish);
}
/// ONNX LayerNormalization whose normalized axes (axis to the last) are
/// the channels: of an N x C activation, or of N x C x 1 x 1 (ConvNeXt's
/// head); a channel-last LayerNorm between Transposes was made
/// channel-first layer_norm by makeChannelFirst. Scale and bias: constants
/// of C elements.
std::string lowerLayerNormalization(Lowering& L, Node* n) {
  Value* x = n->inputs[0];
  if (auto r = needActivation(x, "input", true); !r.empty())
    return r;
  const std::vector<int64_t>& onnx =
      n->output->shape.empty() ? x->shape : n->output->shape;
  OpAttrs attrs(*n, L.g.source.opset);
  int64_t rank = static_cast<int64_t>(onnx.size());
  int64_t axis = attrs.getInt("axis");
  axis = axis < 0 ? axis + rank : axis;
  if (axis != 1 || (rank != 2 && (rank != 4 || onnx[2] != 1 || onnx[3] != 1)))
    return "layer normalization over axes " + std::to_string(axis) +
           ".. of shape " + formatShape(onnx) +
           " is not supported (only over the channels: of N x C, or of N x "
           "C x 1 x 1; a channel-last LayerNorm between Transposes to and "
           "from N x H x W x C is made channel-first)";
  std::vector<int64_t> x4 = form4d(x->shape);
  std::vector<Value*> ops = {x};
  if (auto r = perChannelOperands(L, n, {"scale", "bias"}, x4[1], ops);
      !r.empty())
    return r;
  double eps = shortestFloat(static_cast<float>(attrs.getFloat("epsilon")));
  int pos = L.position(n);
  L.finish(n, L.emit(OpKind::LayerNorm, ops, {Scalar::real(eps)}, x4,
                     n->output->name, *n, pos));
  return "";
}
/// Pow of an activation by a constant scalar exponent.
std::string lowerPow(Lowering& L, Node* n) {
  if (n->inputs.size() != 2)
    return "Pow needs two inputs";
  const Value* e = n->inputs[1];
  if (!e->isConstant() || e->constant->numElements() != 1)
    return "the exponent is not a constant scalar (only an activation to a "
           "constant power is supported)";
  const double p = e->constant->asDouble(0);
  if (!std::isfinite(p))
    return "the exponent " + std::to_string(p) + " is not finite";
  return lowerUnary(L, n, OpKind::Pow,
                    {Scalar::real(shortestFloat(static_cast<float>(p)))});
}
std::string lowerSqrt(Lowering& L, Node* n) {
  return lowerUnary(L, n, OpKind::Sqrt);
}
std::string lowerErf(Lowering&, Node*) {
  return "Erf of activations is only supported inside the GELU the PyTorch "
         "exporter writes (x * (1 + erf(x / sqrt(2))) * 0.5)";
}

} // namespace hpvm::fe
