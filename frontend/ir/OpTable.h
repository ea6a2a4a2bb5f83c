// OpTable.h - the rows of Ops.def as the IR reads them: the HPVM ops and
// knobs of the table both programs share (hpvm_rt/OpTable.h), the accepted
// ONNX operators, and exact FLOP counts.
#ifndef TORCH2HPVM_FRONTEND_IR_OPTABLE_H
#define TORCH2HPVM_FRONTEND_IR_OPTABLE_H

#include "ir/Graph.h"

#include "hpvm_rt/OpTable.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace hpvm::fe {

/// Which knob rows apply to an op (Ops.def "Applies"/"Knobs" column).
using hpvm::rt::kMaxTensorArgs;
using hpvm::rt::KnobApplies;

/// One HPVM_OP row: the runtime's row (hpvm_rt/OpTable.h, the one
/// expansion of Ops.def both programs read).
using HpvmOpDesc = hpvm::rt::OpInfo;
/// One HPVM_KNOB row, the same way.
using KnobDesc = hpvm::rt::KnobInfo;

/// The HPVM op of HPVM kind \p kind (OpKind lists the HPVM_OP rows first,
/// in table order, so the two enumerations agree on them).
constexpr hpvm::rt::HpvmOp hpvmOpOf(OpKind kind) {
  return static_cast<hpvm::rt::HpvmOp>(kind);
}
/// The IR kind of HPVM op \p op.
constexpr OpKind opKindOf(hpvm::rt::HpvmOp op) {
  return static_cast<OpKind>(op);
}

/// The descriptor of HPVM kind \p kind (asserts isHpvmOp(kind)).
const HpvmOpDesc& hpvmOpDesc(OpKind kind);
/// Every HPVM op, in table order.
constexpr hpvm::rt::TableRows<HpvmOpDesc> hpvmOps() {
  return hpvm::rt::allOps();
}

/// One HPVM_ONNX row.
struct OnnxOpDesc {
  const char* onnxName;     ///< ONNX op_type.
  int minOpset;             ///< Oldest default-domain opset accepted.
  OpKind kind;              ///< ONNX-level IR kind (Onnx<Lowering>).
  const char* produces;     ///< HPVM ops it becomes, for documentation.
  const char* ignoredAttrs; ///< Space-separated attributes that are ignored.
};

/// The row of ONNX op_type \p name, nullptr if unsupported.
const OnnxOpDesc* onnxOpByName(std::string_view name);
/// The row of ONNX-level kind \p kind, nullptr for HPVM kinds.
const OnnxOpDesc* onnxOpByKind(OpKind kind);
/// Every accepted ONNX operator, in table order.
const std::vector<OnnxOpDesc>& onnxOps();

/// Every knob, in table order.
constexpr hpvm::rt::TableRows<KnobDesc> knobTable() {
  return hpvm::rt::allKnobs();
}
/// Ids of the knobs applicable to HPVM kind \p kind, in table order.
std::vector<int> knobsFor(OpKind kind);

/// Exact FLOPs of HPVM node \p n for its shapes at batch 1:
/// outElems * (FlopsPerElem + FlopsPerReduce * R), R = C/groups*KH*KW (conv),
/// K (mul), KH*KW (pool), 0 otherwise.
int64_t opFlops(const Node& n);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_IR_OPTABLE_H
