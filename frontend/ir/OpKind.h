// OpKind.h - the IR's node kinds and their names, expanded from Ops.def.
#ifndef TORCH2HPVM_FRONTEND_IR_OPKIND_H
#define TORCH2HPVM_FRONTEND_IR_OPKIND_H

#include <cstdint>
#include <string_view>

namespace hpvm::fe {

/// Every node kind, in Ops.def's row order: the HPVM tensor ops (one per
/// HPVM_OP row) and the ONNX-level kinds (prefix Onnx, one per HPVM_ONNX row,
/// named after its Lowering column), which exist only until lowering.
enum class OpKind : uint8_t {
#define HPVM_ONNX(OnnxName, MinOpset, Lowering, Produces, IgnoredAttrs)        \
  Onnx##Lowering,
#define HPVM_OP(Kind, ...) Kind,
#include "hpvm_rt/Ops.def"
};

/// True for kinds that survive lowering (HPVM tensor ops).
bool isHpvmOp(OpKind kind);
/// "OnnxConv" / "Conv": the enumerator's name, for IR dumps.
std::string_view opKindName(OpKind kind);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_IR_OPKIND_H
