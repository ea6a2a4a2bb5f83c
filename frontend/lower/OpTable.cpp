// OpTable.cpp - Ops.def expanded once into descriptor tables, and FLOP counts.
#include "lower/OpTable.h"

#include "Diagnostics.h"

#include <string>

namespace hpvm::fe {

namespace {

constexpr KnobApplies KnobAll = KnobApplies::KnobAll;
constexpr KnobApplies KnobConv = KnobApplies::KnobConv;
constexpr KnobApplies KnobDense = KnobApplies::KnobDense;

/// True if a knob row with \p applies may be used on an op whose Knobs column
/// is \p op: KnobAll knobs fit every op, KnobDense knobs fit conv,
/// group_conv and mul, KnobConv knobs fit conv only.
bool knobFits(KnobApplies applies, KnobApplies op) {
  switch (applies) {
  case KnobApplies::KnobAll:
    return true;
  case KnobApplies::KnobDense:
    return op == KnobApplies::KnobConv || op == KnobApplies::KnobDense;
  case KnobApplies::KnobConv:
    return op == KnobApplies::KnobConv;
  }
  return false;
}

} // namespace

const std::vector<HpvmOpDesc>& hpvmOps() {
  static const std::vector<HpvmOpDesc> table = {
#define HPVM_OP(Kind, ConfName, JsonType, Intrinsic, RtCall, TensorArgs,       \
                ScalarArgs, Knobs, FlopsPerElem, FlopsPerReduce)               \
  {OpKind::Kind, #Kind,      ConfName, JsonType,     #Intrinsic,    RtCall,    \
   TensorArgs,   ScalarArgs, Knobs,    FlopsPerElem, FlopsPerReduce},
#include "hpvm_rt/Ops.def"
  };
  return table;
}

const HpvmOpDesc& hpvmOpDesc(OpKind kind) {
  for (const HpvmOpDesc& desc : hpvmOps())
    if (desc.kind == kind)
      return desc;
  HPVM_UNREACHABLE("hpvmOpDesc of non-HPVM kind " +
                   std::string(opKindName(kind)));
}

const std::vector<OnnxOpDesc>& onnxOps() {
  static const std::vector<OnnxOpDesc> table = {
#define HPVM_ONNX(OnnxName, MinOpset, Lowering, Produces, IgnoredAttrs)        \
  {OnnxName, MinOpset, OpKind::Onnx##Lowering, Produces, IgnoredAttrs},
#include "hpvm_rt/Ops.def"
  };
  return table;
}

const OnnxOpDesc* onnxOpByName(std::string_view name) {
  for (const OnnxOpDesc& desc : onnxOps())
    if (name == desc.onnxName)
      return &desc;
  return nullptr;
}

const OnnxOpDesc* onnxOpByKind(OpKind kind) {
  for (const OnnxOpDesc& desc : onnxOps())
    if (desc.kind == kind)
      return &desc;
  return nullptr;
}

const std::vector<KnobDesc>& knobTable() {
  static const std::vector<KnobDesc> table = {
#define HPVM_KNOB(Id, ConfName, Variant, Precision, Speedup, Rate, Offset,     \
                  Applies)                                                     \
  {Id, ConfName, #Variant, #Precision, Speedup, Rate, Offset, Applies},
#include "hpvm_rt/Ops.def"
  };
  return table;
}

std::vector<int> knobsFor(OpKind kind) {
  KnobApplies op = hpvmOpDesc(kind).knobs;
  std::vector<int> ids;
  for (const KnobDesc& knob : knobTable())
    if (knobFits(knob.applies, op))
      ids.push_back(knob.id);
  return ids;
}

int64_t opFlops(const Node& n) {
  const HpvmOpDesc& desc = hpvmOpDesc(n.kind);
  HPVM_ASSERT(n.output != nullptr && !n.output->shape.empty(),
              "opFlops of a node without an output shape");
  // Output elements at batch 1.
  int64_t outElems = 1;
  for (size_t i = 1; i < n.output->shape.size(); ++i)
    outElems *= n.output->shape[i];
  int64_t reduce = 0;
  switch (n.kind) {
  case OpKind::Conv:
  case OpKind::GroupConv: {
    // Filter K x C/groups x KH x KW: each output sums C/groups*KH*KW terms.
    const std::vector<int64_t>& w = n.inputs.at(1)->shape;
    HPVM_ASSERT(w.size() == 4, "convolution filter is not 4-D");
    reduce = w[1] * w[2] * w[3];
    break;
  }
  case OpKind::Mul: {
    // Weights 1 x 1 x K x N.
    const std::vector<int64_t>& w = n.inputs.at(1)->shape;
    HPVM_ASSERT(w.size() == 4, "mul weights are not 4-D");
    reduce = w[2];
    break;
  }
  case OpKind::MaxPool:
  case OpKind::AvgPool:
    HPVM_ASSERT(n.scalars.size() >= 2, "pool without window scalars");
    reduce = n.scalars[0].i * n.scalars[1].i;
    break;
  case OpKind::Add:
  case OpKind::BatchNorm:
  case OpKind::Relu:
  case OpKind::ClippedRelu:
  case OpKind::Tanh:
  case OpKind::Softmax:
    break;
  // ONNX-level kinds have no HPVM descriptor (hpvmOpDesc asserted).
  case OpKind::OnnxConv:
  case OpKind::OnnxGemm:
  case OpKind::OnnxMatMul:
  case OpKind::OnnxMaxPool:
  case OpKind::OnnxAveragePool:
  case OpKind::OnnxGlobalAveragePool:
  case OpKind::OnnxAdd:
  case OpKind::OnnxBatchNormalization:
  case OpKind::OnnxRelu:
  case OpKind::OnnxClip:
  case OpKind::OnnxTanh:
  case OpKind::OnnxSoftmax:
  case OpKind::OnnxFlatten:
  case OpKind::OnnxReshape:
  case OpKind::OnnxIdentity:
  case OpKind::OnnxDropout:
  case OpKind::OnnxPad:
  case OpKind::OnnxConstant:
  case OpKind::OnnxShape:
  case OpKind::OnnxGather:
  case OpKind::OnnxUnsqueeze:
  case OpKind::OnnxSqueeze:
  case OpKind::OnnxConcat:
  case OpKind::OnnxCast:
    HPVM_UNREACHABLE("opFlops of ONNX-level kind " +
                     std::string(opKindName(n.kind)));
  }
  double flops =
      static_cast<double>(outElems) *
      (desc.flopsPerElem + desc.flopsPerReduce * static_cast<double>(reduce));
  return static_cast<int64_t>(flops + 0.5);
}

} // namespace hpvm::fe
