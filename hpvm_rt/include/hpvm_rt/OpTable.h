// OpTable.h - the operator and knob table of Ops.def, expanded once for the
// exporter and the runtime: the HPVM_OP rows as the HpvmOp enumeration and
// constexpr OpInfo rows, the HPVM_KNOB rows as constexpr KnobInfo rows,
// and their lookups (op by kind or configuration name, knob by id or name).
// Header-only, so that both programs share it without linking each other.
#ifndef HPVM_RT_OPTABLE_H
#define HPVM_RT_OPTABLE_H

#include "hpvm_rt/OpFacts.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hpvm::rt {

// --- Knob vocabulary --------------------------------------------------------

/// Numerics of a knob (Ops.def Precision column). INT8: 8-bit operands
/// (per-output-channel weight scales, an activation scale from a
/// calibration), 32-bit accumulation; INT8DYN: the same with the activation
/// scale taken from each batch's own range (no calibration).
enum class Precision : uint8_t { FP32, FP16, BF16, INT8, INT8DYN };

/// True for the 8-bit integer precisions.
constexpr bool isInt8(Precision p) {
  return p == Precision::INT8 || p == Precision::INT8DYN;
}
/// Algorithm of a knob (Ops.def Variant column).
enum class Variant : uint8_t { Exact, PerfRow, PerfCol, Samp };

/// The Ops.def spelling of \p v ("Exact", "PerfRow", ...): ops.json's.
constexpr const char* variantName(Variant v) {
  switch (v) {
  case Variant::Exact:
    return "Exact";
  case Variant::PerfRow:
    return "PerfRow";
  case Variant::PerfCol:
    return "PerfCol";
  case Variant::Samp:
    return "Samp";
  }
  return "?";
}
/// The Ops.def spelling of \p p ("FP32", "INT8DYN", ...): ops.json's.
constexpr const char* precisionName(Precision p) {
  switch (p) {
  case Precision::FP32:
    return "FP32";
  case Precision::FP16:
    return "FP16";
  case Precision::BF16:
    return "BF16";
  case Precision::INT8:
    return "INT8";
  case Precision::INT8DYN:
    return "INT8DYN";
  }
  return "?";
}

/// One HPVM_KNOB row as written.
struct KnobRow {
  int id;
  const char* confName;
  Variant variant;
  Precision precision;
  double speedup;
  int rate, offset;
  KnobApplies applies;
};

/// Every HPVM_KNOB row, in table order.
inline constexpr KnobRow kKnobRows[] = {
#define HPVM_KNOB(Id, ConfName, Var, Prec, Speedup, Rate, Offset, Applies)     \
  {Id,      ConfName, Variant::Var, Precision::Prec,                           \
   Speedup, Rate,     Offset,       KnobApplies::Applies},
#include "hpvm_rt/Ops.def"
};
inline constexpr int kNumKnobs = sizeof(kKnobRows) / sizeof(kKnobRows[0]);

/// The id of the first knob row named \p confName in configuration files
/// ("fp32", "perf"); 0 if none (a compile error where it initializes one
/// of the constants below).
constexpr int knobIdByName(std::string_view confName) {
  for (const KnobRow& k : kKnobRows)
    if (confName == k.confName)
      return k.id;
  return 0;
}

/// The exact knobs by name, for the code that needs one in particular.
inline constexpr int kKnobFp32 = knobIdByName("fp32");
inline constexpr int kKnobFp16 = knobIdByName("fp16");
static_assert(kKnobFp32 != 0 && kKnobFp16 != 0,
              "Ops.def has an fp32 and an fp16 knob row");

/// One knob as the kernels need it (resolved from an Ops.def HPVM_KNOB row).
struct KnobSpec {
  int id = kKnobFp32;
  Variant variant = Variant::Exact;
  Precision precision = Precision::FP32;
  int rate = 1;   ///< Perforation/sampling rate r; 1 means exact.
  int offset = 0; ///< Offset 0..r-1.
  /// INT8: the calibrated range [inLo, inHi] of the op's input, quantized
  /// unsigned (0..255) when inLo >= 0, else signed with the symmetric scale
  /// max(-inLo, inHi) / 127 (saturating at -128..127).
  /// Filled by the runtime's executor from the active calibration.
  bool hasRange = false;
  float inLo = 0.f, inHi = 0.f;
};

// --- Rows -------------------------------------------------------------------

/// HPVM tensor op kinds, one per HPVM_OP row, in table order.
enum class HpvmOp : uint8_t {
#define HPVM_OP(Kind, ...) Kind,
#include "hpvm_rt/Ops.def"
};
inline constexpr int kNumHpvmOps = 0
#define HPVM_OP(...) +1
#include "hpvm_rt/Ops.def"
    ;

/// Facts of one HPVM_OP row.
struct OpInfo {
  HpvmOp op;
  const char* kindName; ///< "Conv"
  const char* confName; ///< "conv"
  const char* jsonType; ///< "convolution"
  const char* intrinsic;
  const char* rtCall; ///< Direct-call format string (Ops.def RtCall).
  /// The row's facts shared with the exporter (operand counts, knobs,
  /// FLOP formula, fusion role, activation, in place).
  const OpFacts* facts;
};

/// Facts of one HPVM_KNOB row.
struct KnobInfo {
  int id;
  const char* confName;
  KnobSpec spec;
  double speedup;
  KnobApplies applies;
};

#define HPVM_RT_STR2(X) #X
#define HPVM_RT_STR(X) HPVM_RT_STR2(X)

/// Every HPVM_OP row, in table order (indexed by HpvmOp).
inline constexpr OpInfo kOpInfos[] = {
#define HPVM_OP(Kind, ConfName, JsonType, Intrinsic, RtCall, TensorArgs,       \
                ScalarArgs, Knobs, FlopsPerElem, FlopsPerReduce, Fuse, Act,    \
                InPlace, ReduceOver, Scalar, Hpvm, ScalarNames, Batch)         \
  {HpvmOp::Kind,                                                               \
   #Kind,                                                                      \
   ConfName,                                                                   \
   JsonType,                                                                   \
   HPVM_RT_STR(Intrinsic),                                                     \
   RtCall,                                                                     \
   &kOpFacts[static_cast<int>(HpvmOp::Kind)]},
#include "hpvm_rt/Ops.def"
};
static_assert(sizeof(kOpInfos) / sizeof(kOpInfos[0]) == kNumHpvmOps,
              "one OpInfo per HPVM_OP row");
static_assert(kNumOpFacts == kNumHpvmOps, "one OpFacts per HPVM_OP row");

#undef HPVM_RT_STR
#undef HPVM_RT_STR2

/// Every knob row with its KnobSpec, in table order.
inline constexpr std::array<KnobInfo, kNumKnobs> kKnobInfos = [] {
  std::array<KnobInfo, kNumKnobs> knobs{};
  for (int i = 0; i < kNumKnobs; ++i) {
    const KnobRow& r = kKnobRows[i];
    knobs[i] =
        KnobInfo{r.id, r.confName,
                 KnobSpec{r.id, r.variant, r.precision, r.rate, r.offset},
                 r.speedup, r.applies};
  }
  return knobs;
}();

/// A read-only view of table rows (range-for, size, indexing).
template <class Row> struct TableRows {
  const Row* first;
  size_t count;
  constexpr const Row* begin() const { return first; }
  constexpr const Row* end() const { return first + count; }
  constexpr size_t size() const { return count; }
  constexpr const Row& front() const { return first[0]; }
  constexpr const Row& operator[](size_t i) const { return first[i]; }
};

// --- Lookups ----------------------------------------------------------------

/// The row of \p op.
constexpr const OpInfo& opInfo(HpvmOp op) {
  return kOpInfos[static_cast<int>(op)];
}
/// Every op row, in table order.
constexpr TableRows<OpInfo> allOps() { return {kOpInfos, kNumHpvmOps}; }
/// Looks an op up by its configuration-file token; nullptr if unknown.
constexpr const OpInfo* opByConfName(std::string_view name) {
  for (const OpInfo& info : kOpInfos)
    if (name == info.confName)
      return &info;
  return nullptr;
}
/// Looks an op up by its Kind ("Conv"); nullptr if unknown.
constexpr const OpInfo* opByKindName(std::string_view name) {
  for (const OpInfo& info : kOpInfos)
    if (name == info.kindName)
      return &info;
  return nullptr;
}

/// Every knob row, in table order.
constexpr TableRows<KnobInfo> allKnobs() {
  return {kKnobInfos.data(), kKnobInfos.size()};
}
/// Looks a knob up by id; nullptr if unknown.
constexpr const KnobInfo* knobById(int id) {
  for (const KnobInfo& k : kKnobInfos)
    if (k.id == id)
      return &k;
  return nullptr;
}
/// The first knob row named \p confName in configuration files ("fp32",
/// "perf"); nullptr if none.
constexpr const KnobInfo* knobByName(std::string_view confName) {
  for (const KnobInfo& k : kKnobInfos)
    if (confName == k.confName)
      return &k;
  return nullptr;
}
/// True if \p knob may be applied to \p op.
constexpr bool knobAppliesTo(const KnobInfo& knob, HpvmOp op) {
  return knobFits(knob.applies, opInfo(op).facts->knobs);
}
/// The convolution rows (conv, group_conv, dilated_conv): one kernel,
/// runConv, with the geometry of their scalars.
constexpr bool isConvOp(HpvmOp op) {
  return op == HpvmOp::Conv || op == HpvmOp::GroupConv ||
         op == HpvmOp::DilatedConv;
}
/// The ops with int8 knobs (the convolutions and HPVM's dense mul).
constexpr bool hasInt8Knob(HpvmOp op) {
  return knobAppliesTo(*knobByName("int8"), op);
}

} // namespace hpvm::rt

#endif // HPVM_RT_OPTABLE_H
