// ConstantFolding.cpp - the fold-constants pass: evaluates Constant nodes and
// the shape computations exporters write into constants, and fills in the
// shapes that become known.
#include "passes/ConstantFolding.h"

#include "ir/Printer.h" // formatShape
#include "onnx/OpAttrs.h"
#include "onnx/ProtoConversion.h" // checkedTensorBytes
#include "onnx/SplitOutputs.h"
#include "passes/ConstantTensors.h"
#include "passes/Matchers.h"
#include "passes/OpGeometry.h"
#include "passes/QuantizedOps.h"
#include "passes/ShapeInference.h"
#include "support/Diagnostics.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace hpvm::fe {

namespace {

/// Replaces \p n's output by constant \p data and erases \p n.
void replaceByConstant(Graph& g, Node* n,
                       std::shared_ptr<const TensorData> data) {
  Value* c = g.addConstant(n->output->name, std::move(data));
  g.replaceAllUses(n->output, c);
  g.eraseNode(n);
}

/// True if every input of \p n is a constant.
bool allConstant(const Node* n) {
  return std::all_of(n->inputs.begin(), n->inputs.end(),
                     [](const Value* v) { return v->isConstant(); });
}

/// Refuses to fold \p n into a constant of \p dims and type \p t larger
/// than the graph's tensor limit (or whose size overflows): the folds whose
/// result can outgrow their operands (broadcasts, Expand, ConstantOfShape,
/// Range) call it before computing.
void boundFold(const Graph& g, const Node* n, const std::vector<int64_t>& dims,
               DataType t) {
  const std::string what = nodeContext(g.source.path, n->origins.front()) +
                           ": its value, computed when compiling,";
  if (std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; }))
    throw UserError(what + " would have a negative dimension (" +
                    formatShape(dims) + ")");
  checkedTensorBytes(what, dims, std::max<size_t>(1, elementSize(t)),
                     g.maxTensorBytes);
}

/// int64 arithmetic as ONNX runtimes do it, in two's complement: an overflow
/// wraps around (in C++ it would be undefined), INT64_MIN / -1 included.
int64_t wrapAdd(int64_t x, int64_t y) {
  return static_cast<int64_t>(uint64_t(x) + uint64_t(y));
}
int64_t wrapSub(int64_t x, int64_t y) {
  return static_cast<int64_t>(uint64_t(x) - uint64_t(y));
}
int64_t wrapMul(int64_t x, int64_t y) {
  return static_cast<int64_t>(uint64_t(x) * uint64_t(y));
}
/// (y != 0.)
int64_t wrapDiv(int64_t x, int64_t y) {
  return y == -1 ? wrapSub(0, x) : x / y;
}
int64_t wrapMod(int64_t x, int64_t y) { return y == -1 ? 0 : x % y; }

// The folding of each operator: its result as a constant, nullptr when it
// cannot be evaluated when compiling.

/// Constant: the tensor of whichever value* attribute is present.
std::shared_ptr<const TensorData> foldConstant(OpAttrs& a) {
  if (auto t = a.getTensor("value"))
    return t;
  if (a.has("value_float"))
    return floatTensor({static_cast<float>(a.getFloat("value_float"))}, {});
  if (a.has("value_floats")) {
    std::vector<double> d = a.getFloats("value_floats");
    return floatTensor(std::vector<float>(d.begin(), d.end()),
                       {static_cast<int64_t>(d.size())});
  }
  if (a.has("value_int"))
    return intTensor({a.getInt("value_int")}, {});
  if (a.has("value_ints")) {
    std::vector<int64_t> v = a.getInts("value_ints");
    return intTensor(v, {static_cast<int64_t>(v.size())});
  }
  return nullptr;
}

/// Shape: the input's static dims from start to end.
std::shared_ptr<const TensorData> foldShape(Node* n, OpAttrs& a) {
  // Symbolic dimensions become 0, which Reshape reads as "copy the input
  // dimension": right for the batch dimension kept in place (the usual
  // x.view(x.size(0), -1)); resolveReshape rejects other uses.
  const Value* in = n->inputs[0];
  if (in->shape.empty() && !in->isConstant())
    return nullptr;
  std::vector<int64_t> dims = in->shape;
  for (size_t i = 1; i < dims.size(); ++i)
    if (dims[i] < 0)
      return nullptr;
  if (!dims.empty() && dims[0] < 0)
    dims[0] = 0;
  int64_t rank = static_cast<int64_t>(dims.size());
  int64_t start = a.getInt("start"), end = a.getInt("end");
  start = std::clamp(start < 0 ? start + rank : start, int64_t{0}, rank);
  end = std::clamp(end < 0 ? end + rank : end, int64_t{0}, rank);
  std::vector<int64_t> out;
  for (int64_t i = start; i < end; ++i)
    out.push_back(dims[static_cast<size_t>(i)]);
  return intTensor(out, {static_cast<int64_t>(out.size())});
}

/// Gather: elements of a 1-D constant at constant indices (axis 0).
std::shared_ptr<const TensorData> foldGather(Node* n, OpAttrs& a) {
  if (!allConstant(n) || n->inputs.size() != 2)
    return nullptr;
  const TensorData& data = *n->inputs[0]->constant;
  const TensorData& idx = *n->inputs[1]->constant;
  if (data.dims.size() != 1 || a.getInt("axis") != 0)
    return nullptr;
  auto t = std::make_shared<TensorData>();
  t->dtype = data.dtype;
  t->dims = idx.dims;
  size_t size = elementSize(data.dtype);
  for (int64_t i = 0; i < idx.numElements(); ++i) {
    int64_t k = idx.asInt(i);
    if (k < 0)
      k += data.dims[0];
    if (k < 0 || k >= data.dims[0])
      return nullptr;
    const uint8_t* src = data.bytes.data() + static_cast<size_t>(k) * size;
    t->bytes.insert(t->bytes.end(), src, src + size);
  }
  return t;
}

/// Unsqueeze/Squeeze of a constant: its bytes with dims of size 1 added or
/// dropped.
std::shared_ptr<const TensorData> foldSqueeze(Node* n, OpAttrs& a) {
  std::vector<int64_t> axes;
  if (!n->inputs[0]->isConstant() || !axesOf(n, a, axes))
    return nullptr;
  const TensorData& data = *n->inputs[0]->constant;
  std::vector<int64_t> dims;
  if (n->kind == OpKind::OnnxUnsqueeze) {
    int64_t rank = static_cast<int64_t>(data.dims.size() + axes.size());
    std::vector<bool> isNew(static_cast<size_t>(rank), false);
    for (int64_t axis : axes) {
      axis = axis < 0 ? axis + rank : axis;
      if (axis < 0 || axis >= rank || isNew[static_cast<size_t>(axis)])
        return nullptr; // out of range or repeated: ONNX rejects both
      isNew[static_cast<size_t>(axis)] = true;
    }
    size_t k = 0;
    for (int64_t i = 0; i < rank; ++i)
      dims.push_back(isNew[static_cast<size_t>(i)] ? 1 : data.dims[k++]);
  } else {
    int64_t rank = static_cast<int64_t>(data.dims.size());
    std::vector<bool> drop(data.dims.size(), axes.empty());
    for (int64_t axis : axes) {
      axis = axis < 0 ? axis + rank : axis;
      if (axis < 0 || axis >= rank)
        return nullptr;
      drop[static_cast<size_t>(axis)] = true;
    }
    for (size_t i = 0; i < data.dims.size(); ++i)
      if (!drop[i] || data.dims[i] != 1)
        dims.push_back(data.dims[i]);
  }
  return withDims(data, dims);
}

/// Concat of constants along axis.
std::shared_ptr<const TensorData> foldConcat(Node* n, OpAttrs& a) {
  if (!allConstant(n) || n->inputs.empty())
    return nullptr;
  const TensorData& first = *n->inputs[0]->constant;
  int64_t rank = static_cast<int64_t>(first.dims.size());
  int64_t axis = a.getInt("axis");
  axis = axis < 0 ? axis + rank : axis;
  if (axis < 0 || axis >= rank)
    return nullptr;
  // outer = product of dims before axis; each input contributes a chunk
  // of dims[axis] * inner elements per outer step.
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= first.dims[static_cast<size_t>(i)];
  auto t = std::make_shared<TensorData>();
  t->dtype = first.dtype;
  t->dims = first.dims;
  t->dims[static_cast<size_t>(axis)] = 0;
  for (const Value* v : n->inputs) {
    const TensorData& d = *v->constant;
    if (d.dtype != first.dtype || d.dims.size() != first.dims.size())
      return nullptr;
    t->dims[static_cast<size_t>(axis)] += d.dims[static_cast<size_t>(axis)];
  }
  size_t size = elementSize(first.dtype);
  for (int64_t o = 0; o < outer; ++o)
    for (const Value* v : n->inputs) {
      const TensorData& d = *v->constant;
      size_t chunk =
          static_cast<size_t>(d.numElements() / std::max<int64_t>(outer, 1)) *
          size;
      const uint8_t* src = d.bytes.data() + static_cast<size_t>(o) * chunk;
      t->bytes.insert(t->bytes.end(), src, src + chunk);
    }
  return t;
}

/// Cast of a constant to float, int64, int32, double or bool.
std::shared_ptr<const TensorData> foldCast(Node* n, OpAttrs& a) {
  if (!n->inputs[0]->isConstant())
    return nullptr;
  const TensorData& data = *n->inputs[0]->constant;
  int64_t to = a.getInt("to");
  auto t = std::make_shared<TensorData>();
  t->dims = data.dims;
  int64_t count = data.numElements();
  switch (to) {
  case static_cast<int64_t>(DataType::Float):
    return floatTensor(data.toFloats(), data.dims);
  case static_cast<int64_t>(DataType::Int64):
    return intTensor(data.toInts(), data.dims);
  case static_cast<int64_t>(DataType::Int32):
    t->dtype = DataType::Int32;
    for (int64_t i = 0; i < count; ++i) {
      int32_t v = static_cast<int32_t>(data.asInt(i));
      uint8_t buf[4];
      std::memcpy(buf, &v, 4);
      t->bytes.insert(t->bytes.end(), buf, buf + 4);
    }
    return t;
  case static_cast<int64_t>(DataType::Double):
    t->dtype = DataType::Double;
    for (int64_t i = 0; i < count; ++i) {
      double v = data.asDouble(i);
      uint8_t buf[8];
      std::memcpy(buf, &v, 8);
      t->bytes.insert(t->bytes.end(), buf, buf + 8);
    }
    return t;
  case static_cast<int64_t>(DataType::Bool):
    t->dtype = DataType::Bool;
    for (int64_t i = 0; i < count; ++i)
      t->bytes.push_back(data.asDouble(i) != 0.0 ? 1 : 0);
    return t;
  default: // other element types are not folded
    return nullptr;
  }
}

/// Add, Sub, Mul, Div, Pow of float32 or int64 constants of one type,
/// broadcast as NumPy does; integers divide truncating toward zero (ONNX),
/// by zero: not folded; an integer Pow needs a non-negative exponent.
std::shared_ptr<const TensorData> foldArithmetic(const Graph& g, Node* n) {
  if (!allConstant(n) || n->inputs.size() != 2)
    return nullptr;
  const TensorData& a = *n->inputs[0]->constant;
  const TensorData& b = *n->inputs[1]->constant;
  if (a.dtype != b.dtype)
    return nullptr;
  const bool isFloat = a.dtype == DataType::Float;
  if (!isFloat && a.dtype != DataType::Int64)
    return nullptr;
  std::vector<int64_t> ad = a.dims, bd = b.dims, od;
  if (!broadcastDims(ad, bd, od))
    return nullptr;
  boundFold(g, n, od, a.dtype);
  const size_t rank = od.size();
  std::vector<int64_t> as = stridesOf(ad), bs = stridesOf(bd);
  const OpKind k = n->kind;
  std::vector<double> fv;
  std::vector<int64_t> iv;
  int64_t count = 1;
  for (int64_t d : od)
    count *= d;
  std::vector<int64_t> index(rank, 0);
  for (int64_t o = 0; o < count; ++o) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < rank; ++d) {
      ia += (ad[d] == 1 ? 0 : index[d]) * as[d];
      ib += (bd[d] == 1 ? 0 : index[d]) * bs[d];
    }
    if (isFloat) {
      double x = a.asDouble(ia), y = b.asDouble(ib);
      // Pow in float, as ONNX runtimes compute it.
      fv.push_back(k == OpKind::OnnxAdd   ? x + y
                   : k == OpKind::OnnxSub ? x - y
                   : k == OpKind::OnnxMul ? x * y
                   : k == OpKind::OnnxDiv ? x / y
                   : k == OpKind::OnnxMax ? std::max(x, y)
                   : k == OpKind::OnnxMin ? std::min(x, y)
                                          : std::pow(float(x), float(y)));
    } else if (k == OpKind::OnnxPow) {
      int64_t x = a.asInt(ia), y = b.asInt(ib), r = 1;
      if (y < 0 || y > 62)
        return nullptr;
      for (int64_t i = 0; i < y; ++i)
        r = wrapMul(r, x);
      iv.push_back(r);
    } else {
      int64_t x = a.asInt(ia), y = b.asInt(ib);
      if (k == OpKind::OnnxDiv && y == 0)
        return nullptr;
      iv.push_back(k == OpKind::OnnxAdd   ? wrapAdd(x, y)
                   : k == OpKind::OnnxSub ? wrapSub(x, y)
                   : k == OpKind::OnnxMul ? wrapMul(x, y)
                   : k == OpKind::OnnxMax ? std::max(x, y)
                   : k == OpKind::OnnxMin ? std::min(x, y)
                                          : wrapDiv(x, y));
    }
    nextIndex(index, od);
  }
  if (!isFloat)
    return intTensor(iv, od);
  return floatTensor(std::vector<float>(fv.begin(), fv.end()), od);
}

/// Transpose of a constant.
std::shared_ptr<const TensorData> foldTranspose(Node* n, OpAttrs& a) {
  if (!n->inputs[0]->isConstant())
    return nullptr;
  const TensorData& data = *n->inputs[0]->constant;
  const size_t rank = data.dims.size();
  std::vector<int64_t> perm = a.getInts("perm");
  if (perm.empty())
    for (size_t i = rank; i-- > 0;)
      perm.push_back(static_cast<int64_t>(i));
  if (perm.size() != rank)
    return nullptr;
  std::vector<int64_t> outDims(rank);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < rank; ++i) {
    int64_t p = perm[i] < 0 ? perm[i] + int64_t(rank) : perm[i];
    if (p < 0 || p >= int64_t(rank) || seen[size_t(p)])
      return nullptr;
    seen[size_t(p)] = true;
    perm[i] = p;
    outDims[i] = data.dims[size_t(p)];
  }
  std::vector<int64_t> strides = stridesOf(data.dims);
  return gatherElements(data, outDims, [&](const std::vector<int64_t>& idx) {
    int64_t s = 0;
    for (size_t i = 0; i < rank; ++i)
      s += idx[i] * strides[size_t(perm[i])];
    return s;
  });
}

/// Slice of a constant.
std::shared_ptr<const TensorData> foldSlice(Node* n, int64_t opset) {
  if (!n->inputs[0]->isConstant())
    return nullptr;
  const TensorData& data = *n->inputs[0]->constant;
  std::vector<int64_t> begin, step, extent;
  if (!sliceGeometry(*n, opset, data.dims, begin, step, extent))
    return nullptr;
  std::vector<int64_t> strides = stridesOf(data.dims);
  return gatherElements(data, extent, [&](const std::vector<int64_t>& idx) {
    int64_t s = 0;
    for (size_t i = 0; i < idx.size(); ++i)
      s += (begin[i] + idx[i] * step[i]) * strides[i];
    return s;
  });
}

/// Reshape of a constant to a target known when compiling.
std::shared_ptr<const TensorData> foldReshape(Node* n, int64_t opset) {
  if (!n->inputs[0]->isConstant())
    return nullptr;
  std::vector<int64_t> target = reshapeTarget(*n, opset);
  if (target.empty() && n->output->shape.empty())
    return nullptr;
  const TensorData& data = *n->inputs[0]->constant;
  int64_t count = 1;
  for (int64_t d : target)
    count *= d;
  if (count != data.numElements())
    return nullptr;
  return withDims(data, target);
}

/// ConstantOfShape: a tensor of the constant dims filled with the value
/// attribute (one element; float 0 when absent).
std::shared_ptr<const TensorData> foldConstantOfShape(const Graph& g, Node* n,
                                                      OpAttrs& a) {
  if (!n->inputs[0]->isConstant())
    return nullptr;
  std::vector<int64_t> dims = n->inputs[0]->constant->toInts();
  for (int64_t d : dims)
    if (d < 0)
      return nullptr;
  std::shared_ptr<const TensorData> fill = a.getTensor("value");
  if (!fill)
    fill = floatTensor({0.f}, {1});
  if (fill->numElements() != 1)
    return nullptr;
  boundFold(g, n, dims, fill->dtype);
  return gatherElements(*fill, dims,
                        [](const std::vector<int64_t>&) { return 0; });
}

/// Expand of a constant to a constant shape (broadcast both ways, as
/// NumPy broadcasts the constant against a tensor of that shape).
std::shared_ptr<const TensorData> foldExpand(const Graph& g, Node* n) {
  if (!allConstant(n) || n->inputs.size() != 2)
    return nullptr;
  const TensorData& data = *n->inputs[0]->constant;
  std::vector<int64_t> in = data.dims, shape = n->inputs[1]->constant->toInts(),
                       out;
  // A batch of 0 is the symbolic batch as foldShape writes it: the
  // constant is expanded at run time (ViT's class token per image), its
  // shape inferred with the batch unknown.
  if (!broadcastDims(in, shape, out) || (!out.empty() && out[0] == 0))
    return nullptr;
  boundFold(g, n, out, data.dtype);
  return gatherElements(data, out, BroadcastSource(data.dims, out.size()));
}

/// Equal of two constants of one numeric type (broadcast), as bool.
std::shared_ptr<const TensorData> foldEqual(const Graph& g, Node* n) {
  if (!allConstant(n) || n->inputs.size() != 2)
    return nullptr;
  const TensorData& a = *n->inputs[0]->constant;
  const TensorData& b = *n->inputs[1]->constant;
  if (a.dtype != b.dtype)
    return nullptr;
  std::vector<int64_t> ad = a.dims, bd = b.dims, od;
  if (!broadcastDims(ad, bd, od))
    return nullptr;
  boundFold(g, n, od, DataType::Bool);
  const BroadcastSource as(a.dims, od.size()), bs(b.dims, od.size());
  const bool isInt =
      a.dtype != DataType::Float && a.dtype != DataType::Double &&
      a.dtype != DataType::Float16 && a.dtype != DataType::BFloat16;
  auto t = std::make_shared<TensorData>();
  t->dtype = DataType::Bool;
  t->dims = od;
  std::vector<int64_t> index(od.size(), 0);
  for (int64_t o = 0, count = t->numElements(); o < count; ++o) {
    const int64_t i = as(index), j = bs(index);
    t->bytes.push_back(isInt ? a.asInt(i) == b.asInt(j)
                             : a.asDouble(i) == b.asDouble(j));
    nextIndex(index, od);
  }
  return t;
}

/// Where of constants: X where the (bool) condition holds, else Y
/// (broadcast).
std::shared_ptr<const TensorData> foldWhere(const Graph& g, Node* n) {
  if (!allConstant(n) || n->inputs.size() != 3)
    return nullptr;
  const TensorData& c = *n->inputs[0]->constant;
  const TensorData& x = *n->inputs[1]->constant;
  const TensorData& y = *n->inputs[2]->constant;
  std::vector<int64_t> cd = c.dims, xd = x.dims, yd = y.dims, cx, od;
  if (c.dtype != DataType::Bool || x.dtype != y.dtype ||
      !broadcastDims(cd, xd, cx) || !broadcastDims(cx, yd, od))
    return nullptr;
  boundFold(g, n, od, x.dtype);
  const BroadcastSource cs(c.dims, od.size()), xs(x.dims, od.size()),
      ys(y.dims, od.size());
  const size_t size = elementSize(x.dtype);
  auto t = std::make_shared<TensorData>();
  t->dtype = x.dtype;
  t->dims = od;
  std::vector<int64_t> index(od.size(), 0);
  for (int64_t o = 0, count = t->numElements(); o < count; ++o) {
    const bool pick = c.asDouble(cs(index)) != 0.0;
    const TensorData& from = pick ? x : y;
    const uint8_t* src =
        from.bytes.data() +
        static_cast<size_t>(pick ? xs(index) : ys(index)) * size;
    t->bytes.insert(t->bytes.end(), src, src + size);
    nextIndex(index, od);
  }
  return t;
}

/// Mod of int64 constants (the remainder takes the divisor's sign; by
/// zero: not folded) or, with fmod, of float32 constants (C's fmod).
std::shared_ptr<const TensorData> foldMod(const Graph& g, Node* n,
                                          OpAttrs& attrs) {
  if (!allConstant(n) || n->inputs.size() != 2)
    return nullptr;
  const TensorData& a = *n->inputs[0]->constant;
  const TensorData& b = *n->inputs[1]->constant;
  const bool fmod = attrs.getInt("fmod") != 0;
  if (a.dtype != b.dtype ||
      a.dtype != (fmod ? DataType::Float : DataType::Int64))
    return nullptr;
  std::vector<int64_t> ad = a.dims, bd = b.dims, od;
  if (!broadcastDims(ad, bd, od))
    return nullptr;
  boundFold(g, n, od, a.dtype);
  const BroadcastSource as(a.dims, od.size()), bs(b.dims, od.size());
  std::vector<int64_t> iv;
  std::vector<float> fv;
  std::vector<int64_t> index(od.size(), 0);
  int64_t count = 1;
  for (int64_t d : od)
    count *= d;
  for (int64_t o = 0; o < count; ++o) {
    if (fmod) {
      fv.push_back(std::fmod(float(a.asDouble(as(index))),
                             float(b.asDouble(bs(index)))));
    } else {
      const int64_t x = a.asInt(as(index)), y = b.asInt(bs(index));
      if (y == 0)
        return nullptr;
      int64_t r = wrapMod(x, y);
      if (r != 0 && (r < 0) != (y < 0))
        r += y; // (|r| < |y|: no overflow)
      iv.push_back(r);
    }
    nextIndex(index, od);
  }
  return fmod ? floatTensor(fv, od) : intTensor(iv, od);
}

/// Not of a bool constant.
std::shared_ptr<const TensorData> foldNot(Node* n) {
  if (!n->inputs[0]->isConstant() ||
      n->inputs[0]->constant->dtype != DataType::Bool)
    return nullptr;
  auto t = std::make_shared<TensorData>(*n->inputs[0]->constant);
  for (uint8_t& b : t->bytes)
    b = b ? 0 : 1;
  return t;
}

/// Range of int64 or float32 scalar constants start, limit, delta:
/// max(ceil((limit - start) / delta), 0) elements.
std::shared_ptr<const TensorData> foldRange(const Graph& g, Node* n) {
  if (!allConstant(n) || n->inputs.size() != 3)
    return nullptr;
  const TensorData& s = *n->inputs[0]->constant;
  const TensorData& l = *n->inputs[1]->constant;
  const TensorData& d = *n->inputs[2]->constant;
  if (s.dtype != l.dtype || s.dtype != d.dtype || s.numElements() != 1 ||
      l.numElements() != 1 || d.numElements() != 1 ||
      (s.dtype != DataType::Int64 && s.dtype != DataType::Float) ||
      d.asDouble(0) == 0)
    return nullptr;
  const double start = s.asDouble(0), delta = d.asDouble(0);
  const double steps = std::ceil((l.asDouble(0) - start) / delta);
  // (More elements than int64 counts: a size that overflows.)
  const int64_t count = !(steps < 0x1p62) ? std::numeric_limits<int64_t>::max()
                        : steps <= 0      ? 0
                                          : int64_t(steps);
  boundFold(g, n, {count}, s.dtype);
  if (s.dtype == DataType::Int64) {
    std::vector<int64_t> v;
    for (int64_t i = 0; i < count; ++i)
      v.push_back(wrapAdd(s.asInt(0), wrapMul(i, d.asInt(0))));
    return intTensor(v, {count});
  }
  std::vector<float> v;
  for (int64_t i = 0; i < count; ++i)
    v.push_back(float(start + double(i) * delta));
  return floatTensor(v, {count});
}

/// ScatterND of constants (no reduction): a copy of the data with the
/// slices the indices' last axis addresses replaced by the updates.
std::shared_ptr<const TensorData> foldScatterND(Node* n, OpAttrs& a) {
  if (!allConstant(n) || n->inputs.size() != 3 ||
      a.getString("reduction") != "none")
    return nullptr;
  const TensorData& data = *n->inputs[0]->constant;
  const TensorData& indices = *n->inputs[1]->constant;
  const TensorData& updates = *n->inputs[2]->constant;
  if (indices.dims.empty() || updates.dtype != data.dtype)
    return nullptr;
  const size_t k = size_t(indices.dims.back());
  if (k == 0 || k > data.dims.size())
    return nullptr;
  // Each index tuple addresses a slice of `slice` elements.
  int64_t slice = 1;
  for (size_t d = k; d < data.dims.size(); ++d)
    slice *= data.dims[d];
  const int64_t tuples = indices.numElements() / int64_t(k);
  if (updates.numElements() != tuples * slice)
    return nullptr;
  const std::vector<int64_t> strides = stridesOf(data.dims);
  const size_t size = elementSize(data.dtype);
  auto t = std::make_shared<TensorData>(data);
  for (int64_t i = 0; i < tuples; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < k; ++d) {
      int64_t idx = indices.asInt(i * int64_t(k) + int64_t(d));
      if (idx < 0)
        idx += data.dims[d];
      if (idx < 0 || idx >= data.dims[d])
        return nullptr;
      offset += idx * strides[d];
    }
    std::memcpy(t->bytes.data() + size_t(offset) * size,
                updates.bytes.data() + size_t(i * slice) * size,
                size_t(slice) * size);
  }
  return t;
}

/// Evaluates \p n when it is a foldable operator (the shape computations
/// exporters write) on constants; nullptr for every other operator, which
/// computes on activations or is removed by other passes (only the
/// foldable ones need a line here).
std::shared_ptr<const TensorData> evaluate(const Graph& g, Node* n) {
  const int64_t opset = g.source.opset;
  OpAttrs a(*n, opset);
  const OpKind k = n->kind;
  if (k == OpKind::OnnxConstant)
    return foldConstant(a);
  if (k == OpKind::OnnxShape)
    return foldShape(n, a);
  if (k == OpKind::OnnxGather)
    return foldGather(n, a);
  if (k == OpKind::OnnxUnsqueeze || k == OpKind::OnnxSqueeze)
    return foldSqueeze(n, a);
  if (k == OpKind::OnnxConcat)
    return foldConcat(n, a);
  if (k == OpKind::OnnxCast)
    return foldCast(n, a);
  if (k == OpKind::OnnxReshape)
    return foldReshape(n, opset);
  if (k == OpKind::OnnxAdd || k == OpKind::OnnxSub || k == OpKind::OnnxMul ||
      k == OpKind::OnnxDiv || k == OpKind::OnnxPow || k == OpKind::OnnxMax ||
      k == OpKind::OnnxMin)
    return foldArithmetic(g, n);
  if ((k == OpKind::OnnxSqrt || k == OpKind::OnnxErf) &&
      n->inputs[0]->isConstant() &&
      n->inputs[0]->constant->dtype == DataType::Float) {
    std::vector<float> v = n->inputs[0]->constant->toFloats();
    for (float& f : v)
      f = k == OpKind::OnnxSqrt ? std::sqrt(f) : std::erf(f);
    return floatTensor(v, n->inputs[0]->constant->dims);
  }
  if (k == OpKind::OnnxTranspose)
    return foldTranspose(n, a);
  if (k == OpKind::OnnxSlice)
    return foldSlice(n, opset);
  if (k == OpKind::OnnxConstantOfShape)
    return foldConstantOfShape(g, n, a);
  if (k == OpKind::OnnxExpand)
    return foldExpand(g, n);
  if (k == OpKind::OnnxEqual)
    return foldEqual(g, n);
  if (k == OpKind::OnnxWhere)
    return foldWhere(g, n);
  if (k == OpKind::OnnxMod)
    return foldMod(g, n, a);
  if (k == OpKind::OnnxNot)
    return foldNot(n);
  if (k == OpKind::OnnxRange)
    return foldRange(g, n);
  if (k == OpKind::OnnxScatterND)
    return foldScatterND(n, a);
  if (k == OpKind::OnnxDequantizeLinear)
    return foldDequantizeLinear(n, opset);
  if (k == OpKind::OnnxQuantizeLinear)
    return foldQuantizeLinear(n, opset);
  return nullptr;
}

} // namespace

void foldConstants(Graph& g) {
  for (Node* n : nodeList(g)) {
    // A Split output the loader could not place (its sizes or its input's
    // shape known only now) becomes its Slice.
    if (n->kind == OpKind::OnnxSplit)
      sliceOfSplit(g, n, g.source.opset);
    if (auto data = evaluate(g, n)) {
      replaceByConstant(g, n, std::move(data));
      continue;
    }
    if (n->kind == OpKind::OnnxReshape || n->kind == OpKind::OnnxFlatten) {
      std::vector<int64_t> target = reshapeTarget(*n, g.source.opset);
      if (!target.empty())
        n->output->shape = target;
    } else if (n->output->shape.empty() ||
               std::any_of(n->output->shape.begin(), n->output->shape.end(),
                           [](int64_t d) { return d < 0; })) {
      // Unknown, or of known rank with unknown dims (?x?x?x?).
      std::vector<int64_t> s = inferredShape(n, g.source.opset);
      if (!s.empty())
        n->output->shape = std::move(s);
    }
  }
  g.pruneValues();
}

} // namespace hpvm::fe
