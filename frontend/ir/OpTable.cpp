// OpTable.cpp - the IR's view of the shared op table, the ONNX rows of
// Ops.def, and FLOP counts.
#include "ir/OpTable.h"

#include "support/Diagnostics.h"

#include <string>

namespace hpvm::fe {

// OpKind's first enumerators are the HPVM_OP rows, in the same order as
// HpvmOp's: hpvmOpOf() is a cast.
#define HPVM_OP(Kind, ...)                                                     \
  static_assert(hpvmOpOf(OpKind::Kind) == hpvm::rt::HpvmOp::Kind,              \
                "OpKind and HpvmOp disagree on " #Kind);
#include "hpvm_rt/Ops.def"

const HpvmOpDesc& hpvmOpDesc(OpKind kind) {
  if (!isHpvmOp(kind))
    HPVM_UNREACHABLE("hpvmOpDesc of non-HPVM kind " +
                     std::string(opKindName(kind)));
  return hpvm::rt::opInfo(hpvmOpOf(kind));
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

std::vector<int> knobsFor(OpKind kind) {
  const hpvm::rt::HpvmOp op = hpvmOpDesc(kind).op;
  std::vector<int> ids;
  for (const KnobDesc& knob : knobTable())
    if (hpvm::rt::knobAppliesTo(knob, op))
      ids.push_back(knob.id);
  return ids;
}

int64_t opFlops(const Node& n) {
  const HpvmOpDesc& desc = hpvmOpDesc(n.kind);
  HPVM_ASSERT(n.output != nullptr && !n.output->shape.empty(),
              "opFlops of a node without an output shape");
  // Output elements at batch 1.
  const int64_t outElems = dimsProduct(n.output->shape, 1);
  const hpvm::rt::OpFacts& f = *desc.facts;
  const std::vector<int64_t>* second =
      f.tensorArgs > 1 ? &n.inputs.at(1)->shape : nullptr;
  const std::vector<int64_t>& first = n.inputs.at(0)->shape;
  HPVM_ASSERT(f.reduceOver == hpvm::rt::ReduceOver::None ||
                  f.reduceOver == hpvm::rt::ReduceOver::Window ||
                  ((f.reduceOver == hpvm::rt::ReduceOver::Tokens ||
                    f.reduceOver == hpvm::rt::ReduceOver::Channels) &&
                   first.size() == 4) ||
                  (second && second->size() == 4),
              "the reduction operand of " + std::string(desc.kindName) +
                  " is not 4-D");
  std::vector<double> scalars;
  for (const Scalar& s : n.scalars)
    scalars.push_back(s.isInteger ? static_cast<double>(s.i) : s.d);
  HPVM_ASSERT(f.reduceOver != hpvm::rt::ReduceOver::Window ||
                  scalars.size() >= 2,
              "pool without window scalars");
  const double flops =
      hpvm::rt::opFlopsOf(f, static_cast<double>(outElems), first.data(),
                          second ? second->data() : nullptr, scalars.data());
  return static_cast<int64_t>(flops + 0.5);
}

} // namespace hpvm::fe
