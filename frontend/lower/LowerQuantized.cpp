// LowerQuantized.cpp - lowering of the pre-quantized models' operators
// (passes/QuantizedOps.h): QuantizeLinear of an activation becomes the
// quantize op, the values its integers stand for; a DequantizeLinear of
// those values with the same parameters is nothing at all.
#include "ir/Printer.h"
#include "lower/LoweringState.h"
#include "onnx/OpAttrs.h"
#include "passes/QuantizedOps.h"

namespace hpvm::fe {

namespace {

/// The ONNX operators that may read a quantized activation here: they
/// compute the same on its integers and on the values they stand for.
bool readsQuantized(OpKind k) {
  return k == OpKind::OnnxDequantizeLinear || k == OpKind::OnnxMaxPool ||
         k == OpKind::OnnxFlatten || k == OpKind::OnnxReshape ||
         k == OpKind::OnnxSqueeze || k == OpKind::OnnxUnsqueeze ||
         k == OpKind::OnnxIdentity;
}

/// An element-wise node's output has its input's shape: the dims shape
/// inference gave it are another view of them when a flattening before it
/// became an alias (Flatten, QuantizeLinear, DequantizeLinear, MatMul).
void keepInputShape(Lowering& L, Node* n) {
  if (!L.g.isOutput(n->output))
    n->output->shape = n->inputs[0]->shape;
}

/// Why QuantizeLinear or DequantizeLinear node \p n does not have an
/// activation operand and constant parameters \p p, or "".
std::string activationParams(const Lowering& L, const Node* n, QuantParams& p) {
  const Value* x = n->inputs[0];
  if (auto r = needActivation(x, "input", true); !r.empty())
    return r;
  return quantParams(n, L.g.source.opset, x->shape.size(), p);
}

} // namespace

std::string lowerQuantizeLinear(Lowering& L, Node* n) {
  Value* x = n->inputs[0];
  QuantParams p;
  if (auto r = activationParams(L, n, p); !r.empty())
    return r;
  if (!p.perTensor())
    return "it quantizes an activation per axis; only one scale and zero "
           "point per activation are supported";
  if (L.g.isOutput(n->output))
    return "its integers are the graph output '" + escapeName(n->output->name) +
           "'; only float outputs are supported (dequantize them in the "
           "model)";
  for (const Node* u : n->output->users)
    if (!readsQuantized(u->kind))
      return "its integers are read by " + describeProducer(u->output) +
             "; only DequantizeLinear, QLinearConv, QLinearMatMul, MaxPool "
             "and reshapes may read them";
  keepInputShape(L, n);
  std::vector<int64_t> x4 = form4d(x->shape);
  int pos = L.position(n);
  L.finish(n, L.emit(OpKind::Quantize, {x},
                     {Scalar::real(shortestFloat(p.scale[0])),
                      Scalar::real(double(p.zero[0])),
                      Scalar::real(double(p.lo)), Scalar::real(double(p.hi))},
                     x4, n->output->name, *n, pos));
  return "";
}

std::string lowerDequantizeLinear(Lowering& L, Node* n) {
  Value* x = n->inputs[0];
  QuantParams p;
  if (auto r = activationParams(L, n, p); !r.empty())
    return r;
  // A QuantizeLinear (or the op between) that could not be lowered has
  // said why: this node's problem is only that one.
  if (x->producer != nullptr && !isHpvmOp(x->producer->kind)) {
    L.downstream.insert(n);
    return "its input '" + escapeName(x->name) + "' is not lowered";
  }
  const Node* q = quantizeSource(x);
  if (q == nullptr)
    return "its input '" + escapeName(x->name) +
           "' is not the output of a QuantizeLinear (or QLinearConv, "
           "QLinearMatMul); integer inputs are not supported";
  const bool same =
      p.perTensor() && static_cast<float>(q->scalars[0].d) == p.scale[0] &&
      q->scalars[1].d == double(p.zero[0]) && q->scalars[2].d == double(p.lo) &&
      q->scalars[3].d == double(p.hi);
  if (!same)
    return "it dequantizes '" + escapeName(x->name) +
           "' with another scale, zero point or type than the "
           "QuantizeLinear that made it; that is not supported";
  keepInputShape(L, n);
  L.finish(n, x);
  return "";
}

/// DynamicQuantizeLinear as expandQuantizedOps leaves it where a
/// ConvInteger or MatMulInteger read it (output -1: the values its
/// integers stand for): quantize_dynamic.
std::string lowerDynamicQuantizeLinear(Lowering& L, Node* n) {
  OpAttrs attrs(*n, L.g.source.opset);
  if (attrs.getInt(kOutputIndex) != -1)
    return "DynamicQuantizeLinear is supported where ONNX Runtime's dynamic "
           "quantization writes it: read by ConvInteger or MatMulInteger "
           "whose result goes through Cast to float and a Mul by its scale "
           "times a constant weight scale";
  Value* x = n->inputs[0];
  if (auto r = needActivation(x, "input", true); !r.empty())
    return r;
  keepInputShape(L, n);
  int pos = L.position(n);
  L.finish(n, L.emit(OpKind::QuantizeDynamic, {x}, {}, form4d(x->shape),
                     n->output->name, *n, pos));
  return "";
}

namespace {

std::string integerOpLeft(const char* op) {
  return std::string(op) +
         " is supported where ONNX Runtime's dynamic quantization writes "
         "it: its input and zero point from one DynamicQuantizeLinear, "
         "constant weights and weight zero point, and its result through "
         "Cast to float and a Mul by the input scale times a constant "
         "weight scale";
}

} // namespace

std::string lowerConvInteger(Lowering&, Node*) {
  return integerOpLeft("ConvInteger");
}
std::string lowerMatMulInteger(Lowering&, Node*) {
  return integerOpLeft("MatMulInteger");
}

// Rewritten by expandQuantizedOps before lowering; left only when the
// node lacks operands, which the loader reports.
std::string lowerQLinearConv(Lowering&, Node*) {
  return "QLinearConv needs at least 8 operands";
}
std::string lowerQLinearMatMul(Lowering&, Node*) {
  return "QLinearMatMul needs 8 operands";
}

} // namespace hpvm::fe
