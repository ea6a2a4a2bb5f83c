// OpFacts.h - the table logic shared by the exporter and the runtime: the
// per-op facts of Ops.def's HPVM_OP rows (fusion role, activation, in-place,
// knob applicability, FLOP formula) as constexpr data, and the rules that
// read them. Both sides index the facts by their own enumeration of the
// HPVM_OP rows (hpvm::fe::OpKind's first rows, hpvm::rt::HpvmOp), which
// follows the table's order.
#ifndef HPVM_RT_OPFACTS_H
#define HPVM_RT_OPFACTS_H

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace hpvm::rt {

/// What an op can be in a fused node (hpvm_rt/Fusion.h).
enum class FuseRole : uint8_t { Conv, Mul, Add, Activation, Pool, Other };

/// Elementwise activation applied after an op (Ops.def Act column).
/// Clip's two parameters are its bounds, HardSigmoid's its alpha and beta
/// (PostOps::actLo and actHi carry them).
enum class Act : uint8_t {
  None,
  Relu,
  Clip,
  Tanh,
  Sigmoid,
  HardSigmoid,
  HardSwish,
  Gelu,
  LeakyRelu, ///< x < 0 ? alpha * x : x; alpha the op's scalar.
  Silu       ///< x * sigmoid(x) (swish with beta 1).
};

/// Which knobs apply to an op (Ops.def Applies / Knobs columns).
enum class KnobApplies : uint8_t { KnobAll, KnobConv, KnobDense };

/// What an op's reduction length per output element is (Ops.def
/// ReduceOver column).
enum class ReduceOver : uint8_t {
  None,     ///< 0
  Filter,   ///< C/groups * KH * KW: dims 1-3 of the second operand.
  Weights,  ///< K: dim 2 of the second operand (1 x 1 x K x N).
  Window,   ///< KH * KW: the first two scalars.
  Tokens,   ///< H * W: dims 2 and 3 of the first operand.
  Channels, ///< C: dim 1 of the first operand (token_matmul's K).
  /// A transposed convolution's: every input value meets K/groups * KH *
  /// KW taps (dims 1-3 of the second operand), so R = that times the
  /// input's C * H * W over the output's values (taps a pad cuts off
  /// counted too).
  Transposed,
};

/// How an op treats the images of a batch (Ops.def Batch column): whether
/// a launch may run it over slices of the batch (the executor's
/// sub-batches) and which operands are then sliced.
enum class BatchRole : uint8_t {
  Whole,     ///< Mixes the images, or is not known not to: never sliced.
  Images,    ///< Every operand holds the images; each computed on its own.
  Params,    ///< Operand 0 holds the images; the others are parameters
             ///< (filter, statistics) shared by every image.
  Broadcast, ///< Each operand holds the images or is one image's worth
             ///< (batch 1) broadcast to all of them.
};

/// Most tensor operands of one op call (a variadic op's limit; the
/// exporter splits a longer ONNX Concat into a tree of concats).
inline constexpr int kMaxTensorArgs = 64;
/// Most scalar operands of any op (Ops.def ScalarArgs).
inline constexpr int kMaxScalarArgs = 9;

/// The facts of one HPVM_OP row that both sides compute with.
struct OpFacts {
  const char* kind; ///< "Conv": the row's Kind.
  /// Tensor operands; a variadic op (TensorArgs N) takes 1 to
  /// kMaxTensorArgs and has tensorArgs 0.
  int tensorArgs, scalarArgs;
  bool variadic;
  KnobApplies knobs;
  double flopsPerElem, flopsPerReduce;
  FuseRole fuse;
  Act act;
  bool inPlace;
  ReduceOver reduceOver;
  bool hpvm; ///< HPVM has the intrinsic (else: an hpvm_rt extension).
  /// The scalar operands' names: "pads:2 strides:2" (Ops.def ScalarNames).
  const char* scalarNames;
  BatchRole batch;
};

// TensorArgs as a count (N, variadic: 0) and as the variadic flag.
#define HPVM_RT_ARGC_1 1
#define HPVM_RT_ARGC_2 2
#define HPVM_RT_ARGC_3 3
#define HPVM_RT_ARGC_5 5
#define HPVM_RT_ARGC_N 0
#define HPVM_RT_VARIADIC_1 false
#define HPVM_RT_VARIADIC_2 false
#define HPVM_RT_VARIADIC_3 false
#define HPVM_RT_VARIADIC_5 false
#define HPVM_RT_VARIADIC_N true

/// One OpFacts per HPVM_OP row, in table order.
inline constexpr OpFacts kOpFacts[] = {
#define HPVM_OP(Kind, ConfName, JsonType, Intrinsic, RtCall, TensorArgs,       \
                ScalarArgs, Knobs, FlopsPerElem, FlopsPerReduce, Fuse, Act_,   \
                InPlace, Reduce, Scalar, Hpvm, ScalarNames, Batch)             \
  {#Kind,                                                                      \
   HPVM_RT_ARGC_##TensorArgs,                                                  \
   ScalarArgs,                                                                 \
   HPVM_RT_VARIADIC_##TensorArgs,                                              \
   KnobApplies::Knobs,                                                         \
   FlopsPerElem,                                                               \
   FlopsPerReduce,                                                             \
   FuseRole::Fuse,                                                             \
   Act::Act_,                                                                  \
   InPlace != 0,                                                               \
   ReduceOver::Reduce,                                                         \
   Hpvm != 0,                                                                  \
   ScalarNames,                                                                \
   BatchRole::Batch},
#include "hpvm_rt/Ops.def"
};

#undef HPVM_RT_ARGC_1
#undef HPVM_RT_ARGC_2
#undef HPVM_RT_ARGC_3
#undef HPVM_RT_ARGC_5
#undef HPVM_RT_ARGC_N
#undef HPVM_RT_VARIADIC_1
#undef HPVM_RT_VARIADIC_2
#undef HPVM_RT_VARIADIC_3
#undef HPVM_RT_VARIADIC_5
#undef HPVM_RT_VARIADIC_N

// A variadic op's intrinsic has no room for scalars after its tensors;
// the runtime's trace keeps at most kMaxScalarArgs.
static_assert([] {
  for (const OpFacts& f : kOpFacts)
    if ((f.variadic && f.scalarArgs != 0) || f.scalarArgs > kMaxScalarArgs)
      return false;
  return true;
}());
inline constexpr int kNumOpFacts = sizeof(kOpFacts) / sizeof(kOpFacts[0]);

/// Parameter \p i (0 or 1) of an activation with facts \p f as a post-op:
/// its scalar i (Clip's bounds, HardSigmoid's alpha and beta, LeakyRelu's
/// alpha), 0 past its scalar count.
inline float actParam(const OpFacts& f, const double* scalars, int i) {
  return f.scalarArgs > i ? float(scalars[i]) : 0.f;
}

/// One label per scalar operand of an op with facts \p f, from its
/// ScalarNames: the name before the first operand it names, "" before the
/// others ("pads:2 strides:2" -> pads, "", strides, "").
inline std::vector<std::string> scalarLabels(const OpFacts& f) {
  std::vector<std::string> labels;
  const std::string names = f.scalarNames;
  size_t i = 0;
  while (i < names.size()) {
    size_t end = names.find(' ', i);
    end = end == std::string::npos ? names.size() : end;
    const std::string word = names.substr(i, end - i);
    const size_t colon = word.find(':');
    const int count =
        colon == std::string::npos ? 1 : std::atoi(word.c_str() + colon + 1);
    labels.push_back(word.substr(0, colon));
    for (int k = 1; k < count; ++k)
      labels.emplace_back();
    i = end + 1;
  }
  return labels;
}

/// True if an op with facts \p f may take \p n tensor operands.
constexpr bool arityFits(const OpFacts& f, int n) {
  return f.variadic ? n >= 1 && n <= kMaxTensorArgs : n == f.tensorArgs;
}

/// True if a knob row with \p knob applies to an op whose Knobs column is
/// \p op: KnobAll knobs fit every op, KnobDense knobs conv, group_conv and
/// mul (Knobs KnobConv or KnobDense), KnobConv knobs conv only.
constexpr bool knobFits(KnobApplies knob, KnobApplies op) {
  switch (knob) {
  case KnobApplies::KnobAll:
    return true;
  case KnobApplies::KnobDense:
    return op == KnobApplies::KnobConv || op == KnobApplies::KnobDense;
  case KnobApplies::KnobConv:
    return op == KnobApplies::KnobConv;
  }
  return false;
}

/// FLOPs of one call of an op with facts \p f: \p outElems output
/// elements; \p first and \p second the first and second tensor operands'
/// 4 dims (unused unless the reduction reads them), \p scalars its scalar
/// operands.
template <typename Dim, typename Scalar>
constexpr double opFlopsOf(const OpFacts& f, double outElems, const Dim* first,
                           const Dim* second, const Scalar* scalars) {
  double reduce = 0;
  switch (f.reduceOver) {
  case ReduceOver::None:
    break;
  case ReduceOver::Filter:
    reduce = double(second[1]) * double(second[2]) * double(second[3]);
    break;
  case ReduceOver::Weights:
    reduce = double(second[2]);
    break;
  case ReduceOver::Window:
    reduce = double(scalars[0]) * double(scalars[1]);
    break;
  case ReduceOver::Tokens:
    reduce = double(first[2]) * double(first[3]);
    break;
  case ReduceOver::Channels:
    reduce = double(first[1]);
    break;
  case ReduceOver::Transposed:
    reduce = double(second[1]) * double(second[2]) * double(second[3]) *
             double(first[1]) * double(first[2]) * double(first[3]) /
             (outElems > 0 ? outElems : 1);
    break;
  }
  return outElems * (f.flopsPerElem + f.flopsPerReduce * reduce);
}

} // namespace hpvm::rt

#endif // HPVM_RT_OPFACTS_H
