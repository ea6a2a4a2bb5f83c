// QuantizedOps.cpp - see QuantizedOps.h.
#include "passes/QuantizedOps.h"

#include "ir/Printer.h"
#include "onnx/OpAttrs.h"
#include "passes/ConstantTensors.h"

#include <cmath>
#include <map>
#include <variant>

namespace hpvm::fe {

namespace {

/// The range of the integers of \p type; false for a type without one here.
bool integerRange(DataType type, int64_t& lo, int64_t& hi) {
  switch (type) {
  case DataType::Uint8:
    lo = 0, hi = 255;
    return true;
  case DataType::Int8:
    lo = -128, hi = 127;
    return true;
  case DataType::Int32:
    lo = INT32_MIN, hi = INT32_MAX;
    return true;
  default:
    return false;
  }
}

const char* typeName(DataType t) {
  switch (t) {
  case DataType::Uint8:
    return "uint8";
  case DataType::Int8:
    return "int8";
  case DataType::Int32:
    return "int32";
  default:
    return "a type other than uint8, int8 and int32";
  }
}

/// The element of \p p for index \p i of \p dims (C order): per tensor, the
/// only one; per axis, the one of i's coordinate along the axis.
size_t paramIndex(const QuantParams& p, const std::vector<int64_t>& dims,
                  int64_t i) {
  if (p.perTensor())
    return 0;
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(p.axis) + 1; d < dims.size(); ++d)
    inner *= dims[d];
  return static_cast<size_t>((i / inner) % dims[static_cast<size_t>(p.axis)]);
}

} // namespace

std::string quantParams(const Node* n, int64_t opset, size_t rank,
                        QuantParams& out) {
  const bool quantize = n->kind == OpKind::OnnxQuantizeLinear;
  OpAttrs a(*n, opset);
  if (a.getInt("block_size") != 0)
    return "blocked quantization (block_size " +
           std::to_string(a.getInt("block_size")) + ") is not supported";
  if (n->inputs.size() < 2 || !n->inputs[1]->isConstant())
    return "its scale is computed at run time; only constant scales are "
           "supported";
  const TensorData& s = *n->inputs[1]->constant;
  if (s.dtype != DataType::Float)
    return "its scale is not float32";
  const Value* zv = n->inputs.size() > 2 ? n->inputs[2] : nullptr;
  if (zv != nullptr && !zv->isConstant())
    return "its zero point is computed at run time; only constant zero "
           "points are supported";
  // The integer type: the zero point's; without one, uint8 (or a
  // QuantizeLinear's output_dtype, opset 21).
  out.type = DataType::Uint8;
  if (zv != nullptr)
    out.type = zv->constant->dtype;
  else if (quantize && a.getInt("output_dtype") != 0)
    out.type = static_cast<DataType>(a.getInt("output_dtype"));
  if (!quantize && n->inputs[0]->isConstant())
    out.type = n->inputs[0]->constant->dtype;
  if (!integerRange(out.type, out.lo, out.hi) ||
      (quantize && out.type == DataType::Int32))
    return std::string("its integers are ") + typeName(out.type) +
           "; only uint8 and int8 (and int32 constants) are supported";
  const int64_t count = s.numElements();
  if (s.dims.size() > 1 || count < 1)
    return "its scale has shape " + formatShape(s.dims) +
           "; a scalar or a 1-D tensor is supported";
  out.scale = s.toFloats();
  out.zero.assign(static_cast<size_t>(count), 0);
  if (zv != nullptr) {
    const TensorData& z = *zv->constant;
    if (z.numElements() != count)
      return "its zero point has " + std::to_string(z.numElements()) +
             " elements and its scale " + std::to_string(count);
    out.zero = z.toInts();
  }
  for (size_t i = 0; i < out.scale.size(); ++i) {
    if (!(out.scale[i] > 0.f) || !std::isfinite(out.scale[i]))
      return "its scale " + std::to_string(out.scale[i]) +
             " is not finite and > 0";
    if (out.zero[i] < out.lo || out.zero[i] > out.hi)
      return "its zero point " + std::to_string(out.zero[i]) +
             " is outside the " + typeName(out.type) + " range";
  }
  out.axis = a.getInt("axis");
  if (out.axis < 0)
    out.axis += static_cast<int64_t>(rank);
  if (s.dims.size() == 1 && count > 1) {
    if (out.axis < 0 || out.axis >= static_cast<int64_t>(rank))
      return "its axis " + std::to_string(a.getInt("axis")) +
             " is outside the input's " + std::to_string(rank) + " axes";
  }
  return "";
}

namespace {

/// The constant input of QuantizeLinear or DequantizeLinear node \p n and
/// its parameters \p p, when every operand is a constant and the
/// parameters fit it; else nullptr.
const TensorData* constantOperand(const Node* n, int64_t opset,
                                  QuantParams& p) {
  for (const Value* v : n->inputs)
    if (!v->isConstant())
      return nullptr;
  const TensorData& x = *n->inputs[0]->constant;
  if (!quantParams(n, opset, x.dims.size(), p).empty())
    return nullptr;
  if (!p.perTensor() && x.dims[static_cast<size_t>(p.axis)] !=
                            static_cast<int64_t>(p.scale.size()))
    return nullptr;
  return &x;
}

} // namespace

std::shared_ptr<const TensorData> foldDequantizeLinear(const Node* n,
                                                       int64_t opset) {
  QuantParams p;
  const TensorData* operand = constantOperand(n, opset, p);
  if (operand == nullptr)
    return nullptr;
  const TensorData& x = *operand;
  const int64_t count = x.numElements();
  std::vector<float> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const size_t k = paramIndex(p, x.dims, i);
    // ONNX: (x - zero_point) * scale, in float32.
    out[static_cast<size_t>(i)] =
        static_cast<float>(x.asInt(i) - p.zero[k]) * p.scale[k];
  }
  return floatTensor(out, x.dims);
}

std::shared_ptr<const TensorData> foldQuantizeLinear(const Node* n,
                                                     int64_t opset) {
  QuantParams p;
  const TensorData* operand = constantOperand(n, opset, p);
  if (operand == nullptr || operand->dtype != DataType::Float)
    return nullptr;
  const TensorData& x = *operand;
  const std::vector<float> v = x.toFloats();
  auto t = std::make_shared<TensorData>();
  t->dtype = p.type;
  t->dims = x.dims;
  for (size_t i = 0; i < v.size(); ++i) {
    const size_t k = paramIndex(p, x.dims, static_cast<int64_t>(i));
    // ONNX: saturate(round_half_even(x / scale) + zero_point).
    double q = std::nearbyint(v[i] / p.scale[k]) + double(p.zero[k]);
    // (A NaN, which no integer holds, becomes the zero point.)
    q = std::isnan(q) ? double(p.zero[k])
                      : std::min(std::max(q, double(p.lo)), double(p.hi));
    if (p.type == DataType::Uint8)
      t->bytes.push_back(static_cast<uint8_t>(q));
    else
      t->bytes.push_back(static_cast<uint8_t>(static_cast<int8_t>(q)));
  }
  return t;
}

namespace {

/// The DynamicQuantizeLinear node making output \p which (0: the integers,
/// 1: the scale, 2: the zero point) of \p v, or nullptr.
const Node* dynamicQuantizeOf(const Value* v, int64_t which) {
  const Node* p = v->producer;
  if (p == nullptr || p->kind != OpKind::OnnxDynamicQuantizeLinear)
    return nullptr;
  auto it = p->attrs.find(kOutputIndex);
  const int64_t output =
      it == p->attrs.end() ? 0 : std::get<int64_t>(it->second);
  return output == which ? p : nullptr;
}

/// The float values the integers of DynamicQuantizeLinear node \p q
/// stand for: a DynamicQuantizeLinear node of output -1 after it, one per
/// quantized tensor (kept in \p made).
Value* dynamicValues(Graph& g, const Node* q, std::map<Value*, Value*>& made) {
  Value* x = q->inputs[0];
  Value*& xf = made[x];
  if (xf == nullptr) {
    xf = g.addValue(x->name + "/dynamically_quantized", DataType::Float, {});
    Node* d = g.addNode(OpKind::OnnxDynamicQuantizeLinear, {x}, xf, q->origins,
                        g.position(q) + 1);
    d->attrs[kOutputIndex] = int64_t{-1};
  }
  return xf;
}

/// DequantizeLinear of a DynamicQuantizeLinear's three outputs (a dynamic
/// QDQ pair): the values its integers stand for. False when \p n is not.
bool expandDynamicPair(Graph& g, Node* n,
                       std::map<Value*, Value*>& dequantized) {
  if (n->inputs.size() != 3)
    return false;
  const Node* q = dynamicQuantizeOf(n->inputs[0], 0);
  const Node* s = dynamicQuantizeOf(n->inputs[1], 1);
  const Node* z = dynamicQuantizeOf(n->inputs[2], 2);
  if (q == nullptr || s == nullptr || z == nullptr ||
      s->inputs[0] != q->inputs[0] || z->inputs[0] != q->inputs[0])
    return false;
  g.replaceAllUses(n->output, dynamicValues(g, q, dequantized));
  return true;
}

/// The single reader of \p v when it is of kind \p kind, else nullptr.
Node* onlyReader(const Graph& g, const Value* v, OpKind kind) {
  if (v->users.size() != 1 || g.isOutput(v) || v->users[0]->kind != kind)
    return nullptr;
  return v->users[0];
}

/// ONNX Runtime's dynamic quantization of Conv and MatMul:
///   (q, s, z) = DynamicQuantizeLinear(x)
///   y = Mul(Cast<float>(ConvInteger(q, w, z, w_zero)), Mul(s, w_scale))
/// (MatMulInteger likewise), w, w_zero and w_scale constants, becomes
///   y = Conv(dequantized x, DequantizeLinear(w, w_scale, w_zero))
/// where the dequantized x is a DynamicQuantizeLinear node of output -1
/// (the float values q stands for). False when \p n is not in that form.
bool expandDynamic(Graph& g, Node* n, std::map<Value*, Value*>& dequantized) {
  const bool conv = n->kind == OpKind::OnnxConvInteger;
  if (n->inputs.size() < 3 || !n->inputs[1]->isConstant())
    return false;
  const Node* q = dynamicQuantizeOf(n->inputs[0], 0);
  const Node* z = dynamicQuantizeOf(n->inputs[2], 2);
  if (q == nullptr || z == nullptr || q->inputs[0] != z->inputs[0])
    return false;
  Value* x = q->inputs[0];
  Value* wZero = n->inputs.size() > 3 ? n->inputs[3] : nullptr;
  if (wZero != nullptr && !wZero->isConstant())
    return false;
  Node* cast = onlyReader(g, n->output, OpKind::OnnxCast);
  Node* mul = cast ? onlyReader(g, cast->output, OpKind::OnnxMul) : nullptr;
  if (mul == nullptr || mul->inputs.size() != 2)
    return false;
  const Value* scales =
      mul->inputs[0] == cast->output ? mul->inputs[1] : mul->inputs[0];
  const Node* sm = scales->producer;
  if (sm == nullptr || sm->kind != OpKind::OnnxMul || sm->inputs.size() != 2)
    return false;
  Value* wScale = nullptr;
  for (int i = 0; i < 2; ++i)
    if (dynamicQuantizeOf(sm->inputs[size_t(i)], 1) != nullptr &&
        sm->inputs[size_t(i)]->producer->inputs[0] == x &&
        sm->inputs[size_t(1 - i)]->isConstant())
      wScale = sm->inputs[size_t(1 - i)];
  if (wScale == nullptr)
    return false;
  // A weight scale per output channel, as DequantizeLinear takes it (1-D).
  if (wScale->constant->numElements() > 1 && wScale->constant->dims.size() > 1)
    wScale = g.addConstant(
        wScale->name,
        withDims(*wScale->constant, {wScale->constant->numElements()}));
  Value* xf = dynamicValues(g, q, dequantized);
  int pos = g.position(mul);
  std::vector<Value*> wIn{n->inputs[1], wScale};
  if (wZero != nullptr)
    wIn.push_back(wZero);
  Value* w =
      g.addValue(n->output->name + "/dequantized_weights", DataType::Float, {});
  const TensorData& wData = *n->inputs[1]->constant;
  g.addNode(OpKind::OnnxDequantizeLinear, wIn, w, n->origins, pos++)
      ->attrs["axis"] =
      int64_t{conv ? 0 : static_cast<int64_t>(wData.dims.size()) - 1};
  Value* y = g.addValue(mul->output->name, DataType::Float, mul->output->shape);
  Node* op = g.addNode(conv ? OpKind::OnnxConv : OpKind::OnnxMatMul, {xf, w}, y,
                       n->origins, pos++);
  if (conv)
    op->attrs = n->attrs;
  g.replaceAllUses(mul->output, y);
  return true;
}

} // namespace

const Node* quantizeSource(const Value* v) {
  while (v->producer != nullptr && (v->producer->kind == OpKind::MaxPool ||
                                    v->producer->kind == OpKind::MaxPoolPads))
    v = v->producer->inputs[0];
  return v->producer != nullptr && v->producer->kind == OpKind::Quantize
             ? v->producer
             : nullptr;
}

void expandQuantizedOps(Graph& g) {
  std::map<Value*, Value*> dequantized;
  std::vector<Node*> dynamic;
  for (const auto& n : g.nodes())
    if (n->kind == OpKind::OnnxConvInteger ||
        n->kind == OpKind::OnnxMatMulInteger ||
        n->kind == OpKind::OnnxDequantizeLinear)
      dynamic.push_back(n.get());
  for (Node* n : dynamic)
    if (n->kind == OpKind::OnnxDequantizeLinear)
      expandDynamicPair(g, n, dequantized);
    else
      expandDynamic(g, n, dequantized);
  std::vector<Node*> work;
  for (const auto& n : g.nodes())
    if (n->kind == OpKind::OnnxQLinearConv ||
        n->kind == OpKind::OnnxQLinearMatMul)
      work.push_back(n.get());
  for (Node* n : work) {
    // QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point,
    // y_scale, y_zero_point[, B]; QLinearMatMul: a, a_scale,
    // a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point.
    const std::vector<Value*> in = n->inputs;
    if (in.size() < 8)
      continue; // the loader's arity check reports it
    const bool conv = n->kind == OpKind::OnnxQLinearConv;
    const std::string& name = n->output->name;
    int pos = g.position(n);
    auto add = [&](OpKind kind, std::vector<Value*> inputs,
                   const std::string& suffix) {
      Value* out = g.addValue(name + suffix, DataType::Float, {});
      g.addNode(kind, std::move(inputs), out, n->origins, pos++);
      return out;
    };
    Value* x = add(OpKind::OnnxDequantizeLinear, {in[0], in[1], in[2]},
                   "/dequantized_input");
    Value* w = add(OpKind::OnnxDequantizeLinear, {in[3], in[4], in[5]},
                   "/dequantized_weights");
    // Per-channel weights: along the output channels (Conv's axis 0, the
    // columns of MatMul's 2-D b).
    Node* wNode = w->producer;
    const TensorData* wData =
        in[3]->isConstant() ? in[3]->constant.get() : nullptr;
    wNode->attrs["axis"] =
        int64_t{conv ? 0 : (wData ? int64_t(wData->dims.size()) - 1 : 1)};
    std::vector<Value*> opIn{x, w};
    if (conv && in.size() > 8 && !in[8]->name.empty()) {
      // The int32 bias at the input scale times the weight scale.
      Value* bScale = add(OpKind::OnnxMul, {in[1], in[4]}, "/bias_scale");
      Value* b = add(OpKind::OnnxDequantizeLinear, {in[8], bScale},
                     "/dequantized_bias");
      b->producer->attrs["axis"] = int64_t{0};
      opIn.push_back(b);
    }
    Value* y =
        add(conv ? OpKind::OnnxConv : OpKind::OnnxMatMul, opIn, "/float");
    if (conv)
      y->producer->attrs = n->attrs;
    Value* q = add(OpKind::OnnxQuantizeLinear, {y, in[6], in[7]}, "");
    q->shape = n->output->shape;
    q->dtype = n->output->dtype;
    g.replaceAllUses(n->output, q);
    g.eraseNode(n);
  }
  g.pruneValues();
}

} // namespace hpvm::fe
