// OpKind.h - the IR's node kinds and their names, expanded from Ops.def.
#ifndef TORCH2HPVM_FRONTEND_IR_OPKIND_H
#define TORCH2HPVM_FRONTEND_IR_OPKIND_H

#include <cstdint>
#include <string_view>

namespace hpvm::fe {

/// Every node kind, in Ops.def's row order: the HPVM tensor ops (one per
/// HPVM_OP row) and the ONNX-level kinds (prefix Onnx, one per HPVM_ONNX row,
/// named after its Lowering column), which exist only until lowering; then
/// Refused.
enum class OpKind : uint8_t {
#define HPVM_ONNX(OnnxName, MinOpset, Lowering, Produces, IgnoredAttrs)        \
  Onnx##Lowering,
#define HPVM_OP(Kind, ...) Kind,
#include "hpvm_rt/Ops.def"
  /// A node the loader refused (an operator, opset or attribute we do not
  /// take; its reasons are in Graph::refusals). It stands in the graph so
  /// that lowering reports the other nodes' problems with it, in one
  /// refusal, and none that are only downstream of it. No pass rewrites it.
  Refused,
};

/// True for kinds that survive lowering (HPVM tensor ops).
bool isHpvmOp(OpKind kind);
/// "OnnxConv" / "Conv": the enumerator's name, for IR dumps.
std::string_view opKindName(OpKind kind);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_IR_OPKIND_H
