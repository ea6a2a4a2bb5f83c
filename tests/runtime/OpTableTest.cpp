// OpTableTest.cpp - hpvm_rt/OpTable.h's operator and knob tables expanded from
// Ops.def: lookups by name and id, knob parameters, applicability.
#include "hpvm_rt/OpTable.h"

#include <doctest/doctest.h>

#include <set>
#include <string>

using namespace hpvm::rt;

TEST_CASE("OpTable: ops are found by configuration name and carry their "
          "Ops.def facts") {
  REQUIRE(opByConfName("conv") != nullptr);
  const OpInfo& conv = *opByConfName("conv");
  CHECK(conv.op == HpvmOp::Conv);
  CHECK(std::string(conv.kindName) == "Conv");
  CHECK(std::string(conv.jsonType) == "convolution");
  CHECK(std::string(conv.intrinsic) == "__hpvm__tensor_convolution");
  CHECK(conv.facts->tensorArgs == 2);
  CHECK(conv.facts->scalarArgs == 4);
  CHECK(conv.facts->knobs == KnobApplies::KnobConv);
  CHECK(opByConfName("pool_mean")->op == HpvmOp::AvgPool);
  CHECK(opByConfName("batchnorm")->facts->scalarArgs == 1);
  CHECK(opByConfName("pool_min") == nullptr);
  CHECK(opByConfName("Conv") == nullptr);
  for (int k = 0; k < kNumHpvmOps; ++k) {
    const OpInfo& info = opInfo(static_cast<HpvmOp>(k));
    CHECK(static_cast<int>(info.op) == k);
    CHECK(opByConfName(info.confName) == &info);
  }
}

TEST_CASE("OpTable: knobs by id with HPVM's parameters") {
  const KnobInfo* fp32 = knobById(11);
  REQUIRE(fp32 != nullptr);
  CHECK(std::string(fp32->confName) == "fp32");
  CHECK(fp32->spec.variant == Variant::Exact);
  CHECK(fp32->spec.rate == 1);
  const KnobInfo* perf = knobById(126);
  REQUIRE(perf != nullptr);
  CHECK(std::string(perf->confName) == "perf");
  CHECK(perf->spec.id == 126);
  CHECK(perf->spec.variant == Variant::PerfCol);
  CHECK(perf->spec.rate == 3);
  CHECK(perf->spec.offset == 1);
  CHECK(perf->spec.precision == Precision::FP32);
  const KnobInfo* samp = knobById(264);
  REQUIRE(samp != nullptr);
  CHECK(samp->spec.variant == Variant::Samp);
  CHECK(samp->spec.precision == Precision::FP16);
  CHECK(samp->spec.rate == 3);
  CHECK(samp->spec.offset == 1);
  CHECK(knobById(41) == nullptr);
  CHECK(knobById(0) == nullptr);
  std::set<int> ids;
  for (const KnobInfo& k : allKnobs())
    ids.insert(k.id);
  CHECK(ids.size() == allKnobs().size());
  CHECK(allKnobs().front().id == 11);
}

TEST_CASE("OpTable: knob applicability follows the Applies column") {
  const KnobInfo& fp16 = *knobById(12);
  const KnobInfo& perf = *knobById(121);
  const KnobInfo& bf16 = *knobById(301);
  for (int k = 0; k < kNumHpvmOps; ++k)
    CHECK(knobAppliesTo(fp16, static_cast<HpvmOp>(k)));
  CHECK(knobAppliesTo(perf, HpvmOp::Conv));
  CHECK_FALSE(knobAppliesTo(perf, HpvmOp::GroupConv));
  CHECK_FALSE(knobAppliesTo(perf, HpvmOp::Mul));
  CHECK(knobAppliesTo(bf16, HpvmOp::Conv));
  CHECK(knobAppliesTo(bf16, HpvmOp::GroupConv));
  CHECK(knobAppliesTo(bf16, HpvmOp::Mul));
  CHECK_FALSE(knobAppliesTo(bf16, HpvmOp::Add));
}

TEST_CASE("OpTable: each op's shared facts are its own row's, and drive "
          "fusion, in-place and FLOPs") {
  // (The exporter reads the same kOpFacts; a row out of order would give an
  // op another's fusion role.)
  CHECK(kNumOpFacts == kNumHpvmOps);
  for (int k = 0; k < kNumHpvmOps; ++k) {
    const OpInfo& info = opInfo(static_cast<HpvmOp>(k));
    REQUIRE(info.facts == &kOpFacts[k]);
    CHECK(std::string(info.facts->kind) == info.kindName);
  }
  CHECK(opInfo(HpvmOp::Conv).facts->fuse == FuseRole::Conv);
  CHECK(opInfo(HpvmOp::GroupConv).facts->fuse == FuseRole::Other);
  CHECK(opInfo(HpvmOp::ClippedRelu).facts->act == Act::Clip);
  CHECK(opInfo(HpvmOp::Softmax).facts->inPlace);
  CHECK_FALSE(opInfo(HpvmOp::MaxPool).facts->inPlace);
  // conv 2x3x8x8 * 4x3x3x3 -> 2x4x6x6: 2 FLOPs per multiply-add.
  const int64_t w[4] = {4, 3, 3, 3};
  CHECK(opFlopsOf(*opInfo(HpvmOp::Conv).facts, 2 * 4 * 6 * 6,
                  static_cast<const int64_t*>(nullptr), w,
                  static_cast<const double*>(nullptr)) ==
        2.0 * 4 * 6 * 6 * 2 * 27);
  const double window[2] = {2, 3};
  CHECK(opFlopsOf(*opInfo(HpvmOp::AvgPool).facts, 10,
                  static_cast<const int64_t*>(nullptr),
                  static_cast<const int64_t*>(nullptr),
                  window) == 10.0 * (1 + 6));
  // attention over 2x24x5x1 (8 channels, 5 tokens): 4 FLOPs per output
  // element and token (q k^T and the weighted sum of the values).
  const int64_t qkv[4] = {2, 24, 5, 1};
  CHECK(opFlopsOf(*opInfo(HpvmOp::Attention).facts, 2 * 8 * 5, qkv,
                  static_cast<const int64_t*>(nullptr),
                  static_cast<const double*>(nullptr)) == 2.0 * 8 * 5 * 4 * 5);
  CHECK(knobFits(KnobApplies::KnobDense, KnobApplies::KnobConv));
  CHECK_FALSE(knobFits(KnobApplies::KnobConv, KnobApplies::KnobDense));
}

TEST_CASE("Runtime: table lookups by kind name and knob name") {
  REQUIRE(opByKindName("Conv") != nullptr);
  CHECK(opByKindName("Conv")->op == HpvmOp::Conv);
  CHECK(opByKindName("conv") == nullptr);
  CHECK(allOps().size() == size_t(kNumHpvmOps));
  for (const OpInfo& info : allOps())
    CHECK(&opInfo(info.op) == &info);
  // The first row of a knob name; the exact knobs' ids by name.
  REQUIRE(knobByName("perf") != nullptr);
  CHECK(knobByName("perf")->id == 121);
  CHECK(knobByName("fp64") == nullptr);
  CHECK(knobIdByName("fp64") == 0);
  CHECK(kKnobFp32 == 11);
  CHECK(kKnobFp16 == 12);
  CHECK(KnobSpec{}.id == kKnobFp32);
}
