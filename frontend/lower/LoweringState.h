// LoweringState.h - what every lower<Lowering> function shares: the state
// of one lowering run, the operand checks, and the declarations of the
// functions themselves (one per HPVM_ONNX row of Ops.def).
#ifndef TORCH2HPVM_FRONTEND_LOWER_LOWERINGSTATE_H
#define TORCH2HPVM_FRONTEND_LOWER_LOWERINGSTATE_H

#include "ir/Graph.h"
#include "ir/Printer.h"
#include "passes/OpGeometry.h"
#include "support/Diagnostics.h"

#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace hpvm::fe {

/// Why a lowering cannot stand, thrown by Lowering::finish() and reported
/// as the node's reason.
struct LoweringRefusal : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// State of one lowering run.
struct Lowering {
  explicit Lowering(Graph& graph) : g(graph) {}

  Graph& g;
  /// Refused nodes whose only problem is an operand another refused node
  /// computes: counted after the other refusals, not listed.
  std::set<const Node*> downstream;
  /// Constants already converted to a 4-D float32 form, by (data, shape).
  std::map<std::pair<const TensorData*, std::vector<int64_t>>, Value*> cache;

  /// Position of \p n in the node list.
  int position(const Node* n) const { return g.position(n); }

  /// \p c as a float32 constant of HPVM shape \p shape (same element
  /// count), sharing its bytes when it already is float32.
  Value* constantAs(Value* c, std::vector<int64_t> shape) {
    auto key = std::make_pair(c->constant.get(), shape);
    if (auto it = cache.find(key); it != cache.end())
      return it->second;
    Value* out;
    if (c->constant->dtype == DataType::Float) {
      out = g.addValue(c->name, DataType::Float, shape);
      out->constant = c->constant;
      out->initializerIndex = c->initializerIndex;
    } else {
      out = addFloats(c->name, c->constant->toFloats(), shape,
                      c->initializerIndex);
    }
    cache[key] = out;
    return out;
  }

  /// A new float32 constant holding \p values with shape \p shape.
  Value* addFloats(const std::string& name, const std::vector<float>& values,
                   std::vector<int64_t> shape, int initializerIndex) {
    auto t = std::make_shared<TensorData>();
    t->dtype = DataType::Float;
    t->dims = shape;
    const auto* bytes = reinterpret_cast<const uint8_t*>(values.data());
    t->bytes.assign(bytes, bytes + values.size() * sizeof(float));
    Value* v = g.addConstant(name, std::move(t), initializerIndex);
    v->shape = std::move(shape);
    return v;
  }

  /// Appends HPVM node \p kind at \p pos (advancing it), with output shape
  /// \p shape named \p name.
  Value* emit(OpKind kind, std::vector<Value*> inputs,
              std::vector<Scalar> scalars, std::vector<int64_t> shape,
              const std::string& name, const Node& from, int& pos) {
    Value* out = g.addValue(name, DataType::Float, std::move(shape));
    Node* n = g.addNode(kind, std::move(inputs), out, from.origins, pos++);
    n->scalars = std::move(scalars);
    return out;
  }

  /// Replaces ONNX node \p n by the HPVM value \p result; throws
  /// LoweringRefusal where the model declares other dims for it.
  void finish(Node* n, Value* result) {
    // ONNX's dims, where it knows them (Flatten of a value it could not
    // infer: ?x1000), must be the lowering's. (A symbolic batch is read as
    // 1, so an output declared with batch 1 fits.)
    const std::vector<int64_t>& onnx = form4d(n->output->shape);
    bool same = onnx.size() == result->shape.size();
    for (size_t i = 0; same && i < onnx.size(); ++i)
      same = onnx[i] < 0 || onnx[i] == result->shape[i];
    if (!onnx.empty() && !same)
      throw LoweringRefusal("the model declares its output '" +
                            escapeName(n->output->name) + "' as " +
                            formatShape(n->output->shape) +
                            " but it computes " + formatShape(result->shape));
    g.replaceAllUses(n->output, result);
    g.eraseNode(n);
  }
};

/// Checks that \p v is a 4-D activation (or, with \p allow2d, an (N, K)
/// one), every dimension but the batch known; returns the reason if not.
std::string needActivation(const Value* v, const char* role,
                           bool allow2d = false);

/// Why \p v, operand \p role, is not a constant; "" if it is.
std::string needConstant(const Value* v, const char* role);

/// Why \p a cannot be computed with HPVM's symmetric padding.
std::string asymmetricPads(const Axis& a, const char* axisName);

// One lowering function lower<Lowering> per HPVM_ONNX row of Ops.def (its
// Lowering column), dispatched to by lowerNode(): a row without its
// function does not build. Each lowers ONNX-level node n into HPVM ops and
// returns why it cannot, or "".
#define HPVM_ONNX(OnnxName, MinOpset, Stem, Produces, IgnoredAttrs)            \
  std::string lower##Stem(Lowering& L, Node* n);
#include "hpvm_rt/Ops.def"

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_LOWER_LOWERINGSTATE_H
