// SplitOutputs.cpp - see SplitOutputs.h.
#include "onnx/SplitOutputs.h"

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

} // namespace

void addSplitOutputs(Graph& g, const onnx::NodeProto& node,
                     const Origin& origin, const std::vector<Value*>& ins,
                     bool ok, int64_t axis, int64_t opset,
                     const std::unordered_map<std::string, TypeInfo>& types,
                     const std::unordered_set<std::string>& used,
                     std::unordered_map<std::string, Value*>& values) {
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
        if (begin < 0 || length < 0) {
          g.addNode(OpKind::OnnxSplit, ins, out, {origin})->attrs["axis"] =
              axis;
        } else if (opset < 10) {
          Node* n = g.addNode(OpKind::OnnxSlice, {ins[0]}, out, {origin});
          n->attrs["starts"] = std::vector<int64_t>{begin};
          n->attrs["ends"] = std::vector<int64_t>{begin + length};
          n->attrs["axes"] = std::vector<int64_t>{ax};
        } else {
          g.addNode(OpKind::OnnxSlice,
                    {ins[0], intConstant(g, begin),
                     intConstant(g, begin + length), intConstant(g, ax)},
                    out, {origin});
        }
      }
    }
    begin = begin < 0 || length < 0 ? -1 : begin + length;
  }
}

} // namespace hpvm::fe
