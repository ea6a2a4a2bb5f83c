// OpKind.cpp - names and classification of the IR's node kinds.
#include "ir/OpKind.h"

namespace hpvm::fe {

namespace {

/// Enumerator names in enum order, expanded from the same rows as OpKind.
constexpr std::string_view KindNames[] = {
#define HPVM_ONNX(OnnxName, MinOpset, Lowering, Produces, IgnoredAttrs)        \
  "Onnx" #Lowering,
#define HPVM_OP(Kind, ...) #Kind,
#include "hpvm_rt/Ops.def"
};

/// Per kind, in enum order: true for HPVM ops (rows expand in Ops.def's
/// order, whichever row kind comes first).
constexpr bool IsHpvm[] = {
#define HPVM_ONNX(OnnxName, MinOpset, Lowering, Produces, IgnoredAttrs) false,
#define HPVM_OP(Kind, ...) true,
#include "hpvm_rt/Ops.def"
};

constexpr int NumKinds = sizeof(KindNames) / sizeof(KindNames[0]);

} // namespace

bool isHpvmOp(OpKind kind) {
  int index = static_cast<int>(kind);
  return index >= 0 && index < NumKinds && IsHpvm[index];
}

std::string_view opKindName(OpKind kind) {
  if (kind == OpKind::Refused)
    return "Refused";
  int index = static_cast<int>(kind);
  if (index < 0 || index >= NumKinds)
    return "<invalid OpKind>";
  return KindNames[index];
}

} // namespace hpvm::fe
