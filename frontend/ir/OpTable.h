// OpTable.h - the rows of Ops.def as descriptor tables: HPVM ops, accepted
// ONNX operators and approximation knobs, plus exact FLOP counts.
#ifndef TORCH2HPVM_FRONTEND_IR_OPTABLE_H
#define TORCH2HPVM_FRONTEND_IR_OPTABLE_H

#include "ir/Graph.h"

#include "hpvm_rt/OpFacts.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace hpvm::fe {

/// Which knob rows apply to an op (Ops.def "Applies"/"Knobs" column).
using hpvm::rt::kMaxTensorArgs;
using hpvm::rt::KnobApplies;

/// One HPVM_OP row.
struct HpvmOpDesc {
  OpKind kind;           ///< IR kind after lowering.
  const char* kindName;  ///< "Conv".
  const char* confName;  ///< Op token in configuration files ("conv").
  const char* jsonType;  ///< Op type in ops.json ("convolution").
  const char* intrinsic; ///< "__hpvm__tensor_convolution".
  const char* rtCall; ///< Direct runtime call format ("tensorAdd({0}, {1})").
  /// The row's facts shared with the runtime (operand counts, knobs, FLOP
  /// formula, fusion role, activation, in place).
  const hpvm::rt::OpFacts* facts;
};

/// The descriptor of HPVM kind \p kind (asserts isHpvmOp(kind)).
const HpvmOpDesc& hpvmOpDesc(OpKind kind);
/// Every HPVM op, in table order.
const std::vector<HpvmOpDesc>& hpvmOps();

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

/// One HPVM_KNOB row.
struct KnobDesc {
  int id;                ///< HPVM's knob id.
  const char* confName;  ///< Knob token in configuration files.
  const char* variant;   ///< "Exact", "PerfRow", "PerfCol" or "Samp".
  const char* precision; ///< "FP32", "FP16" or "BF16".
  double speedup;        ///< Predicted speedup (ops.json).
  int rate;              ///< Perforation/sampling rate (1 when exact).
  int offset;            ///< Perforation/sampling offset.
  KnobApplies applies;   ///< Ops the knob applies to.
};

/// Every knob, in table order.
const std::vector<KnobDesc>& knobTable();
/// Ids of the knobs applicable to HPVM kind \p kind, in table order.
std::vector<int> knobsFor(OpKind kind);

/// Exact FLOPs of HPVM node \p n for its shapes at batch 1:
/// outElems * (FlopsPerElem + FlopsPerReduce * R), R = C/groups*KH*KW (conv),
/// K (mul), KH*KW (pool), 0 otherwise.
int64_t opFlops(const Node& n);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_IR_OPTABLE_H
