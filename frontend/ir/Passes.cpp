// Passes.cpp - graph simplification passes on the ONNX-level IR and the pass
// pipeline lowerToHpvm().
#include "ir/Passes.h"

#include "ir/PassUtil.h"
#include "onnx/Attributes.h"
#include "onnx/OpAttrs.h"
#include "support/Diagnostics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <unordered_set>

namespace hpvm::fe {

namespace {

/// Snapshot of the node list, so passes may erase while iterating.
std::vector<Node*> nodeList(const Graph& g) {
  std::vector<Node*> out;
  out.reserve(g.nodes().size());
  for (const auto& n : g.nodes())
    out.push_back(n.get());
  return out;
}

/// Replaces \p n's output by constant \p data and erases \p n.
void replaceByConstant(Graph& g, Node* n,
                       std::shared_ptr<const TensorData> data) {
  Value* c = g.addConstant(n->output->name, std::move(data));
  g.replaceAllUses(n->output, c);
  g.eraseNode(n);
}

std::shared_ptr<TensorData> intTensor(const std::vector<int64_t>& values,
                                      std::vector<int64_t> dims) {
  auto t = std::make_shared<TensorData>();
  t->dtype = DataType::Int64;
  t->dims = std::move(dims);
  t->bytes.resize(values.size() * sizeof(int64_t));
  if (!values.empty())
    std::memcpy(t->bytes.data(), values.data(), t->bytes.size());
  return t;
}

std::shared_ptr<TensorData> floatTensor(const std::vector<float>& values,
                                        std::vector<int64_t> dims) {
  auto t = std::make_shared<TensorData>();
  t->dtype = DataType::Float;
  t->dims = std::move(dims);
  t->bytes.resize(values.size() * sizeof(float));
  if (!values.empty())
    std::memcpy(t->bytes.data(), values.data(), t->bytes.size());
  return t;
}

/// A copy of \p t with new dims (same element count, same bytes).
std::shared_ptr<TensorData> withDims(const TensorData& t,
                                     std::vector<int64_t> dims) {
  auto out = std::make_shared<TensorData>(t);
  out->dims = std::move(dims);
  return out;
}

/// Axes from attribute "axes" or constant input 1; false if unknown.
bool axesOf(Node* n, OpAttrs& a, std::vector<int64_t>& axes) {
  if (n->inputs.size() > 1) {
    if (!n->inputs[1]->isConstant())
      return false;
    axes = n->inputs[1]->constant->toInts();
    return true;
  }
  axes = a.getInts("axes");
  return true;
}

/// True if every input of \p n is a constant.
bool allConstant(const Node* n) {
  return std::all_of(n->inputs.begin(), n->inputs.end(),
                     [](const Value* v) { return v->isConstant(); });
}

/// Resolves ONNX Reshape target \p target (0 copies, -1 infers) against
/// \p in; {} when it cannot be resolved.
std::vector<int64_t> resolveReshape(const std::vector<int64_t>& in,
                                    std::vector<int64_t> target) {
  if (in.empty())
    return {};
  int inferAt = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0) {
      if (i >= in.size())
        return {};
      target[i] = in[i];
    } else if (target[i] == -1) {
      if (inferAt >= 0)
        return {};
      inferAt = static_cast<int>(i);
    } else if (target[i] < 0) {
      return {};
    }
  }
  // A symbolic input dimension (-1, the batch) is allowed where the target
  // keeps it in place: copied (0) or inferred (-1) at the same position.
  int64_t inKnown = 1;
  bool symbolicInferred = false;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] >= 0) {
      inKnown *= in[i];
    } else if (static_cast<int>(i) == inferAt) {
      symbolicInferred = true;
    } else if (i >= target.size() || target[i] != in[i]) {
      return {};
    }
  }
  if (inferAt < 0)
    return target;
  int64_t outKnown = 1;
  for (size_t i = 0; i < target.size(); ++i)
    if (static_cast<int>(i) != inferAt && target[i] >= 0)
      outKnown *= target[i];
  if (symbolicInferred) {
    // x.view(-1, K) on a batch of unknown size: the rest must match.
    if (outKnown != inKnown)
      return {};
    return target;
  }
  if (outKnown == 0 || inKnown % outKnown != 0)
    return {};
  target[static_cast<size_t>(inferAt)] = inKnown / outKnown;
  return target;
}

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

/// NumPy broadcasting of dims \p a and \p b: both right-aligned to the
/// larger rank (padded with 1s) in place, and \p out their broadcast
/// shape; false if they do not broadcast.
bool broadcastDims(std::vector<int64_t>& a, std::vector<int64_t>& b,
                   std::vector<int64_t>& out) {
  const size_t rank = std::max(a.size(), b.size());
  a.insert(a.begin(), rank - a.size(), 1);
  b.insert(b.begin(), rank - b.size(), 1);
  out.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    if (a[i] != b[i] && a[i] != 1 && b[i] != 1)
      return false;
    out[i] = a[i] == 1 ? b[i] : a[i];
  }
  return true;
}

/// Advances \p index to the next multi-index of \p dims in row-major
/// order (the last dimension fastest).
void nextIndex(std::vector<int64_t>& index, const std::vector<int64_t>& dims) {
  for (size_t d = index.size(); d-- > 0;)
    if (++index[d] < dims[d])
      return;
    else
      index[d] = 0;
}

/// A tensor of \p data's type and dims \p outDims whose element at each
/// multi-index comes from \p data at the flat index \p source(index).
template <class Source>
std::shared_ptr<const TensorData> gatherElements(const TensorData& data,
                                                 std::vector<int64_t> outDims,
                                                 Source source) {
  auto t = std::make_shared<TensorData>();
  t->dtype = data.dtype;
  t->dims = std::move(outDims);
  const size_t size = elementSize(data.dtype);
  const int64_t count = t->numElements();
  t->bytes.resize(static_cast<size_t>(count) * size);
  std::vector<int64_t> index(t->dims.size(), 0);
  for (int64_t o = 0; o < count; ++o) {
    std::memcpy(t->bytes.data() + static_cast<size_t>(o) * size,
                data.bytes.data() + static_cast<size_t>(source(index)) * size,
                size);
    nextIndex(index, t->dims);
  }
  return t;
}

/// Row-major strides of \p dims.
std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;)
    s[d - 1] = s[d] * dims[d];
  return s;
}

/// Add, Sub, Mul, Div, Pow of float32 or int64 constants of one type,
/// broadcast as NumPy does; integers divide truncating toward zero (ONNX),
/// by zero: not folded; an integer Pow needs a non-negative exponent.
std::shared_ptr<const TensorData> foldArithmetic(Node* n) {
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
                                          : std::pow(float(x), float(y)));
    } else if (k == OpKind::OnnxPow) {
      int64_t x = a.asInt(ia), y = b.asInt(ib), r = 1;
      if (y < 0 || y > 62)
        return nullptr;
      for (int64_t i = 0; i < y; ++i)
        r *= x;
      iv.push_back(r);
    } else {
      int64_t x = a.asInt(ia), y = b.asInt(ib);
      if (k == OpKind::OnnxDiv && y == 0)
        return nullptr;
      iv.push_back(k == OpKind::OnnxAdd   ? x + y
                   : k == OpKind::OnnxSub ? x - y
                   : k == OpKind::OnnxMul ? x * y
                                          : x / y);
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

/// The flat index into a tensor of dims \p in, broadcast as NumPy does to
/// dims \p out (right-aligned, dims of size 1 repeated), of each
/// multi-index of \p out; \p in must broadcast to \p out.
struct BroadcastSource {
  std::vector<int64_t> dims, strides;
  BroadcastSource(std::vector<int64_t> in, size_t rank) : dims(std::move(in)) {
    dims.insert(dims.begin(), rank - dims.size(), 1);
    strides = stridesOf(dims);
  }
  int64_t operator()(const std::vector<int64_t>& index) const {
    int64_t s = 0;
    for (size_t d = 0; d < dims.size(); ++d)
      s += (dims[d] == 1 ? 0 : index[d]) * strides[d];
    return s;
  }
};

/// ConstantOfShape: a tensor of the constant dims filled with the value
/// attribute (one element; float 0 when absent).
std::shared_ptr<const TensorData> foldConstantOfShape(Node* n, OpAttrs& a) {
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
  return gatherElements(*fill, dims,
                        [](const std::vector<int64_t>&) { return 0; });
}

/// Expand of a constant to a constant shape (broadcast both ways, as
/// NumPy broadcasts the constant against a tensor of that shape).
std::shared_ptr<const TensorData> foldExpand(Node* n) {
  if (!allConstant(n) || n->inputs.size() != 2)
    return nullptr;
  const TensorData& data = *n->inputs[0]->constant;
  std::vector<int64_t> in = data.dims, shape = n->inputs[1]->constant->toInts(),
                       out;
  if (!broadcastDims(in, shape, out))
    return nullptr;
  return gatherElements(data, out, BroadcastSource(data.dims, out.size()));
}

/// Equal of two constants of one numeric type (broadcast), as bool.
std::shared_ptr<const TensorData> foldEqual(Node* n) {
  if (!allConstant(n) || n->inputs.size() != 2)
    return nullptr;
  const TensorData& a = *n->inputs[0]->constant;
  const TensorData& b = *n->inputs[1]->constant;
  if (a.dtype != b.dtype)
    return nullptr;
  std::vector<int64_t> ad = a.dims, bd = b.dims, od;
  if (!broadcastDims(ad, bd, od))
    return nullptr;
  const BroadcastSource as(a.dims, od.size()), bs(b.dims, od.size());
  const bool isInt = a.dtype != DataType::Float && a.dtype != DataType::Double;
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
std::shared_ptr<const TensorData> foldWhere(Node* n) {
  if (!allConstant(n) || n->inputs.size() != 3)
    return nullptr;
  const TensorData& c = *n->inputs[0]->constant;
  const TensorData& x = *n->inputs[1]->constant;
  const TensorData& y = *n->inputs[2]->constant;
  std::vector<int64_t> cd = c.dims, xd = x.dims, yd = y.dims, cx, od;
  if (c.dtype != DataType::Bool || x.dtype != y.dtype ||
      !broadcastDims(cd, xd, cx) || !broadcastDims(cx, yd, od))
    return nullptr;
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
std::shared_ptr<const TensorData> foldMod(Node* n, OpAttrs& attrs) {
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
      int64_t r = x % y;
      if (r != 0 && (r < 0) != (y < 0))
        r += y;
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
std::shared_ptr<const TensorData> foldRange(Node* n) {
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
  const int64_t count =
      std::max<int64_t>(int64_t(std::ceil((l.asDouble(0) - start) / delta)), 0);
  if (s.dtype == DataType::Int64) {
    std::vector<int64_t> v;
    for (int64_t i = 0; i < count; ++i)
      v.push_back(s.asInt(0) + i * d.asInt(0));
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
std::shared_ptr<const TensorData> evaluate(Node* n, int64_t opset) {
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
      k == OpKind::OnnxDiv || k == OpKind::OnnxPow)
    return foldArithmetic(n);
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
    return foldConstantOfShape(n, a);
  if (k == OpKind::OnnxExpand)
    return foldExpand(n);
  if (k == OpKind::OnnxEqual)
    return foldEqual(n);
  if (k == OpKind::OnnxWhere)
    return foldWhere(n);
  if (k == OpKind::OnnxMod)
    return foldMod(n, a);
  if (k == OpKind::OnnxNot)
    return foldNot(n);
  if (k == OpKind::OnnxRange)
    return foldRange(n);
  if (k == OpKind::OnnxScatterND)
    return foldScatterND(n, a);
  return nullptr;
}

} // namespace

// ---------------------------------------------------------------------------
// Shared helpers.
// ---------------------------------------------------------------------------

bool sliceGeometry(const Node& node, int64_t opset,
                   const std::vector<int64_t>& dims,
                   std::vector<int64_t>& begin, std::vector<int64_t>& step,
                   std::vector<int64_t>& extent) {
  const Node* n = &node;
  OpAttrs a(node, opset);
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset < 10) {
    starts = a.getInts("starts");
    ends = a.getInts("ends");
    axes = a.getInts("axes");
  } else {
    for (size_t i = 1; i < n->inputs.size(); ++i)
      if (!n->inputs[i]->isConstant() && !n->inputs[i]->name.empty())
        return false;
    auto input = [&](size_t i) {
      return i < n->inputs.size() && n->inputs[i]->isConstant()
                 ? n->inputs[i]->constant->toInts()
                 : std::vector<int64_t>{};
    };
    starts = input(1);
    ends = input(2);
    axes = input(3);
    steps = input(4);
  }
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return false;
  begin.assign(dims.size(), 0);
  step.assign(dims.size(), 1);
  extent = dims;
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t ax = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (ax < 0 || ax >= rank || seen[size_t(ax)] || steps[i] == 0)
      return false;
    seen[size_t(ax)] = true;
    const int64_t d = dims[size_t(ax)], s = steps[i];
    if (d < 0)
      return false;
    auto clampIndex = [&](int64_t v) {
      v = v < 0 ? v + d : v;
      return s > 0 ? std::clamp<int64_t>(v, 0, d)
                   : std::clamp<int64_t>(v, -1, d - 1);
    };
    int64_t b = clampIndex(starts[i]), e = clampIndex(ends[i]);
    int64_t len = s > 0 ? (e - b + s - 1) / s : (b - e + (-s) - 1) / (-s);
    begin[size_t(ax)] = b;
    step[size_t(ax)] = s;
    extent[size_t(ax)] = std::max<int64_t>(len, 0);
  }
  return true;
}

/// Computes pads (explicit or auto_pad) and output size of \p axis and
/// whether HPVM's symmetric pad padBegin computes the same outputs: the
/// output count is the same, windows start at o*stride - padBegin in both,
/// and every extra position either side reads is padding in both.
std::string resolveAxis(Axis& a, const std::string& autoPad, bool ceilMode,
                        const char* axisName) {
  if (autoPad == "VALID") {
    a.padBegin = a.padEnd = 0;
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    int64_t out = (a.in + a.stride - 1) / a.stride;
    int64_t total =
        std::max<int64_t>((out - 1) * a.stride + a.kernel - a.in, 0);
    a.padBegin = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
    a.padEnd = total - a.padBegin;
  }
  int64_t span = a.in + a.padBegin + a.padEnd - a.kernel;
  if (span < 0)
    return std::string("the window (") + std::to_string(a.kernel) +
           ") is larger than the padded input " + axisName + " (" +
           std::to_string(a.in + a.padBegin + a.padEnd) + ")";
  a.out = span / a.stride + 1;
  if (ceilMode) {
    a.out = (span + a.stride - 1) / a.stride + 1;
    // A last window that would start in the end padding is dropped (ONNX,
    // PyTorch).
    if ((a.out - 1) * a.stride >= a.in + a.padBegin)
      --a.out;
  }
  int64_t reach = (a.out - 1) * a.stride + a.kernel - a.in - a.padBegin;
  a.padEndUsed = std::max<int64_t>(reach, 0);
  a.overhang = reach > a.padEnd;
  a.pad = a.padBegin;
  int64_t symmetric = a.in + 2 * a.padBegin - a.kernel;
  a.symmetric =
      (a.padBegin == a.padEnd && !a.overhang) ||
      (symmetric >= 0 && symmetric / a.stride + 1 == a.out && !a.overhang);
  return "";
}

/// Reads kernel/stride/pad attributes of a Conv or pool over the spatial
/// dims of \p x into \p h and \p w.
std::string windowGeometry(OpAttrs& attrs, const std::vector<int64_t>& x,
                           int64_t kh, int64_t kw, bool ceilMode, Axis& h,
                           Axis& w) {
  std::vector<int64_t> strides = attrs.getInts("strides");
  std::vector<int64_t> pads = attrs.getInts("pads");
  std::string autoPad = attrs.getString("auto_pad");
  if (strides.size() != 2 || pads.size() != 4)
    return "strides " + formatInts(strides) + " / pads " + formatInts(pads) +
           " do not describe a 2-D window";
  h = Axis{x[2], kh, strides[0], pads[0], pads[2], 0, 0};
  w = Axis{x[3], kw, strides[1], pads[1], pads[3], 0, 0};
  std::string reason = resolveAxis(h, autoPad, ceilMode, "height");
  if (reason.empty())
    reason = resolveAxis(w, autoPad, ceilMode, "width");
  return reason;
}

std::vector<int64_t> form4d(const std::vector<int64_t>& shape) {
  if (shape.size() == 4)
    return shape;
  if (shape.size() == 2)
    return {shape[0], shape[1], 1, 1};
  return {};
}

std::string describeProducer(const Value* v) {
  if (v->producer == nullptr)
    return v->isConstant() ? "a constant" : "the graph input";
  const Origin& o = v->producer->origins.front();
  return "node '" + escapeName(o.name) + "' (" + escapeName(o.opType) + ")";
}

double shortestFloat(float f) {
  char buf[32];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, static_cast<double>(f));
    if (std::strtof(buf, nullptr) == f)
      return std::strtod(buf, nullptr);
  }
  return static_cast<double>(f);
}

std::vector<int64_t> reshapeTarget(const Node& r, int64_t opset) {
  const std::vector<int64_t>& in = r.inputs[0]->shape;
  OpAttrs attrs(r, opset);
  if (r.kind == OpKind::OnnxFlatten) {
    int64_t rank = static_cast<int64_t>(in.size());
    int64_t axis = attrs.getInt("axis");
    axis = axis < 0 ? axis + rank : axis;
    if (in.empty() || axis < 0 || axis > rank)
      return {};
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < rank; ++i) {
      int64_t d = in[static_cast<size_t>(i)];
      if (d < 0 && !(i == 0 && axis == 1))
        return {};
      (i < axis ? outer : inner) *= d;
    }
    return {outer, inner};
  }
  std::vector<int64_t> target;
  if (r.inputs.size() > 1) {
    if (!r.inputs[1]->isConstant())
      return {};
    target = r.inputs[1]->constant->toInts();
  } else {
    target = attrs.getInts("shape");
  }
  if (target.empty())
    return {};
  return resolveReshape(in, target);
}

std::string reshapeAliasBlocker(const Node& r, int64_t opset) {
  const Value* in = r.inputs[0];
  std::vector<int64_t> out = reshapeTarget(r, opset);
  std::string what = r.kind == OpKind::OnnxFlatten ? "flattening" : "reshaping";
  if (out.empty())
    return "the target shape is not known when compiling (dynamic shapes "
           "are not supported)";
  if (in->shape.empty())
    return "the input shape is not known when compiling (dynamic shapes "
           "are not supported)";
  std::vector<int64_t> in4 = form4d(in->shape), out4 = form4d(out);
  if (!in4.empty() && in4 == out4)
    return "";
  const std::vector<int64_t>& s = in->shape;
  if (s.size() == 4 && out.size() == 2 && out[0] == s[0] && s[1] >= 0 &&
      out[1] == s[1] * s[2] * s[3]) {
    for (const Node* user : r.output->users)
      if ((user->kind != OpKind::OnnxGemm &&
           user->kind != OpKind::OnnxMatMul) ||
          user->inputs[0] != r.output)
        return what + " " + formatShape(s) + " to " + formatShape(out) +
               " is only supported right before Gemm or MatMul (it feeds " +
               describeProducer(user->output) + ")";
    return "";
  }
  return what + " " + formatShape(s) + " to " + formatShape(out) +
         " is not supported (only flattening (N, C, H, W) to (N, C*H*W) "
         "before a dense layer)";
}

bool constantPads(const Node& pad, int64_t opset, std::vector<int64_t>& pads) {
  // Attribute (opset < 11, "paddings" in opset 1) or constant input 1.
  if (pad.inputs.size() > 1) {
    if (!pad.inputs[1]->isConstant())
      return false;
    pads = pad.inputs[1]->constant->toInts();
  } else {
    OpAttrs attrs(pad, opset);
    pads =
        attrs.has("pads") ? attrs.getInts("pads") : attrs.getInts("paddings");
  }
  return true;
}

std::string padGeometry(const Node& pad, int64_t opset,
                        std::vector<int64_t>& pads, double& value,
                        bool channelLast) {
  if (!constantPads(pad, opset, pads))
    return "the pads are computed at run time (only constant pads are "
           "supported)";
  OpAttrs attrs(pad, opset);
  value = attrs.getFloat("value");
  if (pad.inputs.size() > 2 && !pad.inputs[2]->name.empty()) {
    const Value* v = pad.inputs[2];
    if (!v->isConstant() || v->constant->numElements() != 1)
      return "the padding value is not a constant scalar";
    value = v->constant->asDouble(0);
  }
  const Value* in = pad.inputs[0];
  if (in->shape.size() != 4 || pads.size() != 8)
    return "only padding of 4-D (N, C, H, W) tensors is supported (input "
           "has shape " +
           formatShape(in->shape) + ")";
  for (int64_t p : pads)
    if (p < 0)
      return "negative pads " + formatInts(pads) +
             " (cropping) are not supported";
  const size_t channel = channelLast ? 3 : 1;
  if (pads[0] || pads[channel] || pads[4] || pads[4 + channel])
    return "pads " + formatInts(pads) +
           " pad the batch or channel dimension, which is not supported";
  return "";
}

std::string padFoldBlocker(const Node& pad, int64_t opset) {
  std::vector<int64_t> pads;
  double value = 0;
  if (std::string why = padGeometry(pad, opset, pads, value); !why.empty())
    return why;
  const Value* in = pad.inputs[0];
  bool minusInf = std::isinf(value) && value < 0;
  if (value != 0.0 && !minusInf)
    return "padding value " + std::to_string(value) +
           " is not supported (only 0)";
  if (pad.output->users.size() != 1)
    return "the padded tensor feeds " +
           std::to_string(pad.output->users.size()) +
           " nodes; Pad is only folded into a single Conv or pool";
  const Node& user = *pad.output->users.front();
  bool isPool =
      user.kind == OpKind::OnnxMaxPool || user.kind == OpKind::OnnxAveragePool;
  if ((user.kind != OpKind::OnnxConv && !isPool) ||
      user.inputs[0] != pad.output)
    return "Pad is only folded into the Conv, MaxPool or AveragePool it "
           "feeds (it feeds " +
           describeProducer(user.output) + ")";
  OpAttrs userAttrs(user, opset);
  std::string autoPad = userAttrs.getString("auto_pad");
  if (autoPad != "NOTSET" && autoPad != "VALID")
    return "Pad feeds " + describeProducer(user.output) + " with auto_pad " +
           autoPad + ", which cannot be combined";
  std::vector<int64_t> own = userAttrs.getInts("pads");
  bool ownPads =
      std::any_of(own.begin(), own.end(), [](int64_t p) { return p != 0; }) &&
      autoPad == "NOTSET";
  // Zero padding is what Conv pads with, and what AveragePool averages in
  // with count_include_pad=1. -inf padding is what MaxPool assumes.
  if (user.kind == OpKind::OnnxConv)
    return minusInf ? "padding with -inf before a Conv is not supported" : "";
  if (user.kind == OpKind::OnnxAveragePool) {
    if (minusInf)
      return "padding with -inf before AveragePool is not supported";
    if (ownPads && userAttrs.getInt("count_include_pad") == 0)
      return "Pad feeds AveragePool with its own pads and "
             "count_include_pad=0, which cannot be combined";
    return "";
  }
  if (minusInf)
    return "";
  // MaxPool after zero padding: max(window with zeros) equals max over the
  // real elements exactly when those are all >= 0 (the input comes from a
  // Relu, or a Clip with min >= 0) and every window holds at least one real
  // element (each side's total pad is smaller than the window).
  const Node* producer = in->producer;
  bool nonNegative =
      producer != nullptr && (producer->kind == OpKind::OnnxRelu ||
                              producer->kind == OpKind::OnnxClip);
  if (producer != nullptr && producer->kind == OpKind::OnnxClip) {
    OpAttrs clip(*producer, opset);
    double lo = clip.getFloat("min");
    if (producer->inputs.size() > 1) {
      const Value* v = producer->inputs[1];
      lo = v->isConstant() && v->constant->numElements() == 1
               ? v->constant->asDouble(0)
               : -1.0;
    }
    nonNegative = lo >= 0.0;
  }
  if (!nonNegative)
    return "zero padding before MaxPool changes the result unless its input "
           "is non-negative (produced by Relu)";
  std::vector<int64_t> kernel = userAttrs.getInts("kernel_shape");
  if (kernel.size() != 2)
    return "MaxPool has no 2-D kernel_shape";
  if (own.size() != 4)
    own.assign(4, 0);
  if (autoPad == "VALID")
    own.assign(4, 0);
  if (pads[2] + own[0] >= kernel[0] || pads[6] + own[2] >= kernel[0] ||
      pads[3] + own[1] >= kernel[1] || pads[7] + own[3] >= kernel[1])
    return "zero padding before MaxPool is only folded when every window "
           "overlaps the image (pads smaller than the window)";
  return "";
}

// ---------------------------------------------------------------------------
// Passes.
// ---------------------------------------------------------------------------

void eliminateDeadNodes(Graph& g) {
  std::unordered_set<const Node*> live;
  std::vector<const Node*> work;
  if (g.output->producer != nullptr)
    work.push_back(g.output->producer);
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    if (!live.insert(n).second)
      continue;
    for (const Value* in : n->inputs)
      if (in->producer != nullptr)
        work.push_back(in->producer);
  }
  std::vector<Node*> nodes = nodeList(g);
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it)
    if (!live.count(*it))
      g.eraseNode(*it);
  g.pruneValues();
}

namespace {

/// The output shape of ONNX-level node \p n from its inputs' shapes, for
/// the operators that compute on activations; {} if unknown. ONNX's shape
/// inference leaves these unknown where shapes were computed at run time
/// (ShuffleNet's channel split: Slice bounds from Shape arithmetic) until
/// folding makes them constants.
std::vector<int64_t> inferredShape(Node* n, int64_t opset) {
  if (n->inputs.empty())
    return {};
  const std::vector<int64_t>& x = n->inputs[0]->shape;
  for (const Value* v : n->inputs)
    if (!v->isConstant() && v->shape.empty() && !v->name.empty())
      return {};
  OpAttrs a(*n, opset);
  const OpKind k = n->kind;
  if (k == OpKind::OnnxRelu || k == OpKind::OnnxSigmoid ||
      k == OpKind::OnnxTanh || k == OpKind::OnnxClip ||
      k == OpKind::OnnxSoftmax || k == OpKind::OnnxBatchNormalization ||
      k == OpKind::OnnxHardSigmoid || k == OpKind::OnnxHardSwish ||
      k == OpKind::OnnxLeakyRelu || k == OpKind::OnnxSqrt ||
      k == OpKind::OnnxErf || k == OpKind::OnnxDropout ||
      k == OpKind::OnnxIdentity)
    return x;
  if (k == OpKind::OnnxTranspose) {
    std::vector<int64_t> perm = a.getInts("perm"), out;
    if (perm.empty())
      for (size_t i = x.size(); i-- > 0;)
        perm.push_back(int64_t(i));
    if (perm.size() != x.size())
      return {};
    for (int64_t p : perm) {
      if (p < 0 || p >= int64_t(x.size()))
        return {};
      out.push_back(x[size_t(p)]);
    }
    return out;
  }
  if (k == OpKind::OnnxMatMul && n->inputs.size() == 2) {
    // NumPy's matmul: the last two axes multiply, the others broadcast.
    std::vector<int64_t> l = x, r = n->inputs[1]->isConstant()
                                        ? n->inputs[1]->constant->dims
                                        : n->inputs[1]->shape;
    if (l.size() < 2 || r.size() < 2 || l.back() != r[r.size() - 2])
      return {};
    const int64_t rows = l[l.size() - 2], cols = r.back();
    l.resize(l.size() - 2);
    r.resize(r.size() - 2);
    std::vector<int64_t> out;
    if (!broadcastDims(l, r, out))
      return {};
    out.push_back(rows);
    out.push_back(cols);
    return out;
  }
  if (k == OpKind::OnnxGemm && n->inputs.size() >= 2 && x.size() == 2) {
    const std::vector<int64_t>& w = n->inputs[1]->isConstant()
                                        ? n->inputs[1]->constant->dims
                                        : n->inputs[1]->shape;
    if (w.size() != 2)
      return {};
    return {x[a.getInt("transA") != 0 ? 1 : 0],
            w[a.getInt("transB") != 0 ? 0 : 1]};
  }
  if (k == OpKind::OnnxReduceMean) {
    std::vector<int64_t> axes;
    if (!axesOf(n, a, axes))
      return {};
    const int64_t rank = int64_t(x.size());
    std::vector<bool> reduced(x.size(), axes.empty());
    for (int64_t axis : axes) {
      axis = axis < 0 ? axis + rank : axis;
      if (axis < 0 || axis >= rank)
        return {};
      reduced[size_t(axis)] = true;
    }
    const bool keep = a.getInt("keepdims") != 0;
    std::vector<int64_t> out;
    for (size_t i = 0; i < x.size(); ++i)
      if (!reduced[i] || keep)
        out.push_back(reduced[i] ? 1 : x[i]);
    return out;
  }
  std::vector<int64_t> pads;
  if (k == OpKind::OnnxPad && constantPads(*n, opset, pads)) {
    // The begin of every axis, then the end of every one.
    if (pads.size() != 2 * x.size())
      return {};
    std::vector<int64_t> out = x;
    for (size_t i = 0; i < x.size(); ++i) {
      out[i] += pads[i] + pads[i + x.size()];
      if (out[i] < 0)
        return {};
    }
    return out;
  }
  if (k == OpKind::OnnxGather && n->inputs[1]->isConstant()) {
    // The indices' dims replace the gathered axis.
    const int64_t rank = int64_t(x.size());
    int64_t axis = a.getInt("axis");
    axis = axis < 0 ? axis + rank : axis;
    if (axis < 0 || axis >= rank)
      return {};
    const std::vector<int64_t>& idx = n->inputs[1]->constant->dims;
    std::vector<int64_t> out(x.begin(), x.begin() + axis);
    out.insert(out.end(), idx.begin(), idx.end());
    out.insert(out.end(), x.begin() + axis + 1, x.end());
    return out;
  }
  if (k == OpKind::OnnxAdd || k == OpKind::OnnxSub || k == OpKind::OnnxMul ||
      k == OpKind::OnnxDiv || k == OpKind::OnnxPow) {
    if (n->inputs.size() != 2)
      return {};
    std::vector<int64_t> y = n->inputs[1]->isConstant()
                                 ? n->inputs[1]->constant->dims
                                 : n->inputs[1]->shape;
    std::vector<int64_t> a0 =
        n->inputs[0]->isConstant() ? n->inputs[0]->constant->dims : x;
    std::vector<int64_t> out;
    return broadcastDims(a0, y, out) ? out : std::vector<int64_t>{};
  }
  if (k == OpKind::OnnxSlice) {
    std::vector<int64_t> begin, step, extent;
    if (!sliceGeometry(*n, opset, x, begin, step, extent))
      return {};
    return extent;
  }
  if (k == OpKind::OnnxConcat) {
    int64_t rank = static_cast<int64_t>(x.size());
    int64_t axis = a.getInt("axis");
    axis = axis < 0 ? axis + rank : axis;
    if (axis < 0 || axis >= rank)
      return {};
    std::vector<int64_t> out = x;
    out[size_t(axis)] = 0;
    for (const Value* v : n->inputs) {
      const std::vector<int64_t>& d =
          v->isConstant() ? v->constant->dims : v->shape;
      if (d.size() != x.size())
        return {};
      out[size_t(axis)] += d[size_t(axis)];
    }
    return out;
  }
  if (k == OpKind::OnnxConv || k == OpKind::OnnxMaxPool ||
      k == OpKind::OnnxAveragePool) {
    if (x.size() != 4)
      return {};
    std::vector<int64_t> kernel = a.getInts("kernel_shape");
    int64_t channels = x[1];
    if (k == OpKind::OnnxConv) {
      if (n->inputs.size() < 2 || !n->inputs[1]->isConstant())
        return {};
      const std::vector<int64_t>& w = n->inputs[1]->constant->dims;
      if (w.size() != 4)
        return {};
      channels = w[0];
      if (kernel.empty())
        kernel = {w[2], w[3]};
    }
    Axis h, w;
    const bool ceil = k != OpKind::OnnxConv && a.getInt("ceil_mode") != 0;
    if (kernel.size() != 2 ||
        !windowGeometry(a, x, kernel[0], kernel[1], ceil, h, w).empty())
      return {};
    return {x[0], channels, h.out, w.out};
  }
  if (k == OpKind::OnnxGlobalAveragePool && x.size() == 4)
    return {x[0], x[1], 1, 1};
  return {};
}

} // namespace

void foldConstants(Graph& g) {
  for (Node* n : nodeList(g)) {
    if (auto data = evaluate(n, g.source.opset)) {
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

namespace {

/// A Pad of constant pads, all 0 (Swin pads its windows by 0 when they
/// tile the image already).
bool isIdentityPad(const Node& n, int64_t opset) {
  std::vector<int64_t> pads;
  return n.kind == OpKind::OnnxPad && constantPads(n, opset, pads) &&
         std::all_of(pads.begin(), pads.end(),
                     [](int64_t p) { return p == 0; });
}

/// A Slice that keeps every element of its (statically shaped) input.
bool isIdentitySlice(const Node& n, int64_t opset) {
  const Value* x = n.inputs[0];
  std::vector<int64_t> begin, step, extent;
  if (n.kind != OpKind::OnnxSlice || x->isConstant() || x->shape.empty() ||
      !sliceGeometry(n, opset, x->shape, begin, step, extent))
    return false;
  for (size_t d = 0; d < x->shape.size(); ++d)
    if (begin[d] != 0 || step[d] != 1 || extent[d] != x->shape[d])
      return false;
  return true;
}

} // namespace

void removeIdentities(Graph& g) {
  for (Node* n : nodeList(g)) {
    if (n->kind == OpKind::OnnxDropout && n->inputs.size() > 2) {
      // opset 12+: training_mode must be a constant false, or the ratio a
      // constant 0 (F.dropout(x, p=0.0) keeps training=True: Swin's).
      const Value* mode = n->inputs[2];
      const Value* ratio = n->inputs[1];
      const bool inference = mode->isConstant() &&
                             mode->constant->numElements() == 1 &&
                             mode->constant->asInt(0) == 0;
      const bool none = ratio->isConstant() &&
                        ratio->constant->numElements() == 1 &&
                        ratio->constant->asDouble(0) == 0.0;
      if (!inference && !none)
        continue;
    }
    if (n->kind == OpKind::OnnxIdentity || n->kind == OpKind::OnnxDropout ||
        isIdentityPad(*n, g.source.opset) ||
        isIdentitySlice(*n, g.source.opset)) {
      g.replaceAllUses(n->output, n->inputs[0]);
      g.eraseNode(n);
    }
  }
  g.pruneValues();
}

void foldPads(Graph& g) {
  for (Node* pad : nodeList(g)) {
    if (pad->kind != OpKind::OnnxPad ||
        !padFoldBlocker(*pad, g.source.opset).empty())
      continue;
    OpAttrs attrs(*pad, g.source.opset);
    std::vector<int64_t> pads;
    if (pad->inputs.size() > 1)
      pads = pad->inputs[1]->constant->toInts();
    else
      pads =
          attrs.has("pads") ? attrs.getInts("pads") : attrs.getInts("paddings");
    Node* user = pad->output->users.front();
    OpAttrs userAttrs(*user, g.source.opset);
    std::vector<int64_t> own = userAttrs.getInts("pads");
    if (own.size() != 4 || userAttrs.getString("auto_pad") == "VALID")
      own.assign(4, 0);
    // ONNX pads: [top, left, bottom, right] for the consumer, and
    // [n, c, top, left, n, c, bottom, right] for Pad.
    own[0] += pads[2];
    own[1] += pads[3];
    own[2] += pads[6];
    own[3] += pads[7];
    user->attrs["pads"] = own;
    user->attrs["auto_pad"] = std::string("NOTSET");
    if (user->kind == OpKind::OnnxAveragePool)
      user->attrs["count_include_pad"] = int64_t{1};
    Value* in = pad->inputs[0];
    user->inputs[0] = in;
    in->users.push_back(user);
    pad->output->users.clear();
    user->origins.push_back(pad->origins.front());
    g.eraseNode(pad);
  }
  g.pruneValues();
}

void aliasReshapes(Graph& g) {
  for (Node* n : nodeList(g)) {
    if (n->kind != OpKind::OnnxFlatten && n->kind != OpKind::OnnxReshape)
      continue;
    if (n->inputs[0]->isConstant() ||
        !reshapeAliasBlocker(*n, g.source.opset).empty())
      continue;
    g.replaceAllUses(n->output, n->inputs[0]);
    g.eraseNode(n);
  }
  g.pruneValues();
}

namespace {

/// The only reader of \p v, or null.
Node* soleUser(const Value* v) {
  return v->users.size() == 1 ? v->users[0] : nullptr;
}

/// The value of scalar constant \p v, or NaN.
double scalarValue(const Value* v) {
  if (!v->isConstant() || v->constant->numElements() != 1)
    return std::nan("");
  return v->constant->asDouble(0);
}

/// The input of binary node \p n other than \p v (null if \p n does not
/// read \p v or reads it twice).
Value* otherInput(const Node* n, const Value* v) {
  if (n->inputs.size() != 2 || n->inputs[0] == n->inputs[1])
    return nullptr;
  if (n->inputs[0] == v)
    return n->inputs[1];
  return n->inputs[1] == v ? n->inputs[0] : nullptr;
}

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

/// Replaces the chain ending in \p last by a new node \p kind reading
/// \p inputs, placed where \p last was; erases \p chain (last first).
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
        t->output == g.output || r1->output == g.output)
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
    if (chain.back()->output == g.output && chain.back() != tail &&
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
    Node* div = erf->inputs[0]->producer;
    if (!div || soleUser(div->output) != erf)
      continue;
    // x / sqrt(2), or x * (1 / sqrt(2)).
    Value* x = div->inputs[0];
    double c = div->inputs.size() == 2 ? scalarValue(div->inputs[1]) : 0;
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

namespace {

/// The permutation of Transpose \p n.
std::vector<int64_t> permOf(const Node* n, int64_t opset) {
  return OpAttrs(*n, opset).getInts("perm");
}

/// \p n is a Transpose by \p perm reading \p v.
bool isTranspose(const Node* n, const Value* v, std::vector<int64_t> perm,
                 int64_t opset) {
  return n && n->kind == OpKind::OnnxTranspose && n->inputs[0] == v &&
         permOf(n, opset) == perm;
}

/// \p v is a float constant of \p n elements, the last dim \p last.
bool isConstantOf(const Value* v, int64_t n, int64_t last) {
  return v && v->isConstant() && v->constant->dtype == DataType::Float &&
         v->constant->numElements() == n && !v->constant->dims.empty() &&
         v->constant->dims.back() == last;
}

/// A 1 x 1 Conv filter K x C x 1 x 1 from matrix \p w (C x K, or K x C
/// when \p transposed).
Value* filterOf(Graph& g, const Value* w, bool transposed) {
  const TensorData& t = *w->constant;
  std::vector<float> src = t.toFloats(), f(src.size());
  const int64_t rows = t.dims[0], cols = t.dims[1];
  const int64_t K = transposed ? rows : cols, C = transposed ? cols : rows;
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < C; ++c)
      f[size_t(k * C + c)] =
          transposed ? src[size_t(k * C + c)] : src[size_t(c * K + k)];
  Value* filter =
      g.addConstant(w->name, floatTensor(f, {K, C, 1, 1}), w->initializerIndex);
  filter->shape = {K, C, 1, 1};
  return filter;
}

/// Appends \p n to \p nodes if it is a \p k node whose output is not the
/// graph's; false otherwise (the matchers' step).
bool takeInto(const Graph& g, std::vector<Node*>& nodes, Node* n, OpKind k) {
  if (!n || n->kind != k || n->output == g.output)
    return false;
  nodes.push_back(n);
  return true;
}

/// Attention's second half as torch.onnx writes it: Softmax of \p scores
/// over the last axis (\p lastAxis counted from the front, or -1), then
/// MatMul by \p values (read by nothing else); appends both to \p nodes.
Node* matchSoftmaxMix(const Graph& g, Value* scores, int64_t lastAxis,
                      Value* values, std::vector<Node*>& nodes) {
  Node* softmax = soleUser(scores);
  if (!takeInto(g, nodes, softmax, OpKind::OnnxSoftmax))
    return nullptr;
  const int64_t axis = OpAttrs(*softmax, g.source.opset).getInt("axis");
  if (axis != -1 && axis != lastAxis)
    return nullptr;
  Node* mix = soleUser(softmax->output);
  if (!takeInto(g, nodes, mix, OpKind::OnnxMatMul) ||
      mix->inputs[0] != softmax->output || mix->inputs[1] != values ||
      soleUser(values) != mix)
    return nullptr;
  return mix;
}

/// The ONNX origins of \p nodes[from, to).
std::vector<Origin> originsOf(const std::vector<Node*>& nodes, size_t from,
                              size_t to) {
  std::vector<Origin> o;
  for (size_t i = from; i < to; ++i)
    o.insert(o.end(), nodes[i]->origins.begin(), nodes[i]->origins.end());
  return o;
}

/// A 1 x 1 Conv of \p x by \p filter plus \p bias into \p y, at \p pos.
void addPointwiseConv(Graph& g, Value* x, Value* filter, Value* bias, Value* y,
                      std::vector<Origin> origins, int pos) {
  Node* conv = g.addNode(OpKind::OnnxConv, {x, filter, bias}, y,
                         std::move(origins), pos);
  conv->attrs["kernel_shape"] = std::vector<int64_t>{1, 1};
}

/// Erases matched \p nodes, users before producers.
void eraseMatched(Graph& g, std::vector<Node*> nodes) {
  std::sort(nodes.begin(), nodes.end(), [&](const Node* a, const Node* b) {
    return g.position(a) > g.position(b);
  });
  for (Node* d : nodes)
    g.eraseNode(d);
}

/// True if node \p u, reading channel-last value \p v, works per pixel on
/// the last axis: LayerNormalization over it, MatMul by a constant matrix
/// (a Linear layer), elementwise ops whose constants are scalars or hold
/// one value per channel of the last axis, activations (Erf included: the
/// pieces of a GELU not fused yet). Whether every non-constant operand
/// comes from the same region is for the caller to check.
bool worksPerPixel(const Node* u, const Value* v, int64_t opset) {
  const OpKind k = u->kind;
  if (k == OpKind::OnnxLayerNormalization) {
    OpAttrs a(*u, opset);
    const int64_t axis = a.getInt("axis");
    bool fits = u->inputs[0] == v &&
                (axis == -1 || axis + 1 == int64_t(v->shape.size()));
    for (size_t i = 1; i < u->inputs.size(); ++i)
      fits =
          fits && (u->inputs[i]->name.empty() ||
                   (u->inputs[i]->isConstant() &&
                    u->inputs[i]->constant->dtype == DataType::Float &&
                    u->inputs[i]->constant->numElements() == v->shape.back()));
    return fits;
  }
  if (k == OpKind::OnnxMatMul) {
    const Value* w = u->inputs[1];
    return u->inputs[0] == v && w->isConstant() &&
           w->constant->dims.size() == 2;
  }
  if (k == OpKind::OnnxAdd || k == OpKind::OnnxSub || k == OpKind::OnnxMul ||
      k == OpKind::OnnxDiv) {
    bool fits = u->inputs.size() == 2;
    for (const Value* in : u->inputs)
      fits = fits && (!in->isConstant() || in->constant->numElements() == 1 ||
                      in->constant->numElements() == in->constant->dims.back());
    return fits;
  }
  if (k == OpKind::Gelu || k == OpKind::OnnxRelu || k == OpKind::OnnxSigmoid ||
      k == OpKind::OnnxTanh || k == OpKind::OnnxHardSwish ||
      k == OpKind::OnnxClip || k == OpKind::OnnxErf) {
    bool fits = u->inputs[0] == v;
    for (size_t i = 1; i < u->inputs.size(); ++i)
      fits = fits && u->inputs[i]->isConstant();
    return fits;
  }
  return false;
}

/// Makes \p c input \p i of \p u (in place of what was there, if anything).
void relinkInput(Node* u, size_t i, Value* c) {
  if (Value* old = u->inputs[i]) {
    auto& users = old->users;
    users.erase(std::remove(users.begin(), users.end(), u), users.end());
  }
  u->inputs[i] = c;
  c->users.push_back(u);
}

/// Axis \p a (negative counts from the end) of N x H x W x C in
/// N x C x H x W.
int64_t channelFirstAxis(int64_t a) {
  static const int64_t map[] = {0, 2, 3, 1};
  return map[a < 0 ? a + 4 : a];
}

/// True if node \p u, reading channel-last value \p v, moves whole pixels
/// of it: a Slice of rows or columns (Swin's patch merging takes every
/// second one), a Concat along the channels, or a constant Pad of rows and
/// columns (Swin pads to whole windows).
bool movesPixels(const Node* u, const Value* v, int64_t opset) {
  if (v->shape.size() != 4 || u->output->shape.size() != 4)
    return false;
  if (u->kind == OpKind::OnnxConcat) {
    const int64_t axis = OpAttrs(*u, opset).getInt("axis");
    return axis == 3 || axis == -1;
  }
  if (u->kind == OpKind::OnnxPad) {
    std::vector<int64_t> pads;
    double value = 0;
    return u->inputs[0] == v &&
           padGeometry(*u, opset, pads, value, true).empty() &&
           OpAttrs(*u, opset).getString("mode") == "constant";
  }
  std::vector<int64_t> begin, step, extent;
  return u->kind == OpKind::OnnxSlice && u->inputs[0] == v &&
         sliceGeometry(*u, opset, v->shape, begin, step, extent) &&
         begin[0] == 0 && step[0] == 1 && extent[0] == v->shape[0] &&
         begin[3] == 0 && step[3] == 1 && extent[3] == v->shape[3] &&
         step[1] > 0 && step[2] > 0 && extent[1] > 0 && extent[2] > 0;
}

/// Rewrites node \p u of a channel-last region for channel-first data
/// (its output shape already is): a LayerNormalization over the last axis
/// becomes layer_norm, a MatMul by a constant K x N matrix a 1 x 1 Conv,
/// and constants over the last axis of elementwise ops C x 1 x 1. Adds the
/// nodes it replaces to \p erased.
void rewriteChannelFirst(Graph& g, Node* u, std::unordered_set<Node*>& erased) {
  const int64_t opset = g.source.opset;
  const OpKind k = u->kind;
  if (k == OpKind::OnnxLayerNormalization) {
    // Over the last axis channel-last is over the channels of each
    // pixel channel-first: HPVM's layer_norm (ONNX's axis 1 would
    // normalize C, H and W together).
    const int64_t ch = u->output->shape[1];
    std::vector<Value*> ins = {u->inputs[0]};
    for (size_t i = 1; i < 3; ++i) {
      std::shared_ptr<const TensorData> t =
          i < u->inputs.size() && !u->inputs[i]->name.empty()
              ? u->inputs[i]->constant
              : floatTensor(std::vector<float>(size_t(ch), i == 1 ? 1 : 0),
                            {ch});
      if (!t || t->numElements() != ch || t->dtype != DataType::Float) {
        ins.clear();
        break;
      }
      Value* c = g.addConstant(
          i < u->inputs.size()
              ? u->inputs[i]->name
              : u->output->name + (i == 1 ? ".scale" : ".bias"),
          withDims(*t, {1, ch, 1, 1}),
          i < u->inputs.size() ? u->inputs[i]->initializerIndex : -1);
      c->shape = {1, ch, 1, 1};
      ins.push_back(c);
    }
    HPVM_ASSERT(ins.size() == 3, "LayerNormalization scale/bias checked "
                                 "when the region was formed");
    const double eps = OpAttrs(*u, opset).getFloat("epsilon");
    erased.insert(u);
    Node* ln = replaceChain(g, OpKind::LayerNorm, std::move(ins), {u});
    ln->scalars = {Scalar::real(shortestFloat(float(eps)))};
  } else if (k == OpKind::OnnxMatMul) {
    // x W (W: K x N) per pixel is a 1 x 1 convolution by W^T.
    const TensorData& w = *u->inputs[1]->constant;
    const int64_t K = w.dims[0], N = w.dims[1];
    std::vector<float> src = w.toFloats(), t(src.size());
    for (int64_t i = 0; i < K; ++i)
      for (int64_t j = 0; j < N; ++j)
        t[size_t(j * K + i)] = src[size_t(i * N + j)];
    Value* filter =
        g.addConstant(u->inputs[1]->name, floatTensor(t, {N, K, 1, 1}),
                      u->inputs[1]->initializerIndex);
    filter->shape = {N, K, 1, 1};
    erased.insert(u);
    Node* conv = replaceChain(g, OpKind::OnnxConv, {u->inputs[0], filter}, {u});
    conv->attrs["kernel_shape"] = std::vector<int64_t>{1, 1};
  } else if (k == OpKind::OnnxSlice && opset < 10) {
    // Axes H, W, C (1, 2, 3) channel-last are 2, 3, 1 channel-first.
    OpAttrs a(*u, opset);
    std::vector<int64_t> axes = a.getInts("axes");
    if (axes.empty())
      for (size_t i = 0; i < a.getInts("starts").size(); ++i)
        axes.push_back(int64_t(i));
    for (int64_t& axis : axes)
      axis = channelFirstAxis(axis);
    u->attrs["axes"] = axes;
  } else if (k == OpKind::OnnxSlice) {
    // Opset 10+: starts, ends, axes and steps are inputs.
    std::vector<int64_t> axes;
    if (u->inputs.size() > 3 && !u->inputs[3]->name.empty()) {
      axes = u->inputs[3]->constant->toInts();
    } else {
      for (int64_t i = 0; i < u->inputs[1]->constant->numElements(); ++i)
        axes.push_back(i);
    }
    for (int64_t& a : axes)
      a = channelFirstAxis(a);
    Value* c = g.addConstant(u->output->name + ".axes",
                             intTensor(axes, {int64_t(axes.size())}), -1);
    c->shape = {int64_t(axes.size())};
    if (u->inputs.size() < 4)
      u->inputs.resize(4, nullptr);
    relinkInput(u, 3, c);
  } else if (k == OpKind::OnnxPad) {
    // N, H, W, C begins and ends become N, C, H, W ones.
    std::vector<int64_t> pads;
    double value = 0;
    padGeometry(*u, opset, pads, value, true);
    const std::vector<int64_t> first = {pads[0], pads[3], pads[1], pads[2],
                                        pads[4], pads[7], pads[5], pads[6]};
    if (u->inputs.size() > 1) {
      Value* c =
          g.addConstant(u->output->name + ".pads", intTensor(first, {8}), -1);
      c->shape = {8};
      relinkInput(u, 1, c);
    } else {
      u->attrs[OpAttrs(*u, opset).has("pads") ? "pads" : "paddings"] = first;
    }
  } else if (k == OpKind::OnnxConcat) {
    u->attrs["axis"] = channelFirstAxis(OpAttrs(*u, opset).getInt("axis"));
  } else {
    // Constants over the last axis become C x 1 x 1 (or stay scalars).
    for (size_t i = 0; i < u->inputs.size(); ++i) {
      const Value* in = u->inputs[i];
      if (!in->isConstant() || in->constant->numElements() == 1)
        continue;
      int64_t n = in->constant->numElements();
      Value* c = g.addConstant(in->name, withDims(*in->constant, {n, 1, 1}),
                               in->initializerIndex);
      c->shape = {n, 1, 1};
      relinkInput(u, i, c);
    }
  }
}

/// What a region walk makes of a user of a value inside the region.
struct RegionStep {
  enum Kind { Member, Exit, Block, Leave } kind;
  /// Block: nodes taken as a whole; the walk goes on from the last one's
  /// output (they are not members: the caller rewrites them itself).
  std::vector<Node*> block = {};
};

/// A region of activations in another layout: the nodes reachable from a
/// value before they leave it again.
struct Region {
  std::vector<Node*> members; ///< Rewritten node by node.
  std::vector<Node*> exits;   ///< Where the walk stopped, in order.
};

/// Walks every node reachable from \p start: step(u, v) classifies each
/// new user u of a value v of the region. Nothing when a step leaves, the
/// walk reaches the graph's output, a member reads a value from outside the
/// region that is not a constant (no mixing of layouts), or no exit is
/// found.
template <typename Step>
std::optional<Region> walkRegion(const Graph& g, Value* start, Step step) {
  Region r;
  std::unordered_set<const Node*> seen;
  std::unordered_set<const Value*> inside = {start};
  std::vector<Value*> work = {start};
  while (!work.empty()) {
    Value* v = work.back();
    work.pop_back();
    if (v == g.output)
      return std::nullopt;
    for (Node* u : v->users) {
      if (!seen.insert(u).second)
        continue;
      RegionStep s = step(u, v);
      switch (s.kind) {
      case RegionStep::Leave:
        return std::nullopt;
      case RegionStep::Exit:
        r.exits.push_back(u);
        break;
      case RegionStep::Member:
        r.members.push_back(u);
        inside.insert(u->output);
        work.push_back(u->output);
        break;
      case RegionStep::Block:
        seen.insert(s.block.begin(), s.block.end());
        inside.insert(s.block.back()->output);
        work.push_back(s.block.back()->output);
        break;
      }
    }
  }
  for (const Node* u : r.members)
    for (const Value* in : u->inputs)
      if (!inside.count(in) && !in->isConstant())
        return std::nullopt;
  if (r.exits.empty())
    return std::nullopt;
  return r;
}

/// torch.roll of channel-last \p v along \p axis (1 or 2) as torch.onnx
/// writes it: two Slices of v, [s, n) and [0, s), concatenated in that
/// order: y[i] = v[(i + s) mod n]. Appends the three nodes to \p nodes and
/// returns the Concat, its shift in \p shift; nullptr if it is not that.
Node* matchRoll(const Graph& g, Value* v, int64_t axis, int64_t& shift,
                std::vector<Node*>& nodes) {
  const int64_t opset = g.source.opset;
  if (v->users.size() != 2 || v->shape.size() != 4)
    return nullptr;
  Node* cat = soleUser(v->users[0]->output);
  if (!cat || cat->kind != OpKind::OnnxConcat || cat->inputs.size() != 2 ||
      cat->output == g.output ||
      channelFirstAxis(OpAttrs(*cat, opset).getInt("axis")) !=
          channelFirstAxis(axis))
    return nullptr;
  const int64_t n = v->shape[size_t(axis)];
  int64_t begins[2] = {};
  for (int i = 0; i < 2; ++i) {
    Node* slice = cat->inputs[size_t(i)]->producer;
    std::vector<int64_t> begin, step, extent;
    if (!slice || slice->kind != OpKind::OnnxSlice || slice->inputs[0] != v ||
        soleUser(slice->output) != cat ||
        !sliceGeometry(*slice, opset, v->shape, begin, step, extent))
      return nullptr;
    for (size_t d = 0; d < 4; ++d)
      if (step[d] != 1 ||
          (int64_t(d) != axis && (begin[d] != 0 || extent[d] != v->shape[d])))
        return nullptr;
    begins[i] = begin[size_t(axis)];
    if (begins[i] + extent[size_t(axis)] != (i == 0 ? n : begins[0]))
      return nullptr;
  }
  if (begins[1] != 0 || begins[0] <= 0 || begins[0] >= n)
    return nullptr;
  shift = begins[0];
  nodes.push_back(cat->inputs[0]->producer);
  nodes.push_back(cat->inputs[1]->producer);
  nodes.push_back(cat);
  return cat;
}

/// torchvision's (0.14) shifted_window_attention as torch.onnx writes it
/// for a channel-last N x H x W x C input x, the zero Pad and full Slices
/// gone (the windows tile the image): torch.roll by -shift (skipped when
/// the shift is 0), Reshape to N x H/wh x wh x W/ww x ww x C, Transpose,
/// Reshape to windows N*nW x T x C (T = wh*ww), MatMul by qkv.weight^T and
/// Add qkv.bias, Reshape to N*nW x T x 3 x heads x C/heads, Transpose to
/// 3 x N*nW x heads x T x C/heads, Gathers of the queries (times
/// (C/heads)^-0.5), keys (Transposed) and values, MatMul, Add of the
/// relative position bias (1 x heads x T x T), for shifted windows a
/// Reshape to N x nW x heads x T x T, Add of the mask (nW x 1 x T x T)
/// and Reshape back, Softmax over the last axis, MatMul by the values,
/// Transpose and Reshape to N*nW x T x C, the output projection (MatMul,
/// Add), the windows put back (Reshape, Transpose, Reshape), and
/// torch.roll by +shift.
struct WindowAttentionMatch {
  std::vector<Node*> nodes; ///< Every matched node; the last is the exit.
  int64_t N = 0, H = 0, W = 0, C = 0; ///< The input's dims (channel-last).
  int64_t windowH = 0, windowW = 0, heads = 0, shiftH = 0, shiftW = 0;
  Value *qkvWeight = nullptr, *qkvBias = nullptr; ///< C x 3C, 3C.
  Value *projWeight = nullptr, *projBias = nullptr;
  Value *bias = nullptr, *mask = nullptr; ///< mask: nullptr if unshifted.
  /// nodes[0, qkvEnd) make the queries, keys and values, nodes[projBegin,
  /// end) the output projection and what follows it.
  size_t qkvEnd = 0, projBegin = 0;
};

/// Matches the window attention reading channel-last \p x; false if the
/// nodes from there differ from what the exporter writes in any way.
bool matchWindowAttention(const Graph& g, Value* x, WindowAttentionMatch& m) {
  const int64_t opset = g.source.opset;
  if (x->shape.size() != 4 || x->isConstant())
    return false;
  const int64_t N = x->shape[0], H = x->shape[1], W = x->shape[2],
                C = x->shape[3];
  m = WindowAttentionMatch{};
  m.N = N;
  m.H = H;
  m.W = W;
  m.C = C;
  auto take = [&](Node* n, OpKind k) { return takeInto(g, m.nodes, n, k); };
  auto shaped = [](const Node* n, std::vector<int64_t> s) {
    return n->output->shape == s;
  };
  // Roll by -shift.
  Value* cur = x;
  if (Node* cat = matchRoll(g, cur, 1, m.shiftH, m.nodes))
    cur = cat->output;
  if (Node* cat = matchRoll(g, cur, 2, m.shiftW, m.nodes))
    cur = cat->output;
  // Into windows.
  Node* r0 = soleUser(cur);
  if (!take(r0, OpKind::OnnxReshape) || r0->output->shape.size() != 6)
    return false;
  m.windowH = r0->output->shape[2];
  m.windowW = r0->output->shape[4];
  const int64_t wh = m.windowH, ww = m.windowW, T = wh * ww;
  if (wh < 1 || ww < 1 || H % wh != 0 || W % ww != 0 ||
      !shaped(r0, {N, H / wh, wh, W / ww, ww, C}))
    return false;
  const int64_t nW = (H / wh) * (W / ww), B = N * nW;
  Node* t0 = soleUser(r0->output);
  if (!isTranspose(t0, r0->output, {0, 1, 3, 2, 4, 5}, opset) ||
      !take(t0, OpKind::OnnxTranspose))
    return false;
  Node* r1 = soleUser(t0->output);
  if (!take(r1, OpKind::OnnxReshape) || !shaped(r1, {B, T, C}))
    return false;
  // Queries, keys and values.
  Node* qkvMul = soleUser(r1->output);
  if (!take(qkvMul, OpKind::OnnxMatMul) || qkvMul->inputs[0] != r1->output ||
      !isConstantOf(qkvMul->inputs[1], C * 3 * C, 3 * C) ||
      qkvMul->inputs[1]->constant->dims.size() != 2)
    return false;
  m.qkvWeight = qkvMul->inputs[1];
  Node* qkvAdd = soleUser(qkvMul->output);
  if (!take(qkvAdd, OpKind::OnnxAdd))
    return false;
  m.qkvBias = otherInput(qkvAdd, qkvMul->output);
  if (!isConstantOf(m.qkvBias, 3 * C, 3 * C))
    return false;
  m.qkvEnd = m.nodes.size();
  Node* r2 = soleUser(qkvAdd->output);
  if (!take(r2, OpKind::OnnxReshape) || r2->output->shape.size() != 5)
    return false;
  m.heads = r2->output->shape[3];
  const int64_t heads = m.heads;
  if (heads < 1 || C % heads != 0 || !shaped(r2, {B, T, 3, heads, C / heads}))
    return false;
  Node* t1 = soleUser(r2->output);
  if (!isTranspose(t1, r2->output, {2, 0, 3, 1, 4}, opset) ||
      !take(t1, OpKind::OnnxTranspose) || t1->output->users.size() != 3)
    return false;
  Node* part[3] = {};
  for (Node* gather : t1->output->users) {
    if (!take(gather, OpKind::OnnxGather) || gather->inputs[0] != t1->output ||
        OpAttrs(*gather, opset).getInt("axis") != 0 ||
        !gather->inputs[1]->isConstant() ||
        gather->inputs[1]->constant->numElements() != 1 ||
        !gather->inputs[1]->constant->dims.empty())
      return false;
    const int64_t i = gather->inputs[1]->constant->asInt(0);
    if (i < 0 || i > 2 || part[i])
      return false;
    part[i] = gather;
  }
  // Scores: queries times (C/heads)^-0.5, times the keys transposed, plus
  // the bias (and the mask), softmax.
  Node* scale = soleUser(part[0]->output);
  if (!take(scale, OpKind::OnnxMul))
    return false;
  const double root = std::sqrt(double(C / heads));
  const double c = scalarValue(otherInput(scale, part[0]->output));
  if (!(std::abs(c * root - 1) <= 1e-6))
    return false;
  Node* kt = soleUser(part[1]->output);
  if (!isTranspose(kt, part[1]->output, {0, 1, 3, 2}, opset) ||
      !take(kt, OpKind::OnnxTranspose))
    return false;
  Node* scores = soleUser(scale->output);
  if (!take(scores, OpKind::OnnxMatMul) || scores->inputs[0] != scale->output ||
      scores->inputs[1] != kt->output || soleUser(kt->output) != scores)
    return false;
  Node* addBias = soleUser(scores->output);
  if (!take(addBias, OpKind::OnnxAdd))
    return false;
  m.bias = otherInput(addBias, scores->output);
  if (!isConstantOf(m.bias, heads * T * T, T) ||
      m.bias->constant->dims.size() < 3 ||
      m.bias->constant->dims[m.bias->constant->dims.size() - 3] != heads)
    return false;
  cur = addBias->output;
  Node* next = soleUser(cur);
  if (next && next->kind == OpKind::OnnxReshape &&
      shaped(next, {N, nW, heads, T, T})) {
    m.nodes.push_back(next);
    Node* addMask = soleUser(next->output);
    if (!take(addMask, OpKind::OnnxAdd))
      return false;
    m.mask = otherInput(addMask, next->output);
    // nW x 1 x T x T, with leading 1s.
    if (!isConstantOf(m.mask, nW * T * T, T))
      return false;
    const std::vector<int64_t>& md = m.mask->constant->dims;
    if (md.size() < 4 || md[md.size() - 3] != 1 || md[md.size() - 4] != nW)
      return false;
    Node* back = soleUser(addMask->output);
    if (!take(back, OpKind::OnnxReshape) || !shaped(back, {B, heads, T, T}))
      return false;
    cur = back->output;
  }
  Node* mix = matchSoftmaxMix(g, cur, 3, part[2]->output, m.nodes);
  if (!mix)
    return false;
  // Heads joined, the output projection, the windows put back.
  Node* t2 = soleUser(mix->output);
  if (!isTranspose(t2, mix->output, {0, 2, 1, 3}, opset) ||
      !take(t2, OpKind::OnnxTranspose))
    return false;
  Node* r3 = soleUser(t2->output);
  if (!take(r3, OpKind::OnnxReshape) || !shaped(r3, {B, T, C}))
    return false;
  Node* projMul = soleUser(r3->output);
  m.projBegin = m.nodes.size();
  if (!take(projMul, OpKind::OnnxMatMul) || projMul->inputs[0] != r3->output ||
      !isConstantOf(projMul->inputs[1], C * C, C) ||
      projMul->inputs[1]->constant->dims.size() != 2)
    return false;
  m.projWeight = projMul->inputs[1];
  Node* projAdd = soleUser(projMul->output);
  if (!take(projAdd, OpKind::OnnxAdd))
    return false;
  m.projBias = otherInput(projAdd, projMul->output);
  if (!isConstantOf(m.projBias, C, C))
    return false;
  Node* r4 = soleUser(projAdd->output);
  if (!take(r4, OpKind::OnnxReshape) ||
      !shaped(r4, {N, H / wh, W / ww, wh, ww, C}))
    return false;
  Node* t3 = soleUser(r4->output);
  if (!isTranspose(t3, r4->output, {0, 1, 3, 2, 4, 5}, opset) ||
      !take(t3, OpKind::OnnxTranspose))
    return false;
  Node* r5 = soleUser(t3->output);
  if (!take(r5, OpKind::OnnxReshape) || !shaped(r5, {N, H, W, C}))
    return false;
  // Roll back by +shift.
  cur = r5->output;
  int64_t back = 0;
  if (m.shiftH) {
    Node* cat = matchRoll(g, cur, 1, back, m.nodes);
    if (!cat || back != H - m.shiftH)
      return false;
    cur = cat->output;
  }
  if (m.shiftW) {
    Node* cat = matchRoll(g, cur, 2, back, m.nodes);
    if (!cat || back != W - m.shiftW)
      return false;
  }
  // A shift without a mask would mix the wrapped-around pixels.
  return (m.shiftH == 0 && m.shiftW == 0) || m.mask != nullptr;
}

/// Replaces matched window attention \p m (its input already
/// channel-first, N x C x H x W) by a 1 x 1 Conv to queries, keys and
/// values, window_attention, and a 1 x 1 Conv for the output projection.
void replaceWindowAttention(Graph& g, const WindowAttentionMatch& m) {
  Node* last = m.nodes.back();
  const int64_t N = m.N, C = m.C, H = m.H, W = m.W;
  // The input as it is now (the region's rewrite may have replaced it):
  // what the first matched node reads.
  Value* x = m.nodes.front()->inputs[0];
  const int64_t T = m.windowH * m.windowW;
  const int pos = g.position(last);
  Value* qkv =
      g.addValue(m.qkvWeight->name + ".qkv", DataType::Float, {N, 3 * C, H, W});
  addPointwiseConv(g, x, filterOf(g, m.qkvWeight, false), m.qkvBias, qkv,
                   originsOf(m.nodes, 0, m.qkvEnd), pos);
  // Scores of a window are T x T, query-major in ONNX; window_attention
  // reads bias and mask key-major.
  auto keyMajor = [T](const TensorData& t, std::vector<int64_t> dims) {
    std::vector<float> src = t.toFloats(), dst(src.size());
    for (size_t b = 0; b < src.size(); b += size_t(T * T))
      for (int64_t q = 0; q < T; ++q)
        for (int64_t k = 0; k < T; ++k)
          dst[b + size_t(k * T + q)] = src[b + size_t(q * T + k)];
    return floatTensor(dst, std::move(dims));
  };
  Value* bias = g.addConstant(m.bias->name,
                              keyMajor(*m.bias->constant, {1, m.heads, T, T}),
                              m.bias->initializerIndex);
  bias->shape = {1, m.heads, T, T};
  const int64_t masks = m.mask ? m.mask->constant->numElements() / (T * T) : 1;
  Value* mask =
      g.addConstant(m.mask ? m.mask->name : last->output->name + ".mask",
                    m.mask ? keyMajor(*m.mask->constant, {1, masks, T, T})
                           : floatTensor(std::vector<float>(size_t(T * T), 0.f),
                                         {1, 1, T, T}),
                    m.mask ? m.mask->initializerIndex : -1);
  mask->shape = {1, masks, T, T};
  Value* mixed = g.addValue(last->output->name + ".attention", DataType::Float,
                            {N, C, H, W});
  Node* attn =
      g.addNode(OpKind::WindowAttention, {qkv, bias, mask}, mixed,
                originsOf(m.nodes, m.qkvEnd, m.projBegin), g.position(last));
  attn->scalars = {Scalar::integer(m.windowH), Scalar::integer(m.windowW),
                   Scalar::integer(m.heads), Scalar::integer(m.shiftH),
                   Scalar::integer(m.shiftW)};
  Value* y = g.addValue(last->output->name, DataType::Float, {N, C, H, W});
  addPointwiseConv(g, mixed, filterOf(g, m.projWeight, false), m.projBias, y,
                   originsOf(m.nodes, m.projBegin, m.nodes.size()),
                   g.position(last));
  g.replaceAllUses(last->output, y);
  eraseMatched(g, m.nodes);
}

} // namespace

void makeChannelFirst(Graph& g) {
  const int64_t opset = g.source.opset;
  auto permOf = [&](const Node* n) {
    return OpAttrs(*n, opset).getInts("perm");
  };
  const std::vector<int64_t> toLast = {0, 2, 3, 1}, toFirst = {0, 3, 1, 2};
  std::unordered_set<Node*> erased;
  for (Node* enter : nodeList(g)) {
    if (erased.count(enter) || enter->kind != OpKind::OnnxTranspose ||
        enter->inputs[0]->shape.size() != 4 || enter->inputs[0]->isConstant() ||
        permOf(enter) != toLast || enter->output == g.output)
      continue;
    // The region: every node reachable from the channel-last value before
    // a Transpose back; each must work per pixel on the last axis.
    // Swin's window attentions are taken whole.
    std::vector<WindowAttentionMatch> windows;
    std::optional<Region> region =
        walkRegion(g, enter->output, [&](Node* u, Value* v) {
          if (u->kind == OpKind::OnnxTranspose && permOf(u) == toFirst)
            return RegionStep{RegionStep::Exit};
          WindowAttentionMatch m;
          if ((u->kind == OpKind::OnnxSlice ||
               u->kind == OpKind::OnnxReshape) &&
              matchWindowAttention(g, v, m)) {
            windows.push_back(m);
            return RegionStep{RegionStep::Block, m.nodes};
          }
          return RegionStep{
              (worksPerPixel(u, v, opset) || movesPixels(u, v, opset)) &&
                      u->output->shape.size() == 4
                  ? RegionStep::Member
                  : RegionStep::Leave};
        });
    if (!region)
      continue;
    // Rewrite: shapes N x H x W x C become N x C x H x W.
    for (Node* u : region->members) {
      const std::vector<int64_t> s = u->output->shape;
      u->output->shape = {s[0], s[3], s[1], s[2]};
      rewriteChannelFirst(g, u, erased);
    }
    for (const WindowAttentionMatch& m : windows) {
      for (Node* n : m.nodes)
        erased.insert(n);
      replaceWindowAttention(g, m);
    }
    for (Node* x : region->exits) {
      g.replaceAllUses(x->output, x->inputs[0]);
      g.eraseNode(x);
      erased.insert(x);
    }
    g.replaceAllUses(enter->output, enter->inputs[0]);
    g.eraseNode(enter);
    erased.insert(enter);
  }
  g.pruneValues();
}

namespace {

/// nn.MultiheadAttention's self-attention as torch.onnx (PyTorch 1.13)
/// writes it for a B x T x D input x (batch_first, as torchvision's ViT
/// uses it): Transpose to T x B x D, MatMul by in_proj_weight^T (D x 3D),
/// Add in_proj_bias, Slices of the queries, keys and values, each
/// Reshaped to T x B*h x D/h and Transposed (the keys to B*h x D/h x T),
/// queries Div sqrt(D/h), MatMul, Softmax over the last axis, MatMul by
/// the values, Transpose and Reshape to T*B x D, Gemm by out_proj, Reshape
/// to T x B x D and Transpose back to B x T x D.
struct SelfAttention {
  std::vector<Node*> nodes; ///< Every matched node; the last is the exit.
  Value* x = nullptr;
  int64_t batch = 0, tokens = 0, dim = 0, heads = 0;
  Value *inWeight = nullptr, *inBias = nullptr; ///< D x 3D, 3D.
  Value *outWeight = nullptr, *outBias = nullptr;
  bool outTransposed = false; ///< Gemm transB: outWeight is D_out x D_in.
};

/// Matches the self-attention that starts with Transpose \p t0; false if
/// the nodes from there differ from what the exporter writes in any way.
bool matchSelfAttention(const Graph& g, Node* t0, SelfAttention& m) {
  const int64_t opset = g.source.opset;
  Value* x = t0->inputs[0];
  if (x->shape.size() != 3 || !isTranspose(t0, x, {1, 0, 2}, opset))
    return false;
  const int64_t B = x->shape[0], T = x->shape[1], D = x->shape[2];
  m = SelfAttention{};
  m.x = x;
  m.batch = B;
  m.tokens = T;
  m.dim = D;
  auto take = [&](Node* n, OpKind k) { return takeInto(g, m.nodes, n, k); };
  m.nodes.push_back(t0);
  // The input projection.
  Node* proj = soleUser(t0->output);
  if (!take(proj, OpKind::OnnxMatMul) || proj->inputs[0] != t0->output ||
      !isConstantOf(proj->inputs[1], D * 3 * D, 3 * D))
    return false;
  m.inWeight = proj->inputs[1];
  Node* bias = soleUser(proj->output);
  if (!take(bias, OpKind::OnnxAdd))
    return false;
  m.inBias = otherInput(bias, proj->output);
  const Value* qkv = bias->output;
  if (!isConstantOf(m.inBias, 3 * D, 3 * D) || qkv->users.size() != 3 ||
      qkv->shape != std::vector<int64_t>{T, B, 3 * D})
    return false;
  // Queries, keys and values: Slice, Reshape, Transpose each.
  Node* heads[3] = {};
  for (Node* slice : qkv->users) {
    std::vector<int64_t> begin, step, extent;
    if (!take(slice, OpKind::OnnxSlice) || slice->inputs[0] != qkv ||
        !sliceGeometry(*slice, opset, qkv->shape, begin, step, extent) ||
        begin[0] != 0 || begin[1] != 0 || begin[2] % D != 0 ||
        step != std::vector<int64_t>{1, 1, 1} ||
        extent != std::vector<int64_t>{T, B, D} || heads[begin[2] / D])
      return false;
    const size_t part = size_t(begin[2] / D);
    Node* reshape = soleUser(slice->output);
    if (!take(reshape, OpKind::OnnxReshape))
      return false;
    const std::vector<int64_t>& r = reshape->output->shape;
    if (r.size() != 3 || r[0] != T || r[1] % B != 0 || r[1] / B * r[2] != D ||
        (m.heads != 0 && r[1] / B != m.heads))
      return false;
    m.heads = r[1] / B;
    Node* t = soleUser(reshape->output);
    const std::vector<int64_t> perm = part == 1 ? std::vector<int64_t>{1, 2, 0}
                                                : std::vector<int64_t>{1, 0, 2};
    if (!isTranspose(t, reshape->output, perm, opset) ||
        !take(t, OpKind::OnnxTranspose))
      return false;
    heads[part] = t;
  }
  // Scores: the queries scaled by 1/sqrt(D/h) times the keys, softmax.
  const double root = std::sqrt(double(D / m.heads));
  Node* scale = soleUser(heads[0]->output);
  if (!scale ||
      (scale->kind != OpKind::OnnxDiv && scale->kind != OpKind::OnnxMul) ||
      scale->inputs.size() != 2 || scale->inputs[0] != heads[0]->output)
    return false;
  const double c = scalarValue(scale->inputs[1]);
  if (std::abs((scale->kind == OpKind::OnnxDiv ? c : 1 / c) - root) >
          1e-6 * root ||
      !take(scale, scale->kind))
    return false;
  Node* scores = soleUser(scale->output);
  if (!take(scores, OpKind::OnnxMatMul) || scores->inputs[0] != scale->output ||
      scores->inputs[1] != heads[1]->output ||
      soleUser(heads[1]->output) != scores)
    return false;
  Node* mix = matchSoftmaxMix(g, scores->output, 2, heads[2]->output, m.nodes);
  if (!mix)
    return false;
  // Heads joined again, the output projection, back to B x T x D.
  Node* t1 = soleUser(mix->output);
  if (!isTranspose(t1, mix->output, {1, 0, 2}, opset) ||
      !take(t1, OpKind::OnnxTranspose))
    return false;
  Node* r1 = soleUser(t1->output);
  if (!take(r1, OpKind::OnnxReshape) ||
      r1->output->shape != std::vector<int64_t>{T * B, D})
    return false;
  Node* out = soleUser(r1->output);
  if (!take(out, OpKind::OnnxGemm) || out->inputs.size() != 3 ||
      out->inputs[0] != r1->output)
    return false;
  OpAttrs a(*out, opset);
  m.outTransposed = a.getInt("transB") != 0;
  m.outWeight = out->inputs[1];
  m.outBias = out->inputs[2];
  if (a.getFloat("alpha") != 1.0 || a.getFloat("beta") != 1.0 ||
      a.getInt("transA") != 0 || !isConstantOf(m.outWeight, D * D, D) ||
      !isConstantOf(m.outBias, D, D))
    return false;
  Node* r2 = soleUser(out->output);
  if (!take(r2, OpKind::OnnxReshape) ||
      r2->output->shape != std::vector<int64_t>{T, B, D})
    return false;
  Node* t2 = soleUser(r2->output);
  return isTranspose(t2, r2->output, {1, 0, 2}, opset) &&
         take(t2, OpKind::OnnxTranspose);
}

/// Replaces matched self-attention \p m (its input already channel-first,
/// B x D x T x 1) by a 1 x 1 Conv to queries, keys and values, attention,
/// and a 1 x 1 Conv for the output projection.
void replaceSelfAttention(Graph& g, const SelfAttention& m) {
  Node* last = m.nodes.back();
  const int64_t B = m.batch, D = m.dim, T = m.tokens;
  const size_t n = m.nodes.size();
  Value* qkv =
      g.addValue(m.nodes[2]->output->name, DataType::Float, {B, 3 * D, T, 1});
  addPointwiseConv(g, m.x, filterOf(g, m.inWeight, false), m.inBias, qkv,
                   originsOf(m.nodes, 0, 3), g.position(last));
  Value* mixed =
      g.addValue(m.nodes[n - 6]->output->name, DataType::Float, {B, D, T, 1});
  Node* attn = g.addNode(OpKind::Attention, {qkv}, mixed,
                         originsOf(m.nodes, 3, n - 4), g.position(last));
  attn->scalars = {Scalar::integer(m.heads)};
  Value* y = g.addValue(last->output->name, DataType::Float, {B, D, T, 1});
  addPointwiseConv(g, mixed, filterOf(g, m.outWeight, m.outTransposed),
                   m.outBias, y, originsOf(m.nodes, n - 4, n),
                   g.position(last));
  g.replaceAllUses(last->output, y);
  eraseMatched(g, m.nodes);
}

} // namespace

void makeTokensChannelFirst(Graph& g) {
  const int64_t opset = g.source.opset;
  std::unordered_set<Node*> erased;
  for (Node* enter : nodeList(g)) {
    // The patch embedding: a B x D x H x W activation Reshaped to
    // B x D x H*W and Transposed to B x H*W x D, the class token (a
    // constant) concatenated before, the position embedding added.
    if (erased.count(enter) || enter->kind != OpKind::OnnxReshape)
      continue;
    Value* x = enter->inputs[0];
    const std::vector<int64_t>& xs = x->shape;
    if (x->isConstant() || xs.size() != 4 ||
        enter->output->shape !=
            std::vector<int64_t>{xs[0], xs[1], xs[2] * xs[3]})
      continue;
    const int64_t B = xs[0], D = xs[1], T = 1 + xs[2] * xs[3];
    Node* toLast = soleUser(enter->output);
    if (!isTranspose(toLast, enter->output, {0, 2, 1}, opset))
      continue;
    Node* cat = soleUser(toLast->output);
    if (!cat || cat->kind != OpKind::OnnxConcat || cat->inputs.size() != 2 ||
        cat->inputs[1] != toLast->output || !isConstantOf(cat->inputs[0], D, D))
      continue;
    const int64_t catAxis = OpAttrs(*cat, opset).getInt("axis");
    Node* pos = soleUser(cat->output);
    Value* posValue = pos && pos->kind == OpKind::OnnxAdd
                          ? otherInput(pos, cat->output)
                          : nullptr;
    if ((catAxis != 1 && catAxis != -2) || !isConstantOf(posValue, T * D, D) ||
        pos->output == g.output ||
        pos->output->shape != std::vector<int64_t>{B, T, D})
      continue;
    // The region: every node reachable from the tokens before they leave
    // as a Gather of one token; each must work per token on the features
    // (the last axis) or be a self-attention.
    std::vector<SelfAttention> attentions;
    std::optional<Region> region =
        walkRegion(g, pos->output, [&](Node* u, const Value* v) {
          if (u->kind == OpKind::OnnxTranspose) {
            SelfAttention m;
            if (!matchSelfAttention(g, u, m))
              return RegionStep{RegionStep::Leave};
            attentions.push_back(m);
            return RegionStep{RegionStep::Block, m.nodes};
          }
          if (u->kind == OpKind::OnnxGather) {
            // One token (the class token) to the head: B x D.
            const Value* idx = u->inputs[1];
            const bool one =
                u->inputs[0] == v && OpAttrs(*u, opset).getInt("axis") == 1 &&
                idx->isConstant() && idx->constant->dims.empty() &&
                idx->constant->asInt(0) >= -T && idx->constant->asInt(0) < T;
            return RegionStep{one ? RegionStep::Exit : RegionStep::Leave};
          }
          return RegionStep{worksPerPixel(u, v, opset) &&
                                    u->output->shape.size() == 3
                                ? RegionStep::Member
                                : RegionStep::Leave};
        });
    if (!region)
      continue;
    // Rewrite: the embedding becomes class_token, tokens B x T x D become
    // B x D x T x 1.
    const TensorData& pe = *posValue->constant;
    std::vector<float> src = pe.toFloats(), peT(src.size());
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < D; ++d)
        peT[size_t(d * T + t)] = src[size_t(t * D + d)];
    Value* clsC = g.addConstant(
        cat->inputs[0]->name, withDims(*cat->inputs[0]->constant, {1, D, 1, 1}),
        cat->inputs[0]->initializerIndex);
    clsC->shape = {1, D, 1, 1};
    Value* posC = g.addConstant(posValue->name, floatTensor(peT, {1, D, T, 1}),
                                posValue->initializerIndex);
    posC->shape = {1, D, T, 1};
    const std::vector<Node*> embed = {enter, toLast, cat, pos};
    erased.insert(embed.begin(), embed.end());
    Node* tokens = replaceChain(g, OpKind::ClassToken, {x, clsC, posC}, embed);
    tokens->output->shape = {B, D, T, 1};
    for (const SelfAttention& m : attentions) {
      erased.insert(m.nodes.begin(), m.nodes.end());
      replaceSelfAttention(g, m);
    }
    for (Node* u : region->members) {
      const std::vector<int64_t> s = u->output->shape;
      u->output->shape = {s[0], s[2], s[1], 1};
      rewriteChannelFirst(g, u, erased);
    }
    for (Node* gather : region->exits) {
      int64_t index = gather->inputs[1]->constant->asInt(0);
      erased.insert(gather);
      Node* pick =
          replaceChain(g, OpKind::SelectToken, {gather->inputs[0]}, {gather});
      pick->scalars = {Scalar::integer(index < 0 ? index + T : index)};
      pick->output->shape = {B, D, 1, 1};
    }
  }
  g.pruneValues();
}

void lowerToHpvm(Graph& g, const PipelineOptions& opts) {
  auto run = [&](const char* name, void (*pass)(Graph&)) {
    pass(g);
    verify(g);
    if (opts.afterPass)
      opts.afterPass(name, g);
  };
  verify(g);
  run("eliminate-dead-nodes", eliminateDeadNodes);
  run("fold-constants", foldConstants);
  run("remove-identities", removeIdentities);
  run("eliminate-dead-nodes", eliminateDeadNodes);
  run("fold-pads", foldPads);
  run("alias-reshapes", aliasReshapes);
  run("fuse-channel-shuffles", fuseChannelShuffles);
  run("fuse-layer-norms", fuseLayerNorms);
  run("make-tokens-channel-first", makeTokensChannelFirst);
  run("fuse-gelus", fuseGelus);
  run("make-channel-first", makeChannelFirst);
  if (g.output == g.input || g.output->isConstant())
    throw UserError(g.source.path + ": the output '" +
                    escapeName(g.output->name) + "' is " +
                    (g.output == g.input ? "the input itself" : "a constant") +
                    "; the model computes nothing");
  run("lower", lowerNodes);
  run("eliminate-dead-nodes", eliminateDeadNodes);
  checkOperandRanges(g, opts.maxBytes);
}

} // namespace hpvm::fe
