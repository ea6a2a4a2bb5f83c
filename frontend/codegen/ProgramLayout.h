// ProgramLayout.h - what a generated program looks like, decided from the
// lowered IR once: identifiers, root parameters, weights, node wiring. The
// templates' render contexts, ops.json and the weight writer all read it.
#ifndef TORCH2HPVM_FRONTEND_CODEGEN_PROGRAMLAYOUT_H
#define TORCH2HPVM_FRONTEND_CODEGEN_PROGRAMLAYOUT_H

#include "ir/Graph.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace hpvm::fe {

/// A constant tensor passed to the root node and loaded from weights/.
struct WeightLayout {
  const Value* value = nullptr;
  std::string ident;             ///< C identifier (root parameter, field).
  std::string fileName;          ///< "<ident>.bin", relative to weights/.
  std::array<int64_t, 4> dims{}; ///< HPVM 4-D shape (readTrainedWeights).
  int rootPair = 0;              ///< Index of its (void*, size_t) root pair.
};

/// One operand of a node: a root parameter pair or an earlier node's output.
struct OperandLayout {
  const Value* value = nullptr;
  int rootPair = -1;     ///< Root pair index, or -1 when produced by a node.
  int producerNode = -1; ///< Index of the producing node, or -1.
};

/// One HPVM tensor op = one leaf node.
struct NodeLayout {
  const Node* node = nullptr;
  int id = 0;           ///< HPVM op id: position + 1 (__hpvm__node_id).
  std::string var;      ///< "var_<id-1>": the root's handle / result local.
  std::string func;     ///< "var_<id-1>_node": the leaf function.
  std::string jsonName; ///< "<jsonType>_<id-1>" (ops.json).
  std::vector<OperandLayout> operands;
  std::vector<std::string> scalars; ///< Scalar operands as C++ literals.
  std::string origin; ///< Escaped "ONNX node 'x' (Conv, #3)" text.
};

/// One graph output of the program.
struct OutputLayout {
  std::string name;          ///< ONNX's name, escaped for a C string.
  int node = -1;             ///< Index of the node computing it.
  std::vector<int64_t> dims; ///< Per image (batch left out), as declared.
  int64_t elems = 0;         ///< Values per image.
};

/// The whole program.
struct ProgramLayout {
  std::string inputIdent;            ///< Root pair 0: the input batch.
  std::vector<WeightLayout> weights; ///< Root pairs 1..n, first-use order.
  std::vector<NodeLayout> nodes;     ///< In HPVM op order.
  int64_t channels = 0, height = 0, width = 0; ///< Per-image input shape.
  /// Output values per image, all outputs (numClasses of ModelInfo).
  int64_t numClasses = 0;
  std::vector<OutputLayout> outputs; ///< In ONNX's order.
};

/// Lays out lowered graph \p g (only HPVM kinds, see lowerToHpvm()). Throws
/// UserError naming \p modelPath when the graph cannot become a program (no
/// nodes, an input that is not 4-D, a non-float constant).
ProgramLayout layoutProgram(const Graph& g, const std::string& modelPath);

/// A scalar operand as a C++ literal: integers in decimal, reals in the
/// shortest form that reads back exactly, always with a '.' or exponent.
std::string scalarLiteral(const Scalar& s);

/// "ONNX node 'Conv_0' (Conv, #0)" or "ONNX nodes 'a' (Pad, #1), 'b' (Conv,
/// #2)", escaped with escapeText().
std::string describeOrigins(const std::vector<Origin>& origins);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_CODEGEN_PROGRAMLAYOUT_H
