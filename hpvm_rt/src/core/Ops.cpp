// Ops.cpp - the tensor intrinsics and HPVM's direct tensor calls: shape
// rules (reference section 2), FLOP counts, and eager execution of single
// ops on the kernels.
#include "Core.h"
#include "Errors.h"
#include "Executor.h"
#include "hpvm.h"
#include "kernels/Kernels.h"
#include "tensor_runtime.h"

#include <cmath>

namespace hpvm::rt {

namespace {

int asInt(double v) { return static_cast<int>(v); }

} // namespace

ConvArgs convArgs(HpvmOp op, const double* s) {
  ConvArgs a;
  a.padH = asInt(s[0]);
  a.padW = asInt(s[1]);
  a.strideH = asInt(s[2]);
  a.strideW = asInt(s[3]);
  a.groups = op == HpvmOp::GroupConv ? asInt(s[5]) : 1;
  return a;
}

PoolArgs poolArgs(HpvmOp op, const double* s) {
  PoolArgs a;
  a.kind = op == HpvmOp::MaxPool ? PoolArgs::Max : PoolArgs::Avg;
  a.kh = asInt(s[0]);
  a.kw = asInt(s[1]);
  a.padH = asInt(s[2]);
  a.padW = asInt(s[3]);
  a.strideH = asInt(s[4]);
  a.strideW = asInt(s[5]);
  return a;
}

namespace {

/// Output extent of a window of \p k with padding \p p and stride \p s over
/// \p n; throws UserError if the geometry is invalid.
template <class Where>
int64_t windowExtent(int64_t n, int64_t k, int64_t p, int64_t s,
                     const char* axis, const Where& where) {
  if (k < 1 || s < 1 || p < 0)
    throw UserError(where() + ": bad " + axis + " geometry: window " +
                    std::to_string(k) + ", padding " + std::to_string(p) +
                    ", stride " + std::to_string(s) +
                    " (window and stride must be >= 1, padding >= 0)");
  if (n + 2 * p < k)
    throw UserError(where() + ": " + axis + " window " + std::to_string(k) +
                    " is larger than the padded input extent " +
                    std::to_string(n + 2 * p));
  return 1 + (n + 2 * p - k) / s;
}

bool isInPlace(HpvmOp op) { return opInfo(op).facts->inPlace; }

} // namespace

Shape inferShape(HpvmOp op, const Shape* in, const double* s, const char* api,
                 const std::string* node) {
  auto where = [&] {
    return node ? "node " + *node + ": " + api : std::string(api);
  };
  const Shape& x = in[0];
  switch (op) {
  case HpvmOp::Conv:
  case HpvmOp::GroupConv: {
    const Shape& w = in[1];
    ConvArgs a = convArgs(op, s);
    if (a.groups < 1)
      throw UserError(where() + ": group count " + std::to_string(a.groups) +
                      " must be >= 1");
    if (w[1] * a.groups != x[1] || w[0] % a.groups != 0)
      throw UserError(
          where() + ": input " + shapeText(x) + " does not fit filter " +
          shapeText(w) + " with " + std::to_string(a.groups) +
          " group(s) (need input channels = filter dim 1 x groups and "
          "filter dim 0 divisible by groups)");
    return {x[0], w[0],
            windowExtent(x[2], w[2], a.padH, a.strideH, "vertical", where),
            windowExtent(x[3], w[3], a.padW, a.strideW, "horizontal", where)};
  }
  case HpvmOp::Mul: {
    const Shape& w = in[1];
    int64_t k = x[1] * x[2] * x[3];
    if (w[0] * w[1] != 1 || w[2] != k)
      throw UserError(where() + ": input " + shapeText(x) + " (" +
                      std::to_string(k) + " features) does not fit weights " +
                      shapeText(w) + " (expected 1x1x" + std::to_string(k) +
                      "xN)");
    return {x[0], w[3], 1, 1};
  }
  case HpvmOp::Add: {
    int64_t nb = numElements(in[1]);
    if (nb != numElements(x) && nb != x[1])
      throw UserError(where() + ": cannot add " + shapeText(in[1]) + " to " +
                      shapeText(x) +
                      " (need the same element count, or one element "
                      "per channel)");
    return x;
  }
  case HpvmOp::Multiply: {
    const Shape& b = in[1];
    bool fits = (b[2] == x[2] && b[3] == x[3]) || (b[2] == 1 && b[3] == 1);
    for (int d = 0; d < 2; ++d)
      fits = fits && (b[d] == x[d] || b[d] == 1);
    if (!fits)
      throw UserError(where() + ": cannot multiply " + shapeText(x) + " by " +
                      shapeText(b) +
                      " (need the same shape, or 1 x 1 spatial extents with "
                      "each other dim the same or 1)");
    return x;
  }
  case HpvmOp::BatchNorm:
    for (int i = 1; i < 5; ++i)
      if (numElements(in[i]) != x[1])
        throw UserError(where() + ": batch norm operand " +
                        std::to_string(i + 1) + " has shape " +
                        shapeText(in[i]) + "; expected " +
                        std::to_string(x[1]) +
                        " elements (one per channel of " + shapeText(x) + ")");
    return x;
  case HpvmOp::MaxPool:
  case HpvmOp::AvgPool: {
    PoolArgs a = poolArgs(op, s);
    return {x[0], x[1],
            windowExtent(x[2], a.kh, a.padH, a.strideH, "vertical", where),
            windowExtent(x[3], a.kw, a.padW, a.strideW, "horizontal", where)};
  }
  case HpvmOp::ClippedRelu:
    if (!(s[0] <= s[1]))
      throw UserError(where() + ": clip bounds [" + std::to_string(s[0]) +
                      ", " + std::to_string(s[1]) + "] are empty");
    return x;
  case HpvmOp::HardSigmoid:
    if (!std::isfinite(s[0]) || !std::isfinite(s[1]))
      throw UserError(where() + ": hard sigmoid alpha " + std::to_string(s[0]) +
                      " and beta " + std::to_string(s[1]) + " must be finite");
    return x;
  case HpvmOp::Relu:
  case HpvmOp::Tanh:
  case HpvmOp::Sigmoid:
  case HpvmOp::HardSwish:
  case HpvmOp::Softmax:
    return x;
  }
  return x;
}

double opFlops(HpvmOp op, const Shape* in, const Shape& out, const double* s) {
  const OpFacts& f = *opInfo(op).facts;
  return opFlopsOf(f, double(numElements(out)),
                   f.tensorArgs > 1 ? in[1].data() : nullptr, s);
}

void runSingleOp(HpvmOp op, Tensor* const* in, const double* s,
                 const KnobSpec& knob, Tensor* out) {
  switch (op) {
  case HpvmOp::Conv:
  case HpvmOp::GroupConv:
    runConv(in[0], in[1], convArgs(op, s), PostOps{}, knob, out);
    return;
  case HpvmOp::Mul:
    runDense(in[0], in[1], PostOps{}, knob, out);
    return;
  case HpvmOp::Add:
    runAdd(in[0], in[1], Act::None, 0, 0, knob, out);
    return;
  case HpvmOp::Multiply:
    runMultiply(in[0], in[1], Act::None, 0, 0, knob, out);
    return;
  case HpvmOp::BatchNorm:
    runBatchNorm(in[0], in[1], in[2], in[3], in[4], s[0], Act::None, 0, 0, knob,
                 out);
    return;
  case HpvmOp::ClippedRelu:
  case HpvmOp::HardSigmoid:
    runAct(in[0], opInfo(op).facts->act, float(s[0]), float(s[1]), knob, out);
    return;
  case HpvmOp::Relu:
  case HpvmOp::Tanh:
  case HpvmOp::Sigmoid:
  case HpvmOp::HardSwish:
    runAct(in[0], opInfo(op).facts->act, 0, 0, knob, out);
    return;
  case HpvmOp::Softmax:
    runSoftmax(in[0], knob, out);
    return;
  case HpvmOp::MaxPool:
  case HpvmOp::AvgPool:
    runPool(in[0], poolArgs(op, s), knob, out);
    return;
  }
}

/// Eager execution (outside a launch): HPVM's semantics, in-place ops
/// write into their first operand and return it.
void* eagerOp(HpvmOp op, const char* api, void* const* tensors,
              const double* scalars) {
  const OpInfo& info = opInfo(op);
  Tensor* in[kMaxTensorArgs] = {};
  Shape shapes[kMaxTensorArgs];
  for (int i = 0; i < info.facts->tensorArgs; ++i) {
    if (!tensors[i])
      throw UserError(std::string(api) + ": tensor operand " +
                      std::to_string(i + 1) + " is NULL");
    in[i] = static_cast<Tensor*>(tensors[i]);
    shapes[i] = shapeOf(in[i]);
  }
  Shape outShape = inferShape(op, shapes, scalars, api, nullptr);
  Tensor* out = isInPlace(op) ? in[0] : newTensor(outShape, 4, true);
  runSingleOp(op, in, scalars, exactKnob(), out);
  return out;
}

} // namespace hpvm::rt

using hpvm::rt::HpvmOp;

// --- Intrinsics, expanded from Ops.def --------------------------------------

#define HPVM_RT_TPARAMS_1 void* t0
#define HPVM_RT_TPARAMS_2 void *t0, void *t1
#define HPVM_RT_TPARAMS_5 void *t0, void *t1, void *t2, void *t3, void *t4
#define HPVM_RT_TLIST_1 t0
#define HPVM_RT_TLIST_2 t0, t1
#define HPVM_RT_TLIST_5 t0, t1, t2, t3, t4
#define HPVM_RT_SPARAMS_0(T)
#define HPVM_RT_SPARAMS_1(T) , T s0
#define HPVM_RT_SPARAMS_2(T) , T s0, T s1
#define HPVM_RT_SPARAMS_4(T) , T s0, T s1, T s2, T s3
#define HPVM_RT_SPARAMS_6(T) , T s0, T s1, T s2, T s3, T s4, T s5
#define HPVM_RT_SLIST_0 0.0
#define HPVM_RT_SLIST_1 double(s0)
#define HPVM_RT_SLIST_2 double(s0), double(s1)
#define HPVM_RT_SLIST_4 double(s0), double(s1), double(s2), double(s3)
#define HPVM_RT_SLIST_6                                                        \
  double(s0), double(s1), double(s2), double(s3), double(s4), double(s5)

extern "C" {
#define HPVM_OP(Kind, ConfName, JsonType, Intrinsic, RtCall, TensorArgs,       \
                ScalarArgs, Knobs, FlopsPerElem, FlopsPerReduce, Fuse, Act,    \
                InPlace, ReduceOver, Scalar, Hpvm)                             \
  void* Intrinsic(                                                             \
      HPVM_RT_TPARAMS_##TensorArgs HPVM_RT_SPARAMS_##ScalarArgs(Scalar)) {     \
    void* const tensors[] = {HPVM_RT_TLIST_##TensorArgs};                      \
    const double scalars[] = {HPVM_RT_SLIST_##ScalarArgs};                     \
    return hpvm::rt::tensorOp(HpvmOp::Kind, #Intrinsic, tensors, scalars);     \
  }
#include "hpvm_rt/Ops.def"

// --- HPVM's direct calls ----------------------------------------------------

void* tensorConvolution(void* input, void* filter, int vertical_pad,
                        int horizontal_pad, int vertical_stride,
                        int horizontal_stride, int conv_mode, int conv_groups) {
  void* const tensors[] = {input, filter};
  const double scalars[] = {double(vertical_pad),    double(horizontal_pad),
                            double(vertical_stride), double(horizontal_stride),
                            double(conv_mode),       double(conv_groups)};
  return hpvm::rt::tensorOp(conv_groups > 1 ? HpvmOp::GroupConv : HpvmOp::Conv,
                            "tensorConvolution", tensors, scalars);
}

void* tensorPooling(void* input, int poolFunction, int window_height,
                    int window_width, int vertical_pad, int horizontal_pad,
                    int vertical_stride, int horizontal_stride) {
  if (poolFunction != 0 && poolFunction != 1)
    throw hpvm::rt::UserError(
        "tensorPooling: pool function " + std::to_string(poolFunction) +
        " is not supported (0 = max, 1 = mean; HPVM has no "
        "kernel for min pooling)");
  void* const tensors[] = {input};
  const double scalars[] = {double(window_height),   double(window_width),
                            double(vertical_pad),    double(horizontal_pad),
                            double(vertical_stride), double(horizontal_stride)};
  return hpvm::rt::tensorOp(poolFunction == 0 ? HpvmOp::MaxPool
                                              : HpvmOp::AvgPool,
                            "tensorPooling", tensors, scalars);
}

void* tensorGemmGPU(void* lhs, void* rhs) {
  void* const tensors[] = {lhs, rhs};
  const double scalars[] = {0.0};
  return hpvm::rt::tensorOp(HpvmOp::Mul, "tensorGemmGPU", tensors, scalars);
}

void* tensorGemmCPU(void* lhs, void* rhs) {
  void* const tensors[] = {lhs, rhs};
  const double scalars[] = {0.0};
  return hpvm::rt::tensorOp(HpvmOp::Mul, "tensorGemmCPU", tensors, scalars);
}

void* tensorAdd(void* x, void* bias) {
  void* const tensors[] = {x, bias};
  const double scalars[] = {0.0};
  return hpvm::rt::tensorOp(HpvmOp::Add, "tensorAdd", tensors, scalars);
}

void* tensorRelu(void* x) {
  void* const tensors[] = {x};
  const double scalars[] = {0.0};
  return hpvm::rt::tensorOp(HpvmOp::Relu, "tensorRelu", tensors, scalars);
}

void* tensorRelu2(void* x, float min, float max) {
  void* const tensors[] = {x};
  const double scalars[] = {double(min), double(max)};
  return hpvm::rt::tensorOp(HpvmOp::ClippedRelu, "tensorRelu2", tensors,
                            scalars);
}

void* tensorTanh(void* x) {
  void* const tensors[] = {x};
  const double scalars[] = {0.0};
  return hpvm::rt::tensorOp(HpvmOp::Tanh, "tensorTanh", tensors, scalars);
}

void* tensorSoftmax(void* x) {
  void* const tensors[] = {x};
  const double scalars[] = {0.0};
  return hpvm::rt::tensorOp(HpvmOp::Softmax, "tensorSoftmax", tensors, scalars);
}

void* tensorBatchNorm(void* x, void* scale, void* bias, void* mean,
                      void* variance, double epsilon) {
  void* const tensors[] = {x, scale, bias, mean, variance};
  const double scalars[] = {epsilon};
  return hpvm::rt::tensorOp(HpvmOp::BatchNorm, "tensorBatchNorm", tensors,
                            scalars);
}

} // extern "C"
