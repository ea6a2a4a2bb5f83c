// SplitOutputs.cpp - see SplitOutputs.h.
#include "onnx/SplitOutputs.h"

#include "onnx/Attributes.h" // formatInts
#include "onnx/OpAttrs.h"

#include <cstring>
#include <memory>

namespace hpvm::fe {

namespace {

/// A one-element int64 constant holding \p v.
Value* intConstant(Graph& g, int64_t v) {
  auto t = std::make_shared<TensorData>();
  t->dtype = DataType::Int64;
  t->dims = {1};
  t->bytes.resize(sizeof v);
  std::memcpy(t->bytes.data(), &v, sizeof v);
  Value* c = g.addConstant("", std::move(t));
  c->shape = {1};
  return c;
}

/// Makes \p n (whose first input is the tensor split) the Slice of
/// [begin, begin + length) along \p axis, in the form of \p opset.
void makeSlice(Graph& g, Node* n, int64_t opset, int64_t begin, int64_t length,
               int64_t axis) {
  n->kind = OpKind::OnnxSlice;
  n->attrs.clear();
  if (opset < 10) {
    g.setInputs(n, {n->inputs[0]});
    n->attrs["starts"] = std::vector<int64_t>{begin};
    n->attrs["ends"] = std::vector<int64_t>{begin + length};
    n->attrs["axes"] = std::vector<int64_t>{axis};
    return;
  }
  g.setInputs(n, {n->inputs[0], intConstant(g, begin),
                  intConstant(g, begin + length), intConstant(g, axis)});
}

} // namespace

void addSplitOutputs(Graph& g, const onnx::NodeProto& node,
                     const Origin& origin, const std::vector<Value*>& ins,
                     bool ok, const std::map<std::string, AttrValue>& attrs,
                     int64_t opset,
                     const std::unordered_map<std::string, TypeInfo>& types,
                     const std::unordered_set<std::string>& used,
                     std::unordered_map<std::string, Value*>& values) {
  OpAttrs a(OpKind::OnnxSplit, attrs, opset);
  const int64_t axis = a.getInt("axis");
  // Where output k starts along the axis: the lengths before it summed (-1
  // once one is unknown).
  int64_t begin = 0;
  for (int k = 0; k < node.output_size(); ++k) {
    const std::string& name = node.output(k);
    TypeInfo t;
    if (auto it = types.find(name); !name.empty() && it != types.end())
      t = it->second;
    const int64_t rank = static_cast<int64_t>(t.shape.size());
    const int64_t ax = axis < 0 ? axis + rank : axis;
    const int64_t length =
        t.known && ax >= 0 && ax < rank ? t.shape[size_t(ax)] : -1;
    if (!name.empty()) {
      Value* out =
          g.addValue(name, t.dtype, t.known ? t.shape : std::vector<int64_t>{});
      values[name] = out;
      if (ok && used.count(name)) {
        Node* n = g.addNode(OpKind::OnnxSplit, ins, out, {origin});
        if (begin < 0 || length < 0) {
          n->attrs["axis"] = axis;
          if (opset < 13 && !a.getInts("split").empty())
            n->attrs["split"] = a.getInts("split");
          n->attrs[kOutputIndex] = int64_t{k};
          n->attrs[kSplitOutputs] = int64_t{node.output_size()};
        } else {
          makeSlice(g, n, opset, begin, length, ax);
        }
      }
    }
    begin = begin < 0 || length < 0 ? -1 : begin + length;
  }
}

std::string splitPlacement(const Node& n, int64_t opset, int64_t& begin,
                           int64_t& length, int64_t& axis) {
  OpAttrs a(n, opset);
  const Value* in = n.inputs[0];
  const std::vector<int64_t>& x =
      in->isConstant() ? in->constant->dims : in->shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  const int64_t count = a.getInt(kSplitOutputs), k = a.getInt(kOutputIndex);
  axis = a.getInt("axis");
  const std::string where =
      "its outputs' lengths along axis " + std::to_string(axis);
  if (rank == 0)
    return where + " are unknown: its input's shape is unknown";
  axis = axis < 0 ? axis + rank : axis;
  if (axis < 0 || axis >= rank || count < 1 || k < 0 || k >= count)
    return "axis " + std::to_string(a.getInt("axis")) +
           " is not an axis of its input, of rank " + std::to_string(rank);
  const int64_t dim = x[size_t(axis)];
  std::vector<int64_t> sizes = a.getInts("split");
  if (opset >= 13 && n.inputs.size() > 1) {
    if (!n.inputs[1]->isConstant())
      return where + " are unknown: its split input is computed at run "
                     "time, not a constant";
    sizes = n.inputs[1]->constant->toInts();
  }
  if (sizes.empty()) {
    if (dim < 0)
      return where + " are unknown: the input's dim there is unknown "
                     "(an even split of it)";
    if (dim % count != 0)
      return "its input's " + std::to_string(dim) + " along axis " +
             std::to_string(axis) + " cannot be split evenly into " +
             std::to_string(count) + " outputs";
    sizes.assign(size_t(count), dim / count);
  }
  if (static_cast<int64_t>(sizes.size()) != count)
    return "its split sizes " + formatInts(sizes) + " are " +
           std::to_string(sizes.size()) + ", for " + std::to_string(count) +
           " outputs";
  int64_t total = 0;
  begin = 0;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t s = sizes[size_t(i)];
    if (s < 0 || __builtin_add_overflow(total, s, &total))
      return "its split sizes " + formatInts(sizes) +
             " hold a negative size, or one past int64";
    if (i < k)
      begin += s;
  }
  if (dim >= 0 && total != dim)
    return "its split sizes " + formatInts(sizes) + " sum to " +
           std::to_string(total) + ", not its input's " + std::to_string(dim) +
           " along axis " + std::to_string(axis);
  length = sizes[size_t(k)];
  return "";
}

bool sliceOfSplit(Graph& g, Node* n, int64_t opset) {
  int64_t begin = 0, length = 0, axis = 0;
  if (!splitPlacement(*n, opset, begin, length, axis).empty())
    return false;
  makeSlice(g, n, opset, begin, length, axis);
  return true;
}

} // namespace hpvm::fe
