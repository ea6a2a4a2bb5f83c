// Kernels.h - the contract between hpvm_rt's executor and its kernels.
//
// The executor (graph capture, tracing, HPVM fusion grouping, configuration
// lookup) decides *what* runs: one call below per execution group, with the
// knob chosen for it. The kernels decide *how*: oneDNN primitives with fused
// post-ops, blocked activation layouts kept between layers, cached weight
// reorders, and the plain reference loops that serve as the test oracle.
//
// Storage: every Tensor's memory is managed here (TensorImpl is private to
// the kernels). A kernel may leave its output in a blocked layout; anything
// that needs NCHW host data calls ensureHost() first.
#ifndef HPVM_RT_KERNELS_KERNELS_H
#define HPVM_RT_KERNELS_KERNELS_H

#include "base/KnobSpec.h"
#include "tensor.h"

#include "hpvm_rt/OpFacts.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace hpvm::rt {

/// Loops over fewer values than this run on the calling thread, outside
/// any OpenMP parallel region: a region costs a team start, a barrier and
/// (libgomp) a heap allocation, more than the work it would split, and
/// with libgomp an `if` clause does not avoid that (GOMP_parallel is
/// called with a team of one). At batch 1 the small nets make dozens of
/// such calls a launch (ResNet-18 int8 on F-MNIST: 3% of its samples in
/// GOMP_parallel, for copies of 16 KB and a 10-class softmax).
constexpr int64_t kParallelMinElems = 1 << 15;

/// True for the activations the layers compute with oneDNN's vectorised
/// eltwise over whole outputs (a scalar loop of std::tanh or std::exp costs
/// more than the convolution) rather than in their output pass.
inline bool isTranscendental(Act a) {
  return a == Act::Tanh || a == Act::Sigmoid || a == Act::Gelu ||
         a == Act::Silu;
}

/// GELU, exact form: x * (1 + erf(x / sqrt(2))) / 2.
inline float gelu(float x) {
  return 0.5f * x * (1.f + std::erf(x * 0.70710678118654752f));
}

/// ONNX HardSigmoid: max(0, min(1, alpha * x + beta)), with one rounding
/// (fused multiply-add, as oneDNN's eltwise_linear computes it). The
/// reference kernel and the layers' host post-ops share it, bit for bit.
inline float hardSigmoid(float x, float alpha, float beta) {
  const float v = std::fma(alpha, x, beta);
  return v < 0.f ? 0.f : (v > 1.f ? 1.f : v);
}

/// Hard swish (MobileNet v3): x * relu6(x + 3) / 6, in PyTorch's order of
/// operations (= x * HardSigmoid(x) with alpha 1/6, beta 1/2, up to
/// rounding).
inline float hardSwish(float x) {
  const float r = x + 3.f;
  return x * (r < 0.f ? 0.f : (r > 6.f ? 6.f : r)) / 6.f;
}

/// SiLU (swish with beta 1; EfficientNet): x * sigmoid(x), the sigmoid
/// computed as the sigmoid activation computes it, then multiplied by x
/// (as the unfused pair Sigmoid, Mul would).
inline float silu(float x) { return x * (1.f / (1.f + std::exp(-x))); }

/// Post-operations fused into a convolution or dense layer, applied in this
/// order: bias (per channel), batch norm (inference), activation, residual
/// add (elementwise, same shape as the output), second activation. Tensors
/// here are never written.
struct PostOps {
  const Tensor* bias = nullptr;    ///< 1xKx1x1 (conv) or 1xNx1x1 (dense).
  const Tensor* bnGamma = nullptr; ///< All four set or all null.
  const Tensor* bnBeta = nullptr;
  const Tensor* bnMean = nullptr;
  const Tensor* bnVar = nullptr;
  double bnEps = 0.0;
  Act act = Act::None;
  /// The activation's parameters: Act::Clip's bounds, Act::HardSigmoid's
  /// alpha and beta, Act::LeakyRelu's alpha (actLo).
  float actLo = 0.f, actHi = 0.f;
  const Tensor* residual = nullptr; ///< Elementwise add, output shape.
  Act act2 = Act::None;
  float act2Lo = 0.f, act2Hi = 0.f; ///< act2's, as actLo and actHi.
  /// int8 layers only: > 0 asks for the result quantized with this scale,
  /// to u8 or (quantizeS8) s8, instead of fp32: the int8 layers reading it
  /// take it as their input quantization would (q = saturate(round(v /
  /// scale))), and other readers get q * scale.
  float quantizeOut = 0.f;
  bool quantizeS8 = false;
  /// bf16 layers only: store the result as bf16 (the layers reading it
  /// compute in bf16 and would round it so anyway; a residual reader adds
  /// it rounded). Ignored where the convolution is not native bf16.
  bool bf16Out = false;
  /// fp16 layers only: store the result as NHWC half (the layers reading
  /// it compute in half arithmetic and take that layout). Ignored where the
  /// convolution does not run in half arithmetic (ConvHalf.h).
  bool halfOut = false;
  /// Not a post-op: convolutions only (no groups, one image), a 1 x C x 1 x
  /// 1 gate that multiplies the input's channels before the convolution (a
  /// squeeze-and-excitation product folded in: ConvGated.h).
  const Tensor* gate = nullptr;
};

/// True when PostOps may hold activation a and, after the residual, b: the
/// kernels compute some pairs wrong in one oneDNN chain (Elementwise.cpp);
/// the executor runs b as an op of its own then.
bool actsChain(Act a, float aLo, float aHi, Act b, float bLo, float bHi);

/// Pooling geometry: pads padH/padW before and bottom()/right() after
/// (HPVM's pools: the same). Max ignores out-of-range positions; Avg
/// divides by the full window area (count_include_pad, PyTorch's default),
/// or with excludePad by the window's positions inside the input.
struct PoolArgs {
  enum Kind : uint8_t { Max, Avg } kind = Max;
  int kh = 1, kw = 1, padH = 0, padW = 0, strideH = 1, strideW = 1;
  int padBottom = -1, padRight = -1; ///< -1: as padH / padW.
  bool excludePad = false;
  int bottom() const { return padBottom < 0 ? padH : padBottom; }
  int right() const { return padRight < 0 ? padW : padRight; }
};

// --- Storage ----------------------------------------------------------------

/// Allocates NCHW host storage for a tensor whose dims are set (contents
/// undefined). Idempotent.
void allocHost(Tensor* t);
/// Makes t->host_data hold valid NCHW data (reorders from a blocked layout,
/// allocating host memory if needed).
void ensureHost(Tensor* t);
/// Tells the kernels the host data was written by someone else (drops any
/// cached blocked copy or reordered weights derived from it).
void hostModified(Tensor* t);
/// Frees every buffer of t (host and layout copies); dims stay.
void releaseStorage(Tensor* t);
/// The channel block of zero-copy concatenations and of runConcat()'s
/// blocked results: the one the convolutions write, 16 with AVX-512
/// (nChw16c), else 8 (nChw8c: AVX2's), so that neither side reorders.
int64_t viewChannelBlock();
/// Zero-copy concatenation: makes channels [offset, offset + C) of \p whole
/// the oneDNN storage of \p part (C its channels), both of batch 1 and the
/// same height and width, offset and C multiples of viewChannelBlock(). A
/// kernel writing \p part in that block's layout then writes those
/// channels of \p whole in place (in another layout, \p part gets a
/// buffer of its own again), and runConcat() copies nothing for a part
/// found in place. \p whole gets (or keeps) a buffer in that layout that
/// is never swapped for another until released;
/// part == whole only does that. Nothing else may write into \p whole's
/// channels meanwhile: every writer of a channel range writes the same
/// values (the part's).
void bindChannelView(Tensor* part, Tensor* whole, int64_t offset);

// --- Layers (outputs have dims set by the caller; storage is the kernel's) -

/// The exact knob of \p knob's precision (perforation and sampling computed
/// as an exact convolution).
inline KnobSpec exactAt(const KnobSpec& knob) {
  KnobSpec exact = knob;
  exact.variant = Variant::Exact;
  exact.rate = 1;
  exact.offset = 0;
  return exact;
}

/// y = post(conv(x, w)) with the given knob (exact, perforated, sampled,
/// fp16/bf16 numerics). x: NxCxHxW, w: Kx(C/g)xKHxKW, y: NxKxHoxWo.
void runConv(const Tensor* x, const Tensor* w, const ConvArgs& args,
             const PostOps& post, const KnobSpec& knob, Tensor* y);
/// Test hook: the name of the convolution variant (Convolution.cpp's ordered
/// list) that computed this thread's last runConv.
const char* lastConvVariant();
/// y = post(x * w): x viewed as MxK (flatten C,H,W), w is 1x1xKxN, y MxNx1x1.
void runDense(const Tensor* x, const Tensor* w, const PostOps& post,
              const KnobSpec& knob, Tensor* y);
/// y = pool(x).
void runPool(const Tensor* x, const PoolArgs& args, const KnobSpec& knob,
             Tensor* y);
/// y = batchnorm(x) (y may be x), with an optional fused activation.
void runBatchNorm(const Tensor* x, const Tensor* gamma, const Tensor* beta,
                  const Tensor* mean, const Tensor* var, double eps, Act act,
                  float lo, float hi, const KnobSpec& knob, Tensor* y);
/// True when every dim of \p b is \p a's or 1 (b broadcasts against a).
inline bool broadcastsTo(const std::array<int64_t, 4>& b,
                         const std::array<int64_t, 4>& a) {
  for (size_t d = 0; d < 4; ++d)
    if (b[d] != a[d] && b[d] != 1)
      return false;
  return true;
}

/// How add's second operand (dims \p b) combines with its first (\p a):
/// the shape rule (Ops.cpp), runAdd and a convolution's fused bias agree.
enum class AddForm : uint8_t {
  Elementwise, ///< a's element count: b's values in a's dims.
  PerChannel,  ///< one value per channel of a: 1 x C x 1 x 1, or C values
               ///< in dims that do not broadcast against a.
  Broadcast,   ///< any other b whose dims are each a's or 1.
  None,        ///< no fit.
};
inline AddForm addForm(const std::array<int64_t, 4>& a,
                       const std::array<int64_t, 4>& b) {
  const int64_t na = a[0] * a[1] * a[2] * a[3], nb = b[0] * b[1] * b[2] * b[3];
  if (nb == na)
    return AddForm::Elementwise;
  if (broadcastsTo(b, a))
    return b[0] == 1 && b[1] == a[1] && b[2] == 1 && b[3] == 1
               ? AddForm::PerChannel
               : AddForm::Broadcast;
  return nb == a[1] ? AddForm::PerChannel : AddForm::None;
}

/// y = a + b (y may be a), b as addForm() says: a's element count
/// (elementwise), one value per channel, or broadcast (each dim a's or 1,
/// on plain NCHW values); optional fused activation.
void runAdd(const Tensor* a, const Tensor* b, Act act, float lo, float hi,
            const KnobSpec& knob, Tensor* y);
/// y = a * b (y may be a), b broadcast against a (each dim a's or 1): the
/// same shape, or 1 x 1 spatially (a squeeze-and-excitation gate N x C x 1
/// x 1, a per-channel constant 1 x C x 1 x 1) in a's layout, any other
/// (1 x 1 x 1 x W, 1 x C x H x 1) on plain NCHW values; optional fused
/// activation. \p quantizeOut > 0 asks for the result quantized for int8
/// readers, as PostOps::quantizeOut (honoured by the gate's broadcast, with
/// no activation, not in place).
void runMultiply(const Tensor* a, const Tensor* b, Act act, float lo, float hi,
                 const KnobSpec& knob, Tensor* y, float quantizeOut = 0.f,
                 bool quantizeS8 = false);
/// The element-wise arithmetic of two tensors beyond add and multiply.
enum class Arith : uint8_t { Sub, Div, Max, Min };
/// y = a <op> b (y may be a), b broadcast against a: each dim a's or 1.
void runArith(Arith op, const Tensor* a, const Tensor* b, const KnobSpec& knob,
              Tensor* y);
/// y = x ^ exponent (y may be x); exponent 0.5: the square root.
void runPower(const Tensor* x, float exponent, const KnobSpec& knob, Tensor* y);
/// y = act(x) (y may be x).
void runAct(const Tensor* x, Act act, float lo, float hi, const KnobSpec& knob,
            Tensor* y);
/// y = softmax over dim 1 of x viewed as N x (C*H*W) (y may be x).
void runSoftmax(const Tensor* x, const KnobSpec& knob, Tensor* y);
/// y = layer normalization of x over the channels of each pixel, times
/// gamma plus beta (1 x C x 1 x 1 each); y may be x.
void runLayerNorm(const Tensor* x, const Tensor* gamma, const Tensor* beta,
                  double eps, const KnobSpec& knob, Tensor* y);
/// y = softmax over the channels of each pixel of x (log-softmax when
/// \p log); y may be x.
void runChannelSoftmax(const Tensor* x, bool log, const KnobSpec& knob,
                       Tensor* y);
/// y = softmax over each run of C / \p groups consecutive channels of each
/// pixel of x (\p groups >= 1 dividing C; 1: runChannelSoftmax without
/// log); y may be x.
void runGroupSoftmax(const Tensor* x, int64_t groups, const KnobSpec& knob,
                     Tensor* y);
/// y = the \p n tensors \p parts (each N x C_i x H x W) one after another
/// along the channels; y is a tensor of its own. When bindChannelView()
/// planned y's storage (batch 1, fp32, every part a multiple of
/// viewChannelBlock() channels), a part already in place in y's channels
/// is not copied.
void runConcat(Tensor* const* parts, int n, const KnobSpec& knob, Tensor* y);
/// y = the \p n tensors \p parts (each N x C x H x W_i) one after another
/// along the width; y is a tensor of its own.
void runConcatWidth(Tensor* const* parts, int n, const KnobSpec& knob,
                    Tensor* y);
/// y = channels begin .. end - 1 of x; y is a tensor of its own.
void runChannelSlice(const Tensor* x, int64_t begin, int64_t end,
                     const KnobSpec& knob, Tensor* y);
/// y = x's channels shuffled in \p groups groups: channel i * (C / groups)
/// + j of x is channel j * groups + i of y; y is a tensor of its own.
void runChannelShuffle(const Tensor* x, int64_t groups, const KnobSpec& knob,
                       Tensor* y);
/// y (N x H x W x C, as dims) = x (N x C x H x W) with the channels last;
/// y is a tensor of its own.
void runChannelsLast(const Tensor* x, const KnobSpec& knob, Tensor* y);
/// y (N x C x H x W) = x (N x H x W x C, as dims: an NHWC input) with the
/// channels first; y is a tensor of its own.
void runChannelsFirst(const Tensor* x, const KnobSpec& knob, Tensor* y);
/// y (N x C x (1+H*W) x 1) = ViT's encoder input: token 0 the class token
/// \p cls (C elements), token 1 + p pixel p of x (N x C x H x W,
/// row-major), each plus its column of the position embedding \p pos
/// (C x (1+H*W) elements); y is a tensor of its own.
void runClassToken(const Tensor* x, const Tensor* cls, const Tensor* pos,
                   const KnobSpec& knob, Tensor* y);
/// y (N x C x H x W) = multi-head self-attention of qkv (N x 3C x H x W:
/// queries, keys, values along the channels, each \p heads heads of
/// D = C / heads channels; the H*W pixels are the tokens): per image and
/// head, softmax(Q K^T / sqrt(D)) V; y is a tensor of its own.
void runAttention(const Tensor* qkv, int64_t heads, const KnobSpec& knob,
                  Tensor* y);
/// y (N x C x 1 x 1) = pixel \p index (row-major) of x; y is a tensor of
/// its own.
void runSelectToken(const Tensor* x, int64_t index, const KnobSpec& knob,
                    Tensor* y);

// --- Table entries -----------------------------------------------------------

/// An activation applied to an op's result by its own kernel.
struct PostAct {
  Act act = Act::None;
  float lo = 0, hi = 0; ///< Its parameters (Clip's bounds, ...), else 0.
  /// The result quantized for int8 readers where the kernel can
  /// (PostOps::quantizeOut; runMultiply's gate), else 0.
  float quantizeOut = 0;
  bool quantizeS8 = false;
};

/// One call of an Ops.def operation: its tensor operands (a variadic op's
/// numIn of them), its scalar operands in the row's order (ScalarNames),
/// the activation its kernel applies after it (None unless the core's
/// fusesActivation() says the kernel has one), the knob, and the output
/// (dims set; storage is the kernel's; the first operand when in place).
struct OpCall {
  Tensor* const* in;
  int numIn;
  const double* scalars;
  PostAct post;
  const KnobSpec& knob;
  Tensor* out;
};

// Each Ops.def row's kernel: run<Kind>(const OpCall&), which runSingleOp()
// (core/Ops.cpp) calls for the row; a row without one is a link error.
// Entries.cpp has those of the kernels above, whose operands are spelled
// out; a new op's kernel can take the OpCall itself.
#define HPVM_OP(Kind, ...) void run##Kind(const OpCall& call);
#include "hpvm_rt/Ops.def"

/// The scalar operands of the three convolution rows: pads and strides
/// (conv); then HPVM's mode and groups (group_conv); then dilations and
/// groups (dilated_conv).
enum class ConvScalars : uint8_t { Plain, Grouped, Dilated };
/// Convolution geometry of a conv's scalar operands.
ConvArgs convArgsOf(const double* scalars, ConvScalars form);
/// Transposed convolution geometry of conv_transpose's scalar operands.
TransposeArgs transposeArgsOf(const double* scalars);
/// Pooling geometry of a pool's scalar operands: window, pads (the same at
/// both ends, or \p ownPads: top, left, bottom, right, and the mean counts
/// only the input), strides.
PoolArgs poolArgsOf(const double* scalars, PoolArgs::Kind kind, bool ownPads);

// --- Threads ----------------------------------------------------------------

/// Widens [lo, hi] to hold data[0..n) (NaNs are ignored), in parallel.
void extendRange(const float* data, int64_t n, float& lo, float& hi);

/// Sets the number of threads every kernel uses (0 = all cores).
void setNumThreads(int n);
int numThreads();

} // namespace hpvm::rt

#endif // HPVM_RT_KERNELS_KERNELS_H
