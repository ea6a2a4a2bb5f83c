// OpTable.cpp - Runtime.h's operator and knob tables, expanded from Ops.def.
#include "Runtime.h"

#include <algorithm>

namespace hpvm::rt {

namespace {

#define HPVM_STR2(X) #X
#define HPVM_STR(X) HPVM_STR2(X)

const OpInfo kOps[] = {
#define HPVM_OP(Kind, ConfName, JsonType, Intrinsic, RtCall, TensorArgs,       \
                ScalarArgs, Knobs, FlopsPerElem, FlopsPerReduce, Fuse, Act,    \
                InPlace, ReduceOver, Scalar, Hpvm, ScalarNames)                \
  {HpvmOp::Kind,                                                               \
   #Kind,                                                                      \
   ConfName,                                                                   \
   JsonType,                                                                   \
   HPVM_STR(Intrinsic),                                                        \
   RtCall,                                                                     \
   &kOpFacts[static_cast<int>(HpvmOp::Kind)]},
#include "hpvm_rt/Ops.def"
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == kNumHpvmOps,
              "one OpInfo per HPVM_OP row");

#undef HPVM_STR
#undef HPVM_STR2

std::vector<KnobInfo> buildKnobs() {
  std::vector<KnobInfo> knobs;
#define HPVM_KNOB(Id, ConfName, Var, Prec, Speedup, Rate, Offset, Applies)     \
  knobs.push_back(KnobInfo{                                                    \
      Id, ConfName, KnobSpec{Id, Variant::Var, Precision::Prec, Rate, Offset}, \
      Speedup, KnobApplies::Applies});
#include "hpvm_rt/Ops.def"
  return knobs;
}

} // namespace

const OpInfo& opInfo(HpvmOp op) { return kOps[static_cast<int>(op)]; }

const OpInfo* opByConfName(std::string_view name) {
  for (const OpInfo& info : kOps)
    if (name == info.confName)
      return &info;
  return nullptr;
}

const std::vector<KnobInfo>& allKnobs() {
  static const std::vector<KnobInfo> knobs = buildKnobs();
  return knobs;
}

const KnobInfo* knobById(int id) {
  const std::vector<KnobInfo>& knobs = allKnobs();
  auto it = std::find_if(knobs.begin(), knobs.end(),
                         [id](const KnobInfo& k) { return k.id == id; });
  return it == knobs.end() ? nullptr : &*it;
}

bool knobAppliesTo(const KnobInfo& knob, HpvmOp op) {
  return knobFits(knob.applies, opInfo(op).facts->knobs);
}

} // namespace hpvm::rt
