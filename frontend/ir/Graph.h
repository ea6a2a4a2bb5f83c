// Graph.h - the frontend IR: values, nodes and the owning graph.
//
// One node kind per operator (OpKind, expanded from Ops.def): the ONNX kinds
// (OnnxConv, OnnxGemm, ...) exist between loading and lowering; after
// lowering only the HPVM kinds (Conv, Add, MaxPool, ...) remain, each with its
// intrinsic operands in order. Nodes and values are owned by the Graph;
// everything else refers to them by pointer.
#ifndef TORCH2HPVM_FRONTEND_IR_GRAPH_H
#define TORCH2HPVM_FRONTEND_IR_GRAPH_H

#include "ir/OpKind.h"
#include "support/Origin.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace hpvm::fe {

/// Element types the frontend understands (ONNX TensorProto codes).
enum class DataType : int32_t {
  Undefined = 0,
  Float = 1,
  Uint8 = 2,
  Int8 = 3,
  Int32 = 6,
  Int64 = 7,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  BFloat16 = 16,
};

/// Bytes of one element of \p dtype; 0 for Undefined.
size_t elementSize(DataType dtype);

/// The product of \p dims[from..], or -1 when a dim is negative (symbolic)
/// or the product overflows int64: a model's declared dims are any int64,
/// and their product is only meaningful when it fits.
inline int64_t dimsProduct(const std::vector<int64_t>& dims, size_t from = 0) {
  int64_t product = 1;
  for (size_t i = from; i < dims.size(); ++i)
    if (dims[i] < 0 || __builtin_mul_overflow(product, dims[i], &product))
      return -1;
  return product;
}

/// Host data of a constant tensor, always little-endian, C order.
struct TensorData {
  DataType dtype = DataType::Float;
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;

  /// Number of elements (product of dims; 1 for a scalar).
  int64_t numElements() const;
  /// Reads element \p i converted to double / int64 (any numeric dtype).
  double asDouble(int64_t i) const;
  int64_t asInt(int64_t i) const;
  /// The data as float32 / int64 vectors (converting from any numeric dtype).
  std::vector<float> toFloats() const;
  std::vector<int64_t> toInts() const;
};

struct Node;

/// A tensor value: the graph input, a constant (initializer or folded), or a
/// node's output.
struct Value {
  /// ONNX tensor name; used in comments and diagnostics only, and always
  /// through the sanitizer/escaper before it reaches generated source.
  std::string name;
  DataType dtype = DataType::Float;
  /// Static shape; the batch dimension of the graph input is kept as in ONNX
  /// (usually 1 or symbolic, recorded as -1).
  std::vector<int64_t> shape;
  /// Set for constants (initializers, Constant nodes, folded shapes).
  std::shared_ptr<const TensorData> constant;
  /// Index of the ONNX initializer this constant came from, -1 otherwise.
  int initializerIndex = -1;
  /// Producing node, nullptr for the graph input and constants.
  Node* producer = nullptr;
  /// Nodes reading this value (kept up to date by Graph helpers).
  std::vector<Node*> users;

  bool isConstant() const { return constant != nullptr; }
};

/// An attribute value of an ONNX-level node.
using AttrValue =
    std::variant<int64_t, double, std::string, std::vector<int64_t>,
                 std::vector<double>, std::shared_ptr<const TensorData>>;

/// A scalar operand of an HPVM intrinsic, printed in the generated call.
struct Scalar {
  bool isInteger = true;
  int64_t i = 0;
  double d = 0.0;
  static Scalar integer(int64_t v) { return Scalar{true, v, 0.0}; }
  static Scalar real(double v) { return Scalar{false, 0, v}; }
};

/// One operation. ONNX-level kinds use `attrs`; HPVM kinds use `scalars`
/// (the intrinsic's non-tensor operands, in intrinsic order) and have exactly
/// TensorArgs inputs (Ops.def).
struct Node {
  OpKind kind;
  std::vector<Value*> inputs;
  Value* output = nullptr;
  std::map<std::string, AttrValue> attrs;
  std::vector<Scalar> scalars;
  /// ONNX node(s) this node was made from (a Conv's bias add names the Conv).
  std::vector<Origin> origins;
};

/// Facts about the source model, for banners, manifests and messages.
struct ModelSource {
  std::string path;     ///< As given on the command line.
  std::string sha256;   ///< Of the model file's bytes.
  std::string producer; ///< producer_name + " " + producer_version.
  int64_t opset = 0;    ///< Default-domain opset (after conversion).
  std::string graphName;
};

/// One graph output: its ONNX name, the value computing it, and the shape
/// ONNX declares for it (empty if none; -1 for a symbolic dim).
struct GraphOutput {
  std::string name;
  Value* value = nullptr;
  std::vector<int64_t> declared;
};

/// The owning graph. `nodes()` is kept in topological order (ONNX node order
/// for nodes that came from ONNX; new nodes are inserted next to their
/// origin), which is also HPVM op numbering order after lowering.
class Graph {
public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// Creates a value owned by the graph.
  Value* addValue(std::string name, DataType dtype, std::vector<int64_t> shape);
  /// Creates a constant value owned by the graph.
  Value* addConstant(std::string name, std::shared_ptr<const TensorData> data,
                     int initializerIndex = -1);
  /// Creates a node at position \p pos of the node list (end when -1),
  /// producing a new value \p output, and links users/producer.
  Node* addNode(OpKind kind, std::vector<Value*> inputs, Value* output,
                std::vector<Origin> origins, int pos = -1);
  /// Replaces every use of \p from by \p to (including the graph output).
  void replaceAllUses(Value* from, Value* to);
  /// Makes \p inputs the operands of \p node, relinking users.
  void setInputs(Node* node, std::vector<Value*> inputs);
  /// Makes \p v operand \p i of \p node (in place of what was there, if
  /// anything), relinking users.
  void setInput(Node* node, size_t i, Value* v);
  /// Removes \p node (its output must have no users left).
  void eraseNode(Node* node);
  /// The index of \p node in nodes() (asserts it is there).
  int position(const Node* node) const;
  /// Removes values that are neither used nor produced nor graph I/O.
  void pruneValues();

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }

  /// True if \p v is one of the graph outputs.
  bool isOutput(const Value* v) const;
  /// Makes \p v the single graph output, named after it.
  void setOutput(Value* v) { outputs = {GraphOutput{v->name, v, {}}}; }
  /// The first graph output's value.
  Value* output0() const { return outputs.front().value; }

  Value* input = nullptr; ///< The single graph input (image batch).
  /// The input's rank in the model: 4 (images), 3 (N x H x W, held as the
  /// image batch N x 1 x H x W from loading on), or 2 (feature vectors,
  /// held as N x K x 1 x 1 once lowered: an hpvm_rt extension).
  size_t inputRank = 4;
  /// The graph outputs, in ONNX's order (at least one).
  std::vector<GraphOutput> outputs;
  ModelSource source;
  /// Largest tensor a pass may make (a folded constant), in bytes: the
  /// loader's limit (--max-size).
  uint64_t maxTensorBytes = uint64_t(8) << 30;
  /// What the loader refused, per ONNX node in node order (its Refused
  /// nodes'; a dead one's too): lowering reports them with its own.
  std::vector<std::pair<Origin, std::string>> refusals;
  /// Token stages the passes could not keep channel-first: the ONNX index
  /// of each entry node (the Reshape or Squeeze making B x T x D tokens,
  /// and its Transpose) with why, which lowering tells in place of the
  /// entry's own refusal.
  std::map<int, std::string> tokenStages;

private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
};

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_IR_GRAPH_H
