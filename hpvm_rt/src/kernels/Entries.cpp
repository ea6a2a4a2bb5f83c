// Entries.cpp - each Ops.def row's kernel on an OpCall (run<Kind>), for the
// kernels of Kernels.h whose operands are spelled out: the operands and
// scalars in the row's order, handed on. The activations' entries come
// from the table itself (Fuse Activation: runAct with the row's Act).
#include "kernels/Kernels.h"

namespace hpvm::rt {

namespace {

int asInt(double v) { return static_cast<int>(v); }

/// Row indexes of kOpFacts.
enum Row : int {
#define HPVM_OP(Kind, ...) k##Kind,
#include "hpvm_rt/Ops.def"
};

/// An activation row's kernel: runAct with the row's Act and parameters
/// (actParam).
void activation(const OpCall& c, const OpFacts& f) {
  runAct(c.in[0], f.act, actParam(f, c.scalars, 0), actParam(f, c.scalars, 1),
         c.knob, c.out);
}

} // namespace

#define HPVM_RT_ENTRY_Activation(Kind)                                         \
  void run##Kind(const OpCall& c) { activation(c, kOpFacts[k##Kind]); }
#define HPVM_RT_ENTRY_Conv(Kind)
#define HPVM_RT_ENTRY_Mul(Kind)
#define HPVM_RT_ENTRY_Add(Kind)
#define HPVM_RT_ENTRY_Pool(Kind)
#define HPVM_RT_ENTRY_Other(Kind)
#define HPVM_OP(Kind, ConfName, JsonType, Intrinsic, RtCall, TensorArgs,       \
                ScalarArgs, Knobs, FlopsPerElem, FlopsPerReduce, Fuse, ...)    \
  HPVM_RT_ENTRY_##Fuse(Kind)
#include "hpvm_rt/Ops.def"
#undef HPVM_RT_ENTRY_Activation
#undef HPVM_RT_ENTRY_Conv
#undef HPVM_RT_ENTRY_Mul
#undef HPVM_RT_ENTRY_Add
#undef HPVM_RT_ENTRY_Pool
#undef HPVM_RT_ENTRY_Other

ConvArgs convArgsOf(const double* s, ConvScalars form) {
  ConvArgs a;
  a.padH = asInt(s[0]);
  a.padW = asInt(s[1]);
  a.strideH = asInt(s[2]);
  a.strideW = asInt(s[3]);
  if (form == ConvScalars::Grouped)
    a.groups = asInt(s[5]); // s[4]: HPVM's conv_mode
  if (form == ConvScalars::Dilated) {
    a.dilH = asInt(s[4]);
    a.dilW = asInt(s[5]);
    a.groups = asInt(s[6]);
  }
  return a;
}

TransposeArgs transposeArgsOf(const double* s) {
  TransposeArgs a;
  a.padTop = asInt(s[0]);
  a.padLeft = asInt(s[1]);
  a.padBottom = asInt(s[2]);
  a.padRight = asInt(s[3]);
  a.strideH = asInt(s[4]);
  a.strideW = asInt(s[5]);
  a.dilH = asInt(s[6]);
  a.dilW = asInt(s[7]);
  a.groups = asInt(s[8]);
  return a;
}

PoolArgs poolArgsOf(const double* s, PoolArgs::Kind kind, bool ownPads) {
  PoolArgs a;
  a.kind = kind;
  a.kh = asInt(s[0]);
  a.kw = asInt(s[1]);
  a.padH = asInt(s[2]);
  a.padW = asInt(s[3]);
  // HPVM's pools pad both ends alike and count the pads in the mean.
  a.padBottom = ownPads ? asInt(s[4]) : a.padH;
  a.padRight = ownPads ? asInt(s[5]) : a.padW;
  a.strideH = asInt(s[ownPads ? 6 : 4]);
  a.strideW = asInt(s[ownPads ? 7 : 5]);
  a.excludePad = ownPads && kind == PoolArgs::Avg;
  return a;
}

// Convolution and dense.
void runConv(const OpCall& c) {
  runConv(c.in[0], c.in[1], convArgsOf(c.scalars, ConvScalars::Plain),
          PostOps{}, c.knob, c.out);
}
void runGroupConv(const OpCall& c) {
  runConv(c.in[0], c.in[1], convArgsOf(c.scalars, ConvScalars::Grouped),
          PostOps{}, c.knob, c.out);
}
void runDilatedConv(const OpCall& c) {
  runConv(c.in[0], c.in[1], convArgsOf(c.scalars, ConvScalars::Dilated),
          PostOps{}, c.knob, c.out);
}
void runMul(const OpCall& c) {
  runDense(c.in[0], c.in[1], PostOps{}, c.knob, c.out);
}

// Elementwise and normalisation.
void runAdd(const OpCall& c) {
  runAdd(c.in[0], c.in[1], c.post.act, c.post.lo, c.post.hi, c.knob, c.out);
}
void runMultiply(const OpCall& c) {
  runMultiply(c.in[0], c.in[1], c.post.act, c.post.lo, c.post.hi, c.knob, c.out,
              c.post.quantizeOut, c.post.quantizeS8);
}
void runSub(const OpCall& c) {
  runArith(Arith::Sub, c.in[0], c.in[1], c.knob, c.out);
}
void runDiv(const OpCall& c) {
  runArith(Arith::Div, c.in[0], c.in[1], c.knob, c.out);
}
void runMaximum(const OpCall& c) {
  runArith(Arith::Max, c.in[0], c.in[1], c.knob, c.out);
}
void runMinimum(const OpCall& c) {
  runArith(Arith::Min, c.in[0], c.in[1], c.knob, c.out);
}
void runSqrt(const OpCall& c) { runPower(c.in[0], 0.5f, c.knob, c.out); }
void runPow(const OpCall& c) {
  runPower(c.in[0], static_cast<float>(c.scalars[0]), c.knob, c.out);
}
void runBatchNorm(const OpCall& c) {
  runBatchNorm(c.in[0], c.in[1], c.in[2], c.in[3], c.in[4], c.scalars[0],
               c.post.act, c.post.lo, c.post.hi, c.knob, c.out);
}
void runSoftmax(const OpCall& c) { runSoftmax(c.in[0], c.knob, c.out); }
void runChannelSoftmax(const OpCall& c) {
  runChannelSoftmax(c.in[0], c.scalars[0] != 0, c.knob, c.out);
}
void runGroupSoftmax(const OpCall& c) {
  runGroupSoftmax(c.in[0], int64_t(c.scalars[0]), c.knob, c.out);
}
void runLayerNorm(const OpCall& c) {
  runLayerNorm(c.in[0], c.in[1], c.in[2], c.scalars[0], c.knob, c.out);
}

// Data movement.
void runConcat(const OpCall& c) { runConcat(c.in, c.numIn, c.knob, c.out); }
void runConcatWidth(const OpCall& c) {
  runConcatWidth(c.in, c.numIn, c.knob, c.out);
}
void runChannelSlice(const OpCall& c) {
  runChannelSlice(c.in[0], int64_t(c.scalars[0]), int64_t(c.scalars[1]), c.knob,
                  c.out);
}
void runChannelShuffle(const OpCall& c) {
  runChannelShuffle(c.in[0], int64_t(c.scalars[0]), c.knob, c.out);
}
void runChannelsLast(const OpCall& c) {
  runChannelsLast(c.in[0], c.knob, c.out);
}
void runChannelsFirst(const OpCall& c) {
  runChannelsFirst(c.in[0], c.knob, c.out);
}
void runTokenTranspose(const OpCall& c) {
  // x's values with the channels last are y's: N x H*W x C.
  runChannelsLast(c.in[0], c.knob, c.out);
}
void runClassToken(const OpCall& c) {
  runClassToken(c.in[0], c.in[1], c.in[2], c.knob, c.out);
}
void runAttention(const OpCall& c) {
  runAttention(c.in[0], int64_t(c.scalars[0]), c.knob, c.out);
}
void runSelectToken(const OpCall& c) {
  runSelectToken(c.in[0], int64_t(c.scalars[0]), c.knob, c.out);
}

// Pooling.
void runMaxPool(const OpCall& c) {
  runPool(c.in[0], poolArgsOf(c.scalars, PoolArgs::Max, false), c.knob, c.out);
}
void runAvgPool(const OpCall& c) {
  runPool(c.in[0], poolArgsOf(c.scalars, PoolArgs::Avg, false), c.knob, c.out);
}
void runMaxPoolPads(const OpCall& c) {
  runPool(c.in[0], poolArgsOf(c.scalars, PoolArgs::Max, true), c.knob, c.out);
}
void runAvgPoolPads(const OpCall& c) {
  runPool(c.in[0], poolArgsOf(c.scalars, PoolArgs::Avg, true), c.knob, c.out);
}

} // namespace hpvm::rt
