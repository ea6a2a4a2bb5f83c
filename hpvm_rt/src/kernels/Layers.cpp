// Layers.cpp - the layer kernels of Kernels.h on oneDNN: convolution and
// inner product with fused post-ops (bias, folded batch norm, activation,
// residual sum), pooling, batch norm, add, activations and softmax. The
// knob picks the numerics or hands the convolution to the approximate
// algorithms of namespace approx:
//   FP32 exact  oneDNN, fp32 throughout.
//   FP16        operands (input, weights after batch-norm folding, bias) and
//               the result rounded to binary16, fp32 arithmetic between:
//               the CPU stand-in for HPVM's half-precision GPU kernels.
//   BF16        oneDNN bf16 convolution/inner product (bf16 operands, fp32
//               accumulation and result) where the CPU has avx512_bf16 or
//               AMX; elsewhere the same numerics emulated by rounding the
//               operands (one warning per process).
//   PerfRow/PerfCol/Samp  approx:: on NCHW host data; the post-ops run
//               in the reference order (bit for bit; tanh as oneDNN's
//               eltwise, as in the exact path) inside the approximate
//               kernel's output pass (approx/Epilogue.h); FP16 variants
//               round operands and result as above.
// Non-convolution ops given a reduced-precision knob round their result.
#include "approx/Approx.h"
#include "approx/ConvGeometry.h"
#include "approx/Epilogue.h"
#include "approx/Isa.h"
#include "base/Errors.h"
#include "kernels/Reference.h"
#include "kernels/TensorImpl.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace hpvm::rt {
using namespace kern;

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

// --- Primitive cache --------------------------------------------------------

/// How a primitive adds PostOps::residual.
enum class ResidualAs : uint8_t {
  Binary, ///< A binary-add post-op reading the residual in place.
  Sum,    ///< A sum post-op: the residual is copied into dst first.
  Split,  ///< A separate add after the primitive (no fast fused kernel).
};

/// A created primitive with the layouts it was created for.
struct Prim {
  dnnl::primitive prim;
  dnnl::memory::desc src, weights, dst;
  ResidualAs residual = ResidualAs::Split;
  int binaryIndex = 0;    ///< Post-op index of the binary add.
  bool reference = false; ///< oneDNN's (slow) reference implementation.
};

/// True if a primitive descriptor fell back to oneDNN's reference code.
bool isRefImpl(const dnnl::primitive_desc_base& pd) {
  return std::strncmp(pd.impl_info_str(), "ref", 3) == 0;
}

std::mutex primMutex;
std::unordered_map<std::string, Prim>& primCache() {
  static std::unordered_map<std::string, Prim> cache;
  return cache;
}

/// Returns the cached primitive for \p key, creating it with \p make on
/// first use. oneDNN picks its implementation for the thread count at
/// creation, so every key includes numThreads().
template <typename Make> const Prim& cachedPrim(std::string key, Make make) {
  key += fmt::format("|t{}", numThreads());
  std::lock_guard<std::mutex> lock(primMutex);
  auto it = primCache().find(key);
  if (it != primCache().end())
    return it->second;
  return primCache().emplace(std::move(key), make()).first->second;
}

/// A buffer from the tensor buffer pool, returned on destruction.
class PoolBuffer {
public:
  explicit PoolBuffer(size_t bytes) : bytes_(bytes), p_(poolAlloc(bytes)) {}
  ~PoolBuffer() { poolFree(p_, bytes_); }
  PoolBuffer(const PoolBuffer&) = delete;
  PoolBuffer& operator=(const PoolBuffer&) = delete;
  void* get() const { return p_; }

private:
  size_t bytes_ = 0;
  void* p_ = nullptr;
};

// --- Numerics ---------------------------------------------------------------

/// True when oneDNN can run bf16 convolutions natively on this CPU.
bool haveNativeBf16() {
  return approx::isaLevel() >= approx::IsaLevel::Avx512Bf16;
}

/// Rounds n floats to the knob's precision (nothing for fp32).
void roundTo(Precision p, float* data, int64_t n) {
  if (p == Precision::FP16)
    approx::roundToHalf(data, n);
  else if (p == Precision::BF16)
    approx::roundToBf16(data, n);
}

/// Rounds y's values to the precision p (the result of a reduced-precision
/// op) on the host.
void roundResult(Precision p, Tensor* y) {
  if (p == Precision::FP32)
    return;
  TensorImpl& impl = implOf(y);
  if (impl.memValid) {
    // Rounding is elementwise: round the (blocked) oneDNN copy in place,
    // padding included (zeros stay zeros), without a layout round trip.
    roundTo(
        p, static_cast<float*>(impl.mem.get_data_handle()),
        static_cast<int64_t>(impl.mem.get_desc().get_size() / sizeof(float)));
    impl.hostValid = false;
    newValues(impl);
    impl.roundedTo = p;
    return;
  }
  ensureHost(y);
  roundTo(p, y->impl->host, numElems(y));
  markHostWritten(y);
  impl.roundedTo = p;
}

/// True when x's values are known to be exactly representable in p (so
/// rounding them to p would change nothing).
bool alreadyRounded(const Tensor* x, Precision p) {
  return p != Precision::FP32 && implOf(x).roundedTo == p;
}

/// y's new values are exactly representable in p when \p rounded (say so),
/// else they are rounded to p now.
void keepOrRound(bool rounded, Precision p, Tensor* y) {
  if (rounded)
    implOf(y).roundedTo = p;
  else
    roundResult(p, y);
}

/// y was just written on the host with values copied from x: x's rounding
/// is y's.
void markHostCopied(const Tensor* x, Precision p, Tensor* y) {
  const bool rounded = alreadyRounded(x, p);
  markHostWritten(y);
  keepOrRound(rounded, p, y);
}

/// to[0..n) = from[0..n) rounded to p, in one parallel pass.
void roundCopy(Precision p, const float* from, float* to, int64_t n) {
  constexpr int64_t kBlock = 4096;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t len = std::min(kBlock, n - b);
    std::memcpy(to + b, from + b, static_cast<size_t>(len) * sizeof(float));
    roundTo(p, to + b, len);
  }
}

/// How a conv/dense knob is computed on oneDNN: natively in bf16, or in
/// fp32 on operands rounded to fp16/bf16 (emulation).
struct Numerics {
  bool nativeBf16 = false;
  Precision roundOperands = Precision::FP32;
  Precision roundOutput = Precision::FP32;
};

Numerics numericsOf(const KnobSpec& knob) {
  Numerics nm;
  if (knob.precision == Precision::FP16) {
    nm.roundOperands = nm.roundOutput = Precision::FP16;
  } else if (knob.precision == Precision::BF16) {
    if (haveNativeBf16()) {
      nm.nativeBf16 = true;
    } else {
      static std::once_flag warned;
      std::call_once(warned, [] {
        std::fprintf(stderr, "hpvm_rt: warning: this CPU lacks avx512_bf16; "
                             "bf16 knobs are emulated by rounding\n");
      });
      nm.roundOperands = Precision::BF16;
    }
  }
  return nm;
}

/// One oneDNN eltwise operation: its algorithm, alpha and beta.
struct EltwiseStep {
  dnnl::algorithm alg = dnnl::algorithm::undef;
  float alpha = 0.f, beta = 0.f;
};

/// An activation as the oneDNN eltwise operations computing it, in order.
struct EltwiseSteps {
  EltwiseStep step[2];
  int count = 0;
};

/// act (lo, hi: its parameters) as oneDNN eltwise operations: one, except
/// for a hard sigmoid, which oneDNN 2.6 lacks (its eltwise_hardswish has
/// the fixed alpha 1/6, beta 1/2): alpha * x + beta, then a clip to
/// [0, 1]. None of them for Act::None.
EltwiseSteps eltwiseSteps(Act a, float lo, float hi) {
  using alg = dnnl::algorithm;
  switch (a) {
  case Act::None:
    return {};
  case Act::Relu:
    return {{{alg::eltwise_relu}}, 1};
  case Act::Clip:
    return {{{alg::eltwise_clip, lo, hi}}, 1};
  case Act::Tanh:
    return {{{alg::eltwise_tanh}}, 1};
  case Act::Sigmoid:
    return {{{alg::eltwise_logistic}}, 1};
  case Act::HardSigmoid:
    return {{{alg::eltwise_linear, lo, hi}, {alg::eltwise_clip, 0.f, 1.f}}, 2};
  case Act::HardSwish:
    return {{{alg::eltwise_hardswish}}, 1};
  case Act::Gelu:
    return {{{alg::eltwise_gelu_erf}}, 1};
  case Act::LeakyRelu: // (oneDNN's relu: alpha * x below zero)
    return {{{alg::eltwise_relu, lo}}, 1};
  }
  HPVM_UNREACHABLE("eltwiseSteps of an invalid Act");
}

/// Appends act as eltwise post-ops (nothing for Act::None).
void appendAct(dnnl::post_ops& ops, Act a, float lo, float hi) {
  const EltwiseSteps steps = eltwiseSteps(a, lo, hi);
  for (int i = 0; i < steps.count; ++i)
    ops.append_eltwise(1.f, steps.step[i].alg, steps.step[i].alpha,
                       steps.step[i].beta);
}

/// "a<act>lo,hi" for cache keys.
std::string actKey(Act a, float lo, float hi) {
  return fmt::format("a{}:{}:{}", static_cast<int>(a), lo, hi);
}

bool hasBn(const PostOps& p) { return p.bnGamma != nullptr; }

/// Checks that a per-channel parameter tensor has C elements.
void checkPerChannel(const Tensor* t, int64_t C, const char* what) {
  HPVM_ASSERT(t != nullptr && numElems(t) == C,
              fmt::format("{} must have {} elements, has {}", what, C,
                          t ? numElems(t) : 0));
}

/// "ptr@version" of an optional tensor, for keys of derived weights.
std::string tensorKey(const Tensor* t) {
  if (!t)
    return "-";
  return fmt::format("{}@{}", static_cast<const void*>(t), implOf(t).version);
}

// --- Weights with folded bias/batch norm ------------------------------------

/// The part of a derived-weights key naming what is folded into them.
std::string foldKey(const PostOps& post) {
  return fmt::format("{}|{}{}{}{}e{}", tensorKey(post.bias),
                     tensorKey(post.bnGamma), tensorKey(post.bnBeta),
                     tensorKey(post.bnMean), tensorKey(post.bnVar), post.bnEps);
}

/// w's derived entry named \p key, or null.
const TensorImpl::Derived* findDerived(TensorImpl& impl,
                                       const std::string& key) {
  for (const auto& d : impl.derived)
    if (d.key == key)
      return &d;
  return nullptr;
}

/// Keeps \p d with w's derived entries, a handful at most: the oldest one
/// (other than \p keep) makes room. Entries move: references taken before
/// are invalid afterwards.
const TensorImpl::Derived& storeDerived(TensorImpl& impl, TensorImpl::Derived d,
                                        const TensorImpl::Derived* keep = {}) {
  auto oldest =
      std::find_if(impl.derived.begin(), impl.derived.end(),
                   [&](const TensorImpl::Derived& e) { return &e != keep; });
  if (impl.derived.size() >= 4 && oldest != impl.derived.end())
    impl.derived.erase(oldest);
  impl.derived.push_back(std::move(d));
  return impl.derived.back();
}

/// The filter (OIHW, or K x N for dense) and the bias after folding the
/// batch norm of \p post: w'[k,...] = w[k,...] * s[k], b'[k] = beta[k] +
/// (b[k] - mean[k]) * s[k], s[k] = gamma[k] / sqrt(eps + var[k]).
/// \p kStride and \p kStep locate element e of output channel k at
/// w[k * kStride + e * kStep] (conv: kStride = C*KH*KW, kStep = 1; dense:
/// kStride = 1, kStep = N).
void foldPostOps(const PostOps& post, int64_t K, int64_t perK, int64_t kStride,
                 int64_t kStep, std::vector<float>& w, std::vector<float>& b) {
  b.assign(K, 0.f);
  if (post.bias) {
    checkPerChannel(post.bias, K, "bias");
    const float* bp = hostData(post.bias);
    std::copy(bp, bp + K, b.begin());
  }
  if (!hasBn(post))
    return;
  checkPerChannel(post.bnGamma, K, "batch norm gamma");
  checkPerChannel(post.bnBeta, K, "batch norm beta");
  checkPerChannel(post.bnMean, K, "batch norm mean");
  checkPerChannel(post.bnVar, K, "batch norm variance");
  const float* g = hostData(post.bnGamma);
  const float* be = hostData(post.bnBeta);
  const float* m = hostData(post.bnMean);
  const float* v = hostData(post.bnVar);
  for (int64_t k = 0; k < K; ++k) {
    double s = g[k] / std::sqrt(post.bnEps + v[k]);
    for (int64_t e = 0; e < perK; ++e) {
      float& wv = w[k * kStride + e * kStep];
      wv = static_cast<float>(wv * s);
    }
    b[k] = static_cast<float>(be[k] + (b[k] - m[k]) * s);
  }
}

/// Returns the weights (in layout \p want) and bias (f32, K elements) for
/// a conv or dense layer, derived from w and the post-ops once and cached
/// on w until any of the tensors involved changes.
const TensorImpl::Derived& derivedWeights(const Tensor* w, const PostOps& post,
                                          const dnnl::memory::desc& plain,
                                          const dnnl::memory::desc& want,
                                          int64_t K, int64_t perK,
                                          int64_t kStride, int64_t kStep,
                                          Precision roundOperands) {
  TensorImpl& impl = implOf(w);
  std::string key = fmt::format("{}|{}|p{}|{}", descKey(want), descKey(plain),
                                static_cast<int>(roundOperands), foldKey(post));
  if (const TensorImpl::Derived* found = findDerived(impl, key))
    return *found;
  // Fold bias and batch norm into a host copy of the weights.
  const float* wp = hostData(w);
  std::vector<float> wf(wp, wp + numElems(w)), bf;
  foldPostOps(post, K, perK, kStride, kStep, wf, bf);
  roundTo(roundOperands, wf.data(), static_cast<int64_t>(wf.size()));
  if (roundOperands == Precision::FP16)
    roundTo(roundOperands, bf.data(), K);
  // Reorder the folded weights into the layout the primitive wants.
  TensorImpl::Derived d;
  d.key = std::move(key);
  d.weights = dnnl::memory(want, engine());
  reorder(dnnl::memory(plain, engine(), wf.data()), d.weights);
  d.bias = dnnl::memory({{K}, dt::f32, tag::x}, engine());
  std::memcpy(d.bias.get_data_handle(), bf.data(), K * sizeof(float));
  return storeDerived(impl, std::move(d));
}

/// The source as the primitive needs it: x in layout \p want, with its
/// values rounded first when the knob emulates a lower precision.
dnnl::memory sourceFor(const Tensor* x, const dnnl::memory::desc& want,
                       Precision roundOperands, std::vector<float>& scratch,
                       std::unique_ptr<PoolBuffer>& hold) {
  // The reorder into the wanted layout goes to a pooled buffer (no fresh
  // allocation and page faults per call), held until the caller returns.
  auto reorderedInto = [&](const dnnl::memory& from) {
    hold = std::make_unique<PoolBuffer>(want.get_size());
    dnnl::memory out(want, engine(), hold->get());
    reorder(from, out);
    return out;
  };
  // bf16 chains: the previous bf16 layer stored x as bf16 already.
  const dnnl::memory stored = storedMemory(x);
  const dt storedType = stored.get_desc().data_type();
  if (storedType == dt::bf16 && want.data_type() == dt::bf16)
    return stored.get_desc() == want ? stored : reorderedInto(stored);
  if (roundOperands == Precision::FP32 || alreadyRounded(x, roundOperands)) {
    const dnnl::memory cur = currentMemory(x);
    return cur.get_desc() == want ? cur : reorderedInto(cur);
  }
  // Rounded in x's current layout (elementwise, padding stays zero), then
  // reordered only if the primitive wants another.
  const dnnl::memory cur = currentMemory(x);
  const int64_t n =
      static_cast<int64_t>(cur.get_desc().get_size() / sizeof(float));
  scratch.resize(static_cast<size_t>(n));
  roundCopy(roundOperands, static_cast<const float*>(cur.get_data_handle()),
            scratch.data(), n);
  dnnl::memory rounded(cur.get_desc(), engine(), scratch.data());
  return rounded.get_desc() == want ? rounded : reorderedInto(rounded);
}

/// Post-ops attr for the activation/residual chain after bias and batch
/// norm; the residual is added as \p how says (\p dst: the layout of the
/// output, which a binary post-op's residual must have).
dnnl::primitive_attr postOpsAttr(const PostOps& post, ResidualAs how,
                                 const dnnl::memory::desc& dst = {},
                                 bool runtimeScale = false) {
  dnnl::post_ops ops;
  // A scale known only at run time (int8_dyn's input scale): a binary
  // multiply by a 1x1x1x1 tensor before everything else.
  if (runtimeScale)
    ops.append_binary(dnnl::algorithm::binary_mul,
                      dnnl::memory::desc({1, 1, 1, 1}, dt::f32, tag::nchw));
  appendAct(ops, post.act, post.actLo, post.actHi);
  if (post.residual && how != ResidualAs::Split) {
    if (how == ResidualAs::Binary)
      ops.append_binary(dnnl::algorithm::binary_add, dst);
    else
      ops.append_sum(1.f);
    appendAct(ops, post.act2, post.act2Lo, post.act2Hi);
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  return attr;
}

std::string postKey(const PostOps& post) {
  return actKey(post.act, post.actLo, post.actHi) +
         (post.residual ? "+s" + actKey(post.act2, post.act2Lo, post.act2Hi)
                        : std::string());
}

/// The post-ops of a convolution computed unfused on the host (NCHW):
/// bias, batch norm, act, residual, act2 in the reference order (bit for
/// bit ref::add, ref::batchNorm and ref::act), then the rounding to
/// `roundOutput`. The approximate convolutions run it on their output
/// while it is in cache. `part` selects the steps: all of them, the head
/// (bias and batch norm: the steps before the activation) or the tail
/// (residual, act2 and rounding: the steps after it).
class HostPostOps final : public approx::Epilogue,
                          public approx::BlockedEpilogue {
public:
  enum class Part : uint8_t { All, Head, Tail };

  /// With `blocked`, the output (and the residual, given later by
  /// setBlockedResidual) is nChw16c and applyRow() is the entry point.
  HostPostOps(const PostOps& post, int64_t N, int64_t K, int64_t HW,
              Precision roundOutput, Part part, bool blocked = false)
      : post_(post), k_(K), hw_(HW), round_(roundOutput), part_(part) {
    if (post.bias) {
      checkPerChannel(post.bias, K, "bias");
      bias_ = hostData(post.bias);
    }
    if (hasBn(post)) {
      checkPerChannel(post.bnGamma, K, "batch norm gamma");
      checkPerChannel(post.bnBeta, K, "batch norm beta");
      checkPerChannel(post.bnMean, K, "batch norm mean");
      checkPerChannel(post.bnVar, K, "batch norm variance");
      gamma_ = hostData(post.bnGamma);
      beta_ = hostData(post.bnBeta);
      mean_ = hostData(post.bnMean);
      const float* var = hostData(post.bnVar);
      den_.resize(K);
      for (int64_t k = 0; k < K; ++k)
        den_[k] = static_cast<float>(std::sqrt(post.bnEps + var[k]));
    }
    if (post.residual) {
      HPVM_ASSERT(numElems(post.residual) == N * K * HW,
                  "residual must have the output's shape, has " +
                      dimsStr(post.residual));
      if (!blocked)
        residual_ = hostData(post.residual);
    }
  }

  /// The residual's values in the output's nChw16c layout.
  void setBlockedResidual(const float* r) { residual_ = r; }

  /// True when apply() changes nothing.
  bool empty() const {
    const bool head =
        bias_ || gamma_ || (part_ == Part::All && post_.act != Act::None);
    const bool tail = post_.residual || round_ != Precision::FP32;
    return !(part_ != Part::Tail && head) && !(part_ != Part::Head && tail);
  }

  void apply(int64_t n, int64_t k, int64_t off, float* v,
             int64_t len) const override {
    if (part_ != Part::Tail)
      applyHead(k, v, len);
    if (part_ != Part::Head)
      applyTail(n, k, off, v, len);
  }

  void applyRow(int64_t n, int64_t cb, int64_t h, float* v,
                int64_t wo) const override {
    const int64_t k0 = cb * 16, len = wo * 16;
    if (part_ != Part::Tail) {
      if (bias_) {
        const float* b = bias_ + k0;
        for (int64_t x = 0; x < wo; ++x)
#pragma omp simd
          for (int64_t l = 0; l < 16; ++l)
            v[x * 16 + l] = v[x * 16 + l] + b[l];
      }
      if (gamma_) {
        const float *g = gamma_ + k0, *be = beta_ + k0, *m = mean_ + k0;
        const float* den = den_.data() + k0;
        for (int64_t x = 0; x < wo; ++x)
#pragma omp simd
          for (int64_t l = 0; l < 16; ++l)
            v[x * 16 + l] = be[l] + g[l] * (v[x * 16 + l] - m[l]) / den[l];
      }
      if (part_ == Part::All)
        actInPlace(v, len, post_.act, post_.actLo, post_.actHi);
    }
    if (part_ != Part::Head) {
      if (residual_) {
        const float* r = residual_ + ((n * (k_ / 16) + cb) * hw_ + h * wo) * 16;
#pragma omp simd
        for (int64_t i = 0; i < len; ++i)
          v[i] = v[i] + r[i];
        actInPlace(v, len, post_.act2, post_.act2Lo, post_.act2Hi);
      }
      roundTo(round_, v, len);
    }
  }

private:
  void applyHead(int64_t k, float* v, int64_t len) const {
    if (bias_) {
      const float b = bias_[k];
#pragma omp simd
      for (int64_t i = 0; i < len; ++i)
        v[i] = v[i] + b;
    }
    if (gamma_) {
      const float g = gamma_[k], be = beta_[k], m = mean_[k], den = den_[k];
#pragma omp simd
      for (int64_t i = 0; i < len; ++i)
        v[i] = be + g * (v[i] - m) / den;
    }
    if (part_ == Part::All)
      actInPlace(v, len, post_.act, post_.actLo, post_.actHi);
  }

  void applyTail(int64_t n, int64_t k, int64_t off, float* v,
                 int64_t len) const {
    if (residual_) {
      const float* r = residual_ + (n * k_ + k) * hw_ + off;
#pragma omp simd
      for (int64_t i = 0; i < len; ++i)
        v[i] = v[i] + r[i];
      actInPlace(v, len, post_.act2, post_.act2Lo, post_.act2Hi);
    }
    roundTo(round_, v, len);
  }

  /// Applies act to n floats in place with ref::act's arithmetic, the
  /// activation chosen outside the loop so that the loop vectorises.
  static void actInPlace(float* v, int64_t n, Act act, float lo, float hi) {
    switch (act) {
    case Act::None:
      return;
    case Act::Relu:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i)
        v[i] = v[i] < 0.f ? 0.f : v[i];
      return;
    case Act::Clip:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i)
        v[i] = v[i] < lo ? lo : (v[i] > hi ? hi : v[i]);
      return;
    case Act::Tanh:
      for (int64_t i = 0; i < n; ++i)
        v[i] = std::tanh(v[i]);
      return;
    case Act::Sigmoid:
      for (int64_t i = 0; i < n; ++i)
        v[i] = 1.f / (1.f + std::exp(-v[i]));
      return;
    case Act::HardSigmoid:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i)
        v[i] = hardSigmoid(v[i], lo, hi);
      return;
    case Act::HardSwish:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i)
        v[i] = hardSwish(v[i]);
      return;
    case Act::Gelu:
      for (int64_t i = 0; i < n; ++i)
        v[i] = gelu(v[i]);
      return;
    case Act::LeakyRelu:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i)
        v[i] = v[i] > 0.f ? v[i] : v[i] * lo;
      return;
    }
  }

  const PostOps& post_;
  int64_t k_, hw_;
  Precision round_;
  Part part_;
  const float* bias_ = nullptr;
  const float *gamma_ = nullptr, *beta_ = nullptr, *mean_ = nullptr;
  std::vector<float> den_;
  const float* residual_ = nullptr;
};

/// memcpy split over the kernel threads.
void parallelCopy(void* to, const void* from, size_t bytes) {
  constexpr size_t kChunk = size_t(1) << 20;
  const int64_t chunks = static_cast<int64_t>((bytes + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < chunks; ++i) {
    size_t off = static_cast<size_t>(i) * kChunk;
    std::memcpy(static_cast<char*>(to) + off,
                static_cast<const char*>(from) + off,
                std::min(kChunk, bytes - off));
  }
}

/// Loads the residual into the output memory ahead of a sum post-op.
void preloadResidual(const PostOps& post, const dnnl::memory& dst) {
  if (!post.residual)
    return;
  dnnl::memory res = currentMemory(post.residual);
  const dims dd = dst.get_desc().dims();
  int64_t count = 1;
  for (int64_t d : dd)
    count *= d;
  HPVM_ASSERT(numElems(post.residual) == count,
              "residual " + dimsStr(post.residual) +
                  " has not the output's element count");
  if (res.get_desc().dims() != dd) {
    // Same element count, other dims (say 2-D vs 4-D): view the NCHW
    // values with the output's dims, row-major, and reorder from there.
    dnnl::memory plain({dd, dt::f32, dd.size() == 2 ? tag::nc : tag::nchw},
                       engine(), const_cast<float*>(hostData(post.residual)));
    reorder(plain, dst);
    return;
  }
  if (res.get_desc() == dst.get_desc()) {
    // Same layout: a parallel copy (oneDNN's reorder would take its slow
    // generic path for an identity reorder of a blocked layout).
    parallelCopy(dst.get_data_handle(), res.get_data_handle(),
                 dst.get_desc().get_size());
    return;
  }
  reorder(res, dst);
}

/// Runs conv or inner-product primitive \p p on \p args (which hold its
/// source, weights, bias and destination), adding the residual as p was
/// made to: copied into the destination for a sum post-op, read in place
/// by a binary one. A split residual is left to the caller.
void executeLayer(const Prim& p, const PostOps& post,
                  std::unordered_map<int, dnnl::memory> args) {
  if (post.residual && p.residual == ResidualAs::Sum)
    preloadResidual(post, args.at(DNNL_ARG_DST));
  if (post.residual && p.residual == ResidualAs::Binary)
    args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(p.binaryIndex) | DNNL_ARG_SRC_1] =
        memoryAs(post.residual, p.dst);
  p.prim.execute(stream(), args);
  stream().wait();
}

void checkConvShapes(const Dims4& xd, const Dims4& wd, const Dims4& yd,
                     const ConvArgs& a) {
  auto shapes = [&] {
    return fmt::format("x {}x{}x{}x{}, w {}x{}x{}x{}, y {}x{}x{}x{}, pad {}x{}"
                       ", stride {}x{}, groups {}",
                       xd[0], xd[1], xd[2], xd[3], wd[0], wd[1], wd[2], wd[3],
                       yd[0], yd[1], yd[2], yd[3], a.padH, a.padW, a.strideH,
                       a.strideW, a.groups);
  };
  HPVM_ASSERT(a.groups >= 1 && a.strideH >= 1 && a.strideW >= 1 &&
                  a.padH >= 0 && a.padW >= 0,
              "bad conv arguments: " + shapes());
  HPVM_ASSERT(xd[1] == wd[1] * a.groups && wd[0] % a.groups == 0,
              "conv channels do not match the groups: " + shapes());
  int64_t Ho = 1 + (xd[2] + 2 * a.padH - wd[2]) / a.strideH;
  int64_t Wo = 1 + (xd[3] + 2 * a.padW - wd[3]) / a.strideW;
  HPVM_ASSERT(xd[2] + 2 * a.padH >= wd[2] && xd[3] + 2 * a.padW >= wd[3],
              "conv window larger than the padded input: " + shapes());
  HPVM_ASSERT(yd[0] == xd[0] && yd[1] == wd[0] && yd[2] == Ho && yd[3] == Wo,
              "conv output dims wrong: " + shapes());
}

/// dst = act(src) with oneDNN (defined with the activations below).
void eltwise(const dnnl::memory& src, const dnnl::memory& dst, Act act,
             float lo, float hi);

// --- int8 -------------------------------------------------------------------

/// How an int8 knob quantizes a layer's input: unsigned 0..255 when its
/// range is nonnegative (after a ReLU), else signed symmetric -127..127;
/// real value = q * scale.
struct ActQuant {
  bool u8 = true;
  float scale = 1.f;
};

ActQuant actQuantOf(float lo, float hi) {
  ActQuant q;
  q.u8 = lo >= 0.f;
  const float m = q.u8 ? hi : std::max(-lo, hi);
  if (m > 0.f && m <= 3.0e38f) // as int8UnsignedScale()
    q.scale = m / (q.u8 ? 255.f : 127.f);
  return q;
}

/// The smallest and largest value of x (over its current memory: the zero
/// padding of a blocked layout changes neither the sign test nor the
/// largest magnitude).
std::pair<float, float> valueRange(const Tensor* x) {
  const dnnl::memory cur = currentMemory(x);
  float lo = INFINITY, hi = -INFINITY;
  extendRange(static_cast<const float*>(cur.get_data_handle()),
              static_cast<int64_t>(cur.get_desc().get_size() / sizeof(float)),
              lo, hi);
  return {lo, hi};
}

/// The quantization of an int8 layer's input: from the calibrated range
/// (INT8) or from this batch's own range (INT8DYN).
ActQuant inputQuant(const KnobSpec& knob, const Tensor* x) {
  if (knob.precision == Precision::INT8) {
    HPVM_ASSERT(knob.hasRange,
                fmt::format("int8 knob {} has no calibrated range", knob.id));
    return actQuantOf(knob.inLo, knob.inHi);
  }
  const auto [lo, hi] = valueRange(x);
  ActQuant q = actQuantOf(lo, hi);
  // The batch's scale is rounded up to a grid of 16 steps per octave (at
  // most 4.4% of the 8-bit range unused): batches of similar ranges
  // quantize alike.
  q.scale = std::exp2(std::ceil(std::log2(q.scale) * 16.f) / 16.f);
  return q;
}

/// x quantized into layout \p want (u8 or s8): q = saturate(round(x /
/// scale)), in one reorder from x's current layout into \p buf. When the
/// previous int8 layer already stored x as u8 with this scale, its values
/// are used as they are (reordered only if the layout differs).
dnnl::memory quantizedSource(const Tensor* x, const dnnl::memory::desc& want,
                             float scale, const PoolBuffer& buf) {
  const dnnl::memory stored = storedMemory(x);
  if (stored.get_desc().data_type() == dt::u8 && want.data_type() == dt::u8 &&
      implOf(x).memScale == scale) {
    if (stored.get_desc() == want)
      return stored;
    dnnl::memory out(want, engine(), buf.get());
    reorder(stored, out);
    return out;
  }
  const dnnl::memory cur = currentMemory(x);
  const std::string key =
      fmt::format("quant|{}|{}", descKey(cur.get_desc()), descKey(want));
  const Prim& r = cachedPrim(key, [&] {
    dnnl::primitive_attr attr;
    attr.set_output_scales(0, {DNNL_RUNTIME_F32_VAL});
    dnnl::reorder::primitive_desc pd(engine(), cur.get_desc(), engine(), want,
                                     attr);
    return Prim{dnnl::reorder(pd), cur.get_desc(), {}, want};
  });
  dnnl::memory out(want, engine(), buf.get());
  float inv = 1.f / scale;
  dnnl::memory invMem({{1}, dt::f32, tag::x}, engine(), &inv);
  r.prim.execute(stream(), {{DNNL_ARG_FROM, cur},
                            {DNNL_ARG_TO, out},
                            {DNNL_ARG_ATTR_OUTPUT_SCALES, invMem}});
  stream().wait();
  return out;
}

/// How int8 weights are coded for oneDNN. With VNNI (or AMX) 8 bits,
/// -127..127. Below it oneDNN multiplies u8 by s8 with vpmaddubsw, whose
/// pair sums saturate at 16 bits: weights get 7 bits, -63..63 (the
/// largest pair sum 2 * 255 * 63 fits); its convolutions of s8 sources
/// also halve the weights (rounding odd ones), so for them the 7-bit values
/// are stored doubled (even, exact after halving) with half the scale.
struct Int8Code {
  float qmax = 127.f;
  bool doubled = false;
};
Int8Code int8Code(dt srcType, bool convolution) {
  if (approx::int8Vnni())
    return {};
  return {63.f, convolution && srcType == dt::s8};
}

/// The int8 weights of a conv or dense layer in their plain layout
/// \p plainTag: bias and batch norm folded in (foldPostOps), then each
/// output channel quantized symmetrically to -qmax..qmax with its own scale
/// (largest magnitude / qmax; `code`). Cached on w like derivedWeights():
/// `weights` is the plain s8 filter, `bias` the folded fp32 bias, `scales`
/// the per-channel weight scales.
const TensorImpl::Derived& int8Plain(const Tensor* w, const PostOps& post,
                                     const dims& wDims, tag plainTag, int64_t K,
                                     int64_t perK, int64_t kStride,
                                     int64_t kStep, Int8Code code) {
  TensorImpl& impl = implOf(w);
  std::string key = fmt::format("int8|{}|{}{}", foldKey(post), code.qmax,
                                code.doubled ? "x2" : "");
  if (const TensorImpl::Derived* found = findDerived(impl, key))
    return *found;
  const float* wp = hostData(w);
  std::vector<float> wf(wp, wp + numElems(w)), bf;
  foldPostOps(post, K, perK, kStride, kStep, wf, bf);
  TensorImpl::Derived d;
  d.key = std::move(key);
  d.scales.assign(static_cast<size_t>(K), 1.f);
  d.weights = dnnl::memory({wDims, dt::s8, plainTag}, engine());
  int8_t* q = static_cast<int8_t*>(d.weights.get_data_handle());
  for (int64_t k = 0; k < K; ++k) {
    float m = 0.f;
    for (int64_t e = 0; e < perK; ++e)
      m = std::max(m, std::fabs(wf[k * kStride + e * kStep]));
    const float s = m > 0.f && std::isfinite(m) ? m / code.qmax : 1.f;
    const float times = code.doubled ? 2.f : 1.f;
    d.scales[k] = s / times;
    for (int64_t e = 0; e < perK; ++e) {
      const int64_t i = k * kStride + e * kStep;
      q[i] = static_cast<int8_t>(
          times * std::clamp(std::nearbyint(wf[i] / s), -code.qmax, code.qmax));
    }
  }
  d.bias = dnnl::memory({{K}, dt::f32, tag::x}, engine());
  std::memcpy(d.bias.get_data_handle(), bf.data(), K * sizeof(float));
  return storeDerived(impl, std::move(d));
}

/// w quantized per output channel as it is (no bias or batch norm folded
/// in: the perforated int8 convolution runs its post-ops in its output
/// pass, in fp32, like the other approximate convolutions).
const TensorImpl::Derived& int8Unfolded(const Tensor* w, int64_t groups,
                                        Int8Code code) {
  const Dims4 wd = dims4(w);
  const int64_t K = wd[0], perK = wd[1] * wd[2] * wd[3];
  const dims wDims = groups == 1
                         ? dims{K, wd[1], wd[2], wd[3]}
                         : dims{groups, K / groups, wd[1], wd[2], wd[3]};
  return int8Plain(w, PostOps{}, wDims, groups == 1 ? tag::oihw : tag::goihw, K,
                   perK, perK, 1, code);
}

/// w quantized per output channel (int8Unfolded) and dequantized to fp32:
/// the filter the fp32 engines compute int8 knobs with where the int8
/// engines do not apply. Cached on w.
const float* dequantizedWeights(const Tensor* w, int64_t groups) {
  TensorImpl& impl = implOf(w);
  const std::string key = "int8-dequantized";
  if (const TensorImpl::Derived* found = findDerived(impl, key))
    return static_cast<const float*>(found->weights.get_data_handle());
  const TensorImpl::Derived& plain =
      int8Unfolded(w, groups, int8Code(dt::u8, false));
  const int8_t* q = static_cast<const int8_t*>(plain.weights.get_data_handle());
  const int64_t n = numElems(w), perK = n / dims4(w)[0];
  TensorImpl::Derived d;
  d.key = key;
  d.weights = dnnl::memory({{n}, dt::f32, tag::x}, engine());
  float* out = static_cast<float*>(d.weights.get_data_handle());
  for (int64_t i = 0; i < n; ++i)
    out[i] = float(q[i]) * plain.scales[size_t(i / perK)];
  storeDerived(impl, std::move(d), &plain);
  return out;
}

/// The plain int8 weights \p plain reordered into the primitive's layout
/// \p want (which may carry oneDNN's signed-source compensation), cached on
/// w next to them.
dnnl::memory int8Weights(const Tensor* w, const TensorImpl::Derived& plain,
                         const dnnl::memory::desc& want) {
  TensorImpl& impl = implOf(w);
  const std::string key = plain.key + "|" + descKey(want);
  if (const TensorImpl::Derived* found = findDerived(impl, key))
    return found->weights;
  TensorImpl::Derived d;
  d.key = key;
  d.weights = dnnl::memory(want, engine());
  reorder(plain.weights, d.weights);
  // The plain entry stays (it is what the reordered one comes from).
  return storeDerived(impl, std::move(d), &plain).weights;
}

/// The runtime arguments of an int8 layer for input scale sx: the output
/// scales sx * ws[k] that turn the 32-bit accumulator into real values,
/// and the fp32 bias in accumulator units (oneDNN adds the bias before
/// scaling).
struct Int8Args {
  std::vector<float> scales, bias;
  Int8Args(const TensorImpl::Derived& d, float sx) {
    const size_t K = d.scales.size();
    const float* b = static_cast<const float*>(d.bias.get_data_handle());
    scales.resize(K);
    bias.resize(K);
    for (size_t k = 0; k < K; ++k) {
      scales[k] = sx * d.scales[k];
      bias[k] = b[k] / scales[k];
    }
  }
};

/// w's values (NCHW) rounded to precision p, computed once per version of
/// w and cached with its other derived weights.
const float* roundedWeights(const Tensor* w, Precision p) {
  TensorImpl& impl = implOf(w);
  const std::string key =
      fmt::format("approx-rounded|p{}", static_cast<int>(p));
  if (const TensorImpl::Derived* found = findDerived(impl, key))
    return static_cast<const float*>(found->weights.get_data_handle());
  const float* wp = hostData(w);
  const int64_t n = numElems(w);
  TensorImpl::Derived d;
  d.key = key;
  d.weights = dnnl::memory({{n}, dt::f32, tag::x}, engine());
  float* out = static_cast<float*>(d.weights.get_data_handle());
  std::copy(wp, wp + n, out);
  roundTo(p, out, n);
  storeDerived(impl, std::move(d));
  return out;
}

/// The blocked engine's post-ops when the activation is a tanh or sigmoid:
/// bias and batch norm on each row (head), then oneDNN's vectorised
/// activation (as in the exact convolution) over each chunk of finished
/// images while it is in cache, then residual, act2 and rounding (tail).
class BlockedEltwisePostOps final : public approx::BlockedEpilogue {
public:
  BlockedEltwisePostOps(const PostOps& post, int64_t N, int64_t K, int64_t Ho,
                        int64_t Wo, Precision roundOutput)
      : head_(post, N, K, Ho * Wo, roundOutput, HostPostOps::Part::Head,
              /*blocked=*/true),
        tail_(post, N, K, Ho * Wo, roundOutput, HostPostOps::Part::Tail,
              /*blocked=*/true),
        act_(post.act), k_(K), ho_(Ho), wo_(Wo) {}

  void setBlockedResidual(const float* r) { tail_.setBlockedResidual(r); }

  void applyRow(int64_t n, int64_t cb, int64_t h, float* v,
                int64_t wo) const override {
    head_.applyRow(n, cb, h, v, wo);
  }
  bool wantsImages() const override { return true; }
  void applyImages(float* y, int64_t n0, int64_t count) const override {
    const int64_t len = count * k_ * ho_ * wo_;
    dnnl::memory all({{len}, dt::f32, tag::x}, engine(), y);
    eltwise(all, all, act_, 0.f, 0.f);
    if (tail_.empty())
      return;
    const int64_t rows = count * (k_ / 16) * ho_;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r)
      tail_.applyRow(n0 + r / ((k_ / 16) * ho_), (r / ho_) % (k_ / 16), r % ho_,
                     y + r * wo_ * 16, wo_);
  }

private:
  HostPostOps head_, tail_;
  Act act_;
  int64_t k_, ho_, wo_;
};

/// The part of an approximate call's BlockedConv that decides whether a
/// blocked engine applies (geometry, knob, numerics, int8 output scales),
/// or nothing where the blocked output does not fit the call (K not in
/// blocks of 16, a residual of other dims).
std::optional<approx::BlockedConv>
blockedShape(const Tensor* x, const Tensor* w, const ConvArgs& a,
             const PostOps& post, const KnobSpec& knob, const Dims4& xd,
             const Dims4& wd, const Dims4& yd) {
  if (yd[1] % 16 != 0 || (post.residual && dims4(post.residual) != yd))
    return std::nullopt;
  approx::BlockedConv bc;
  bc.n = xd[0];
  bc.c = xd[1];
  bc.h = xd[2];
  bc.w = xd[3];
  bc.k = wd[0];
  bc.kh = wd[2];
  bc.kw = wd[3];
  bc.args = a;
  bc.knob = knob;
  // bf16 perforation and sampling run natively where the CPU has bf16 dot
  // products; fp16 (and bf16 elsewhere) rounds fp32 operands.
  bc.bf16 = knob.precision == Precision::BF16 && numericsOf(knob).nativeBf16;
  if (knob.precision == Precision::INT8) {
    // (int8 sampling needs C in blocks of 16 and no groups: skip the
    // filter's quantization where it cannot apply.)
    if (knob.variant == Variant::Samp && (a.groups != 1 || xd[1] % 16 != 0))
      return std::nullopt;
    const ActQuant aq = inputQuant(knob, x);
    bc.int8Type = aq.u8 ? dt::u8 : dt::s8;
    // (perforation runs convolutions, sampling a matmul)
    const Int8Code code = int8Code(bc.int8Type, knob.variant != Variant::Samp);
    for (float s : int8Unfolded(w, a.groups, code).scales)
      bc.int8.outScales.push_back(aq.scale * s);
  }
  return bc;
}

/// Perforated or sampled convolution on the activations' blocked layout
/// (no NCHW round trip), the post-ops in its output pass. Only where
/// blockedShape() gives a shape its engine applies to.
void convApproxBlocked(const Tensor* x, const Tensor* w, const ConvArgs& a,
                       const PostOps& post, const KnobSpec& knob, Tensor* y,
                       const Dims4& xd, const Dims4& wd, const Dims4& yd) {
  std::optional<approx::BlockedConv> shape =
      blockedShape(x, w, a, post, knob, xd, wd, yd);
  HPVM_ASSERT(shape.has_value(), "blocked approximate conv does not apply");
  approx::BlockedConv& bc = *shape;
  const int64_t N = yd[0], K = yd[1], HW = yd[2] * yd[3];
  const dnnl::memory::desc yDesc({N, K, yd[2], yd[3]}, dt::f32, tag::nChw16c);
  const Precision outRound =
      knob.precision == Precision::FP16 ? Precision::FP16 : Precision::FP32;
  // The post-ops: in the output pass, except a tanh or sigmoid (see
  // BlockedEltwisePostOps).
  std::optional<HostPostOps> epi;
  std::optional<BlockedEltwisePostOps> eltwiseEpi;
  if (isTranscendental(post.act))
    eltwiseEpi.emplace(post, N, K, yd[2], yd[3], outRound);
  else
    epi.emplace(post, N, K, HW, outRound, HostPostOps::Part::All,
                /*blocked=*/true);
  dnnl::memory residual;
  bc.x = currentMemory(x);
  const bool int8 = knob.precision == Precision::INT8;
  bc.weights = knob.precision == Precision::FP32 || bc.bf16 || int8
                   ? hostData(w)
                   : roundedWeights(w, knob.precision);
  dnnl::memory int8Filter;            // keeps bc.int8.weights alive
  std::unique_ptr<PoolBuffer> int8In; // holds the quantized input
  if (int8) {
    // The input quantized once, into the NHWC the engines read int8 from.
    const ActQuant aq = inputQuant(knob, x);
    const dnnl::memory::desc xq({xd[0], xd[1], xd[2], xd[3]}, bc.int8Type,
                                tag::nhwc);
    int8In = std::make_unique<PoolBuffer>(xq.get_size());
    bc.x = quantizedSource(x, xq, aq.scale, *int8In);
    int8Filter =
        int8Unfolded(w, a.groups,
                     int8Code(bc.int8Type, knob.variant != Variant::Samp))
            .weights;
    bc.int8.weights = static_cast<const int8_t*>(int8Filter.get_data_handle());
  }
  if (knob.precision != Precision::FP32 && !bc.bf16 && !int8 &&
      !alreadyRounded(x, knob.precision))
    bc.roundInput = [&](float* p, int64_t n) { roundTo(knob.precision, p, n); };
  bc.output = [&] {
    if (post.residual) {
      residual = memoryAs(post.residual, yDesc);
      const float* r = static_cast<const float*>(residual.get_data_handle());
      if (eltwiseEpi)
        eltwiseEpi->setBlockedResidual(r);
      else
        epi->setBlockedResidual(r);
    }
    return static_cast<float*>(outputMemory(y, yDesc).get_data_handle());
  };
  if (eltwiseEpi)
    bc.epilogue = &*eltwiseEpi;
  else if (!epi->empty())
    bc.epilogue = &*epi;
  if (knob.variant == Variant::Samp)
    approx::convSampledBlocked(bc);
  else
    approx::convPerforatedBlocked(bc);
  if (outRound != Precision::FP32)
    implOf(y).roundedTo = outRound;
}

/// Perforated/sampled convolution on NCHW host data, then the post-ops.
void convApprox(const Tensor* x, const Tensor* w, const ConvArgs& a,
                const PostOps& post, const KnobSpec& knob, Tensor* y,
                const Dims4& xd, const Dims4& wd, const Dims4& yd) {
  const float* xp = hostData(x);
  const float* wp = hostData(w);
  static thread_local std::vector<float> xq;
  if (knob.precision == Precision::INT8) {
    // int8 where the blocked engine does not apply: the same quantized
    // operands, dequantized, through the fp32 engine (32-bit sums become
    // fp32 sums of exact products).
    const ActQuant aq = inputQuant(knob, x);
    const float lo = aq.u8 ? 0.f : -128.f, hi = aq.u8 ? 255.f : 127.f;
    const float inv = 1.f / aq.scale; // as oneDNN's quantizing reorder
    xq.resize(static_cast<size_t>(numElems(x)));
    float* xqp = xq.data(); // (thread_local: this thread's buffer)
    const int64_t n = numElems(x);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
      xqp[i] = std::clamp(std::nearbyint(xp[i] * inv), lo, hi) * aq.scale;
    xp = xq.data();
    wp = dequantizedWeights(w, a.groups);
  } else if (knob.precision != Precision::FP32) {
    // Reduced precision: the operands are rounded first (unless they
    // already are), the input into a buffer kept across calls (no
    // allocation and page faults per call), the weights once per version
    // of w.
    if (!alreadyRounded(x, knob.precision)) {
      static thread_local std::vector<float> xs;
      xs.resize(static_cast<size_t>(numElems(x)));
      roundCopy(knob.precision, xp, xs.data(), numElems(x));
      xp = xs.data();
    }
    wp = roundedWeights(w, knob.precision);
  }
  // The post-ops run inside the approximate convolution's output pass;
  // FP16 variants round the result there too. A tanh or sigmoid (scalar
  // std::tanh / std::exp would cost more than the convolution) runs
  // afterwards as oneDNN's vectorised eltwise over the whole output, as in
  // the exact convolution, and the steps after it in one more pass.
  const int64_t N = yd[0], K = yd[1], HW = yd[2] * yd[3];
  const Precision outRound =
      knob.precision == Precision::FP16 ? Precision::FP16 : Precision::FP32;
  const bool eltwiseAfter = isTranscendental(post.act);
  using Part = HostPostOps::Part;
  const HostPostOps epi(post, N, K, HW, outRound,
                        eltwiseAfter ? Part::Head : Part::All);
  const approx::Epilogue* ep = epi.empty() ? nullptr : &epi;
  allocHost(y);
  float* yp = y->impl->host;
  if (knob.variant == Variant::Samp)
    approx::convSampled(xp, xd[0], xd[1], xd[2], xd[3], wp, wd[0], wd[2], wd[3],
                        a, knob, yp, ep);
  else
    approx::convPerforated(xp, xd[0], xd[1], xd[2], xd[3], wp, wd[0], wd[2],
                           wd[3], a, knob, yp, ep);
  if (eltwiseAfter) {
    dnnl::memory all({{N * K * HW}, dt::f32, tag::x}, engine(), yp);
    eltwise(all, all, post.act, 0.f, 0.f);
    const HostPostOps tail(post, N, K, HW, outRound, Part::Tail);
    if (!tail.empty()) {
#pragma omp parallel for schedule(static)
      for (int64_t plane = 0; plane < N * K; ++plane)
        tail.apply(plane / K, plane % K, 0, yp + plane * HW, HW);
    }
  }
  markHostWritten(y);
  implOf(y).roundedTo = outRound;
}

/// "sx<bits>" of an input scale, for primitive keys.
std::string scaleKey(float sx) {
  uint32_t bits;
  std::memcpy(&bits, &sx, sizeof bits);
  return fmt::format("sx{:08x}", bits);
}

/// Conv y = post(x * w) in int8: x quantized per tensor, w per output
/// channel, 32-bit accumulation rescaled by the output scales (fixed when
/// the primitive is created: one primitive per layer and input scale),
/// the fp32 post-ops (activation, residual) fused after it, an fp32
/// result.
void convInt8(const Tensor* x, const Tensor* w, const ConvArgs& args,
              const PostOps& post, const KnobSpec& knob, Tensor* y,
              const Dims4& xd, const Dims4& wd, const Dims4& yd) {
  const int64_t G = args.groups, K = wd[0], Cg = wd[1];
  const ActQuant aq = inputQuant(knob, x);
  const dt srcType = aq.u8 ? dt::u8 : dt::s8;
  dims wDims =
      G == 1 ? dims{K, Cg, wd[2], wd[3]} : dims{G, K / G, Cg, wd[2], wd[3]};
  const auto& plain = int8Plain(w, post, wDims, G == 1 ? tag::oihw : tag::goihw,
                                K, Cg * wd[2] * wd[3], Cg * wd[2] * wd[3], 1,
                                int8Code(srcType, true));
  const Int8Args ia(plain, aq.scale);
  // int8_dyn: the batch's input scale changes from batch to batch; oneDNN
  // 2.6 fixes output scales when a primitive is created, so they hold the
  // weight scales only and the input scale multiplies at run time (one
  // primitive per layer). Except where oneDNN 2.6's AVX2 int8 depthwise
  // kernel gets that multiplication wrong (channels not filling its
  // 8-lane blocks: outputs of the last block 0): there the batch's scale
  // is fixed in a primitive per scale, as for int8 (the scale grid of
  // inputQuant keeps them few).
  const bool depthwiseTail = G == K && Cg == 1 && K % 8 != 0;
  const bool dyn = knob.precision == Precision::INT8DYN &&
                   !(depthwiseTail && !approx::haveAvx512());
  // An int8 consumer next: the result as its u8 input (scaled by it).
  const float qOut = post.quantizeOut;
  std::vector<float> outScales = dyn ? plain.scales : ia.scales;
  if (qOut > 0.f)
    for (float& f : outScales)
      f /= qOut;
  const bool residualDims = post.residual && dims4(post.residual) == yd;
  // The output scales are fixed in the primitive: its key names the
  // version of w (whose weight scales they hold) and the input scale.
  std::string key = fmt::format(
      "conv8|{}x{}x{}x{}|{}x{}x{}x{}|p{},{}s{},{}g{}|{}|{}{}|{}@{}|{}|{}",
      xd[0], xd[1], xd[2], xd[3], K, Cg, wd[2], wd[3], args.padH, args.padW,
      args.strideH, args.strideW, G, static_cast<int>(srcType), postKey(post),
      residualDims, tensorKey(w), plain.key,
      dyn ? std::string("dyn") : scaleKey(aq.scale), scaleKey(qOut));
  const Prim& p = cachedPrim(key, [&] {
    dnnl::memory::desc src({xd[0], xd[1], xd[2], xd[3]}, srcType, tag::any);
    dnnl::memory::desc wAny(wDims, dt::s8, tag::any);
    dnnl::memory::desc biasDesc({K}, dt::f32, tag::x);
    auto makePd = [&](const dnnl::memory::desc& dst, ResidualAs how) {
      dnnl::convolution_forward::desc desc(
          dnnl::prop_kind::forward_inference,
          dnnl::algorithm::convolution_direct, src, wAny, biasDesc, dst,
          {args.strideH, args.strideW}, {args.padH, args.padW},
          {args.padH, args.padW});
      dnnl::primitive_attr attr = postOpsAttr(post, how, dst, dyn);
      attr.set_output_scales(1 << 1, outScales);
      const auto pd = approx::convolutionPd(desc, attr, engine());
      Prim made{dnnl::convolution_forward(pd), pd.src_desc(), pd.weights_desc(),
                pd.dst_desc(), how};
      made.binaryIndex = (dyn ? 1 : 0) + (post.act == Act::None ? 0 : 1);
      made.reference = isRefImpl(pd);
      return made;
    };
    // The fp32 result in the exact layers' nChw16c where a fast kernel
    // writes it, else where oneDNN likes; the residual as for fp32.
    std::vector<dnnl::memory::desc> dsts{
        dnnl::memory::desc({yd[0], yd[1], yd[2], yd[3]}, dt::f32, tag::any)};
    if (K % 16 == 0)
      dsts.insert(dsts.begin(), dnnl::memory::desc({yd[0], yd[1], yd[2], yd[3]},
                                                   dt::f32, tag::nChw16c));
    if (qOut > 0.f)
      dsts = {
          dnnl::memory::desc({yd[0], yd[1], yd[2], yd[3]}, dt::u8, tag::nhwc),
          dnnl::memory::desc({yd[0], yd[1], yd[2], yd[3]}, dt::u8, tag::any)};
    std::vector<ResidualAs> hows{ResidualAs::Split};
    if (post.residual)
      hows = {ResidualAs::Sum, ResidualAs::Split};
    std::optional<Prim> fallback;
    for (const auto& dst : dsts) {
      std::vector<ResidualAs> dstHows = hows;
      if (post.residual && residualDims && dst.data.format_kind == dnnl_blocked)
        dstHows.insert(dstHows.begin(), ResidualAs::Binary);
      for (ResidualAs how : dstHows) {
        try {
          Prim made = makePd(dst, how);
          if (!made.reference)
            return made;
          if (!fallback)
            fallback = made;
        } catch (const dnnl::error&) {
          // No implementation for this combination: try the next.
        }
      }
    }
    // Only oneDNN's reference kernel: correct, slow, and measured so.
    HPVM_ASSERT(fallback.has_value(), "no int8 convolution primitive");
    return *fallback;
  });
  dnnl::memory weights = int8Weights(w, plain, p.weights);
  PoolBuffer srcBuf(p.src.get_size());
  dnnl::memory src = quantizedSource(x, p.src, aq.scale, srcBuf);
  dnnl::memory dst = outputMemory(y, p.dst);
  dnnl::memory bias({{K}, dt::f32, tag::x}, engine(),
                    const_cast<float*>(ia.bias.data()));
  float inScale = aq.scale;
  std::unordered_map<int, dnnl::memory> execArgs{{DNNL_ARG_SRC, src},
                                                 {DNNL_ARG_WEIGHTS, weights},
                                                 {DNNL_ARG_BIAS, bias},
                                                 {DNNL_ARG_DST, dst}};
  if (dyn)
    execArgs[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] =
        dnnl::memory({{1, 1, 1, 1}, dt::f32, tag::nchw}, engine(), &inScale);
  executeLayer(p, post, std::move(execArgs));
  if (qOut > 0.f)
    implOf(y).memScale = qOut;
  if (post.residual && p.residual == ResidualAs::Split)
    runAdd(y, post.residual, post.act2, post.act2Lo, post.act2Hi, KnobSpec{},
           y);
}

/// Dense y = post(x * w) in int8 (see convInt8; the inner product takes its
/// output scales at run time): x is M x K viewed 4-D, w is K x N, y an
/// fp32 M x N written to y's host buffer.
void denseInt8(const Tensor* x, const Tensor* w, const PostOps& post,
               const KnobSpec& knob, Tensor* y) {
  const Dims4 xd = dims4(x), wd = dims4(w);
  const int64_t M = xd[0], K = xd[1] * xd[2] * xd[3], N = wd[3];
  const ActQuant aq = inputQuant(knob, x);
  const dt srcType = aq.u8 ? dt::u8 : dt::s8;
  const dims wDims{N, xd[1], xd[2], xd[3]};
  const auto& plain = int8Plain(w, post, wDims, tag::ihwo, N, K, 1, N,
                                int8Code(srcType, false));
  const Int8Args ia(plain, aq.scale);
  const dnnl::memory::desc dstDesc({M, N}, dt::f32, tag::nc);
  std::string key =
      fmt::format("ip8|{}x{}x{}x{}|{}|{}|{}", xd[0], xd[1], xd[2], xd[3], N,
                  static_cast<int>(srcType), postKey(post));
  const Prim& p = cachedPrim(key, [&] {
    dnnl::inner_product_forward::desc desc(
        dnnl::prop_kind::forward_inference,
        dnnl::memory::desc({xd[0], xd[1], xd[2], xd[3]}, srcType, tag::any),
        dnnl::memory::desc(wDims, dt::s8, tag::any),
        dnnl::memory::desc({N}, dt::f32, tag::x), dstDesc);
    auto make = [&](ResidualAs how) {
      dnnl::primitive_attr attr = postOpsAttr(post, how);
      attr.set_output_scales(1 << 1, {DNNL_RUNTIME_F32_VAL});
      dnnl::inner_product_forward::primitive_desc pd(desc, attr, engine());
      Prim made{dnnl::inner_product_forward(pd), pd.src_desc(),
                pd.weights_desc(), pd.dst_desc(), how};
      made.reference = isRefImpl(pd);
      return made;
    };
    // The residual as a sum post-op, else (only oneDNN's reference kernel
    // or no kernel at all fuses it, as for a 4-D source) added separately.
    try {
      Prim made = make(ResidualAs::Sum);
      if (!post.residual || !made.reference)
        return made;
    } catch (const dnnl::error&) {
      if (!post.residual)
        throw;
    }
    return make(ResidualAs::Split);
  });
  dnnl::memory weights = int8Weights(w, plain, p.weights);
  PoolBuffer srcBuf(p.src.get_size());
  dnnl::memory src = quantizedSource(x, p.src, aq.scale, srcBuf);
  allocHost(y);
  dnnl::memory dst(dstDesc, engine(), y->impl->host);
  dnnl::memory bias({{N}, dt::f32, tag::x}, engine(),
                    const_cast<float*>(ia.bias.data()));
  dnnl::memory scales({{N}, dt::f32, tag::x}, engine(),
                      const_cast<float*>(ia.scales.data()));
  executeLayer(p, post,
               {{DNNL_ARG_SRC, src},
                {DNNL_ARG_WEIGHTS, weights},
                {DNNL_ARG_BIAS, bias},
                {DNNL_ARG_DST, dst},
                {DNNL_ARG_ATTR_OUTPUT_SCALES, scales}});
  markHostWritten(y);
  if (post.residual && p.residual == ResidualAs::Split)
    runAdd(y, post.residual, post.act2, post.act2Lo, post.act2Hi, KnobSpec{},
           y);
}

/// Marks the result of an in-place kernel (dst == src memory) as y's
/// current values.
void markInPlace(Tensor* y, const dnnl::memory& dst) {
  TensorImpl& impl = implOf(y);
  newValues(impl);
  if (dst.get_data_handle() == impl.host) {
    impl.hostValid = true;
    impl.memValid = false;
  } else {
    HPVM_ASSERT(dst.get_data_handle() == impl.mem.get_data_handle(),
                "in-place result is in neither of the tensor's buffers");
    impl.memValid = true;
    impl.hostValid = false;
  }
}

// --- Convolution ------------------------------------------------------------

/// One convolution call, as the variants below see it.
struct ConvCall {
  const Tensor* x;
  const Tensor* w;
  const ConvArgs& args;
  const PostOps& post;
  const KnobSpec& knob;
  Tensor* y;
  Dims4 xd, wd, yd;
  /// The primitive exact-blocked's applies() found, for its run().
  mutable const Prim* exactBlocked = nullptr;

  /// Perforation or sampling that skips something somewhere.
  bool approximate() const {
    return knob.variant != Variant::Exact && knob.rate > 1;
  }
  std::optional<approx::BlockedConv> blocked() const {
    return blockedShape(x, w, args, post, knob, xd, wd, yd);
  }
};

/// The exact convolution's primitive for c: with nChw16c activations
/// (\p blocked; null where oneDNN has only its reference kernel for that)
/// or in the layouts oneDNN picks.
const Prim* exactPrim(const ConvCall& c, bool blocked) {
  const Dims4 &xd = c.xd, &wd = c.wd, &yd = c.yd;
  const ConvArgs& args = c.args;
  const PostOps& post = c.post;
  const Numerics nm = numericsOf(c.knob);
  const int64_t G = args.groups, K = wd[0], Cg = wd[1];
  const dt inType = nm.nativeBf16 ? dt::bf16 : dt::f32;
  // bf16 chains: the result stored as bf16 when the next layer computes
  // in bf16 too (it would round its input to bf16 anyway).
  const bool bf16Out = post.bf16Out && nm.nativeBf16 && !post.residual;
  const dt outType = bf16Out ? dt::bf16 : dt::f32;
  // A binary post-op needs the residual with the output's dims.
  const bool residualDims = post.residual && dims4(post.residual) == yd;
  std::string key = fmt::format(
      "conv|{}x{}x{}x{}|{}x{}x{}x{}|p{},{}s{},{}g{}|{}|{}{}{}|{}", xd[0], xd[1],
      xd[2], xd[3], K, Cg, wd[2], wd[3], args.padH, args.padW, args.strideH,
      args.strideW, G, static_cast<int>(inType), postKey(post), residualDims,
      bf16Out, blocked ? "blk" : "any");
  const Prim& p = cachedPrim(key, [&] {
    dims wDims =
        G == 1 ? dims{K, Cg, wd[2], wd[3]} : dims{G, K / G, Cg, wd[2], wd[3]};
    dnnl::memory::desc wAny(wDims, inType, tag::any);
    dnnl::memory::desc biasDesc({K}, dt::f32, tag::x);
    auto makePd = [&](const dnnl::memory::desc& src,
                      const dnnl::memory::desc& dst, ResidualAs how) {
      dnnl::convolution_forward::desc desc(
          dnnl::prop_kind::forward_inference,
          dnnl::algorithm::convolution_direct, src, wAny, biasDesc, dst,
          {args.strideH, args.strideW}, {args.padH, args.padW},
          {args.padH, args.padW});
      const auto pd =
          approx::convolutionPd(desc, postOpsAttr(post, how, dst), engine());
      Prim made{dnnl::convolution_forward(pd), pd.src_desc(), pd.weights_desc(),
                pd.dst_desc(), how};
      made.binaryIndex = post.act == Act::None ? 0 : 1;
      made.reference = isRefImpl(pd);
      return made;
    };
    // The residual, best first: read in place by a binary post-op (needs
    // the output's layout fixed in advance), copied into dst for a sum
    // post-op, or added separately. A choice is taken unless oneDNN offers
    // only its slow reference kernel for it.
    std::vector<ResidualAs> hows{ResidualAs::Split};
    if (post.residual)
      hows = {ResidualAs::Sum, ResidualAs::Split};
    if (blocked) {
      dnnl::memory::desc srcBlk({xd[0], xd[1], xd[2], xd[3]}, inType,
                                xd[1] % 16 == 0 ? tag::nChw16c : tag::any);
      dnnl::memory::desc dstBlk({yd[0], yd[1], yd[2], yd[3]}, outType,
                                tag::nChw16c);
      if (residualDims)
        hows.insert(hows.begin(), ResidualAs::Binary);
      for (ResidualAs how : hows) {
        try {
          Prim made = makePd(srcBlk, dstBlk, how);
          if (!made.reference)
            return made;
        } catch (const dnnl::error&) {
          // No blocked implementation for this problem: try the next.
        }
      }
      return Prim{}; // declined (cached as such)
    }
    dnnl::memory::desc srcAny({xd[0], xd[1], xd[2], xd[3]}, inType, tag::any);
    dnnl::memory::desc dstAny({yd[0], yd[1], yd[2], yd[3]}, outType, tag::any);
    for (ResidualAs how : hows) {
      Prim made = makePd(srcAny, dstAny, how);
      if (how == ResidualAs::Split || !made.reference)
        return made;
    }
    HPVM_UNREACHABLE("no convolution primitive chosen");
  });
  return p.prim ? &p : nullptr;
}

/// The exact convolution (fp32, or fp16/bf16 numerics) with primitive p.
void runExact(const ConvCall& c, const Prim& p) {
  const Dims4 &wd = c.wd, &yd = c.yd;
  const Numerics nm = numericsOf(c.knob);
  const int64_t G = c.args.groups, K = wd[0], Cg = wd[1];
  dims wDims =
      G == 1 ? dims{K, Cg, wd[2], wd[3]} : dims{G, K / G, Cg, wd[2], wd[3]};
  dnnl::memory::desc wPlain(wDims, dt::f32, G == 1 ? tag::oihw : tag::goihw);
  // Weights: folded with bias/batch norm and reordered once, then cached.
  const auto& wts =
      derivedWeights(c.w, c.post, wPlain, p.weights, K, Cg * wd[2] * wd[3],
                     Cg * wd[2] * wd[3], 1, nm.roundOperands);
  // Source: reordered only if its current layout is not the chosen one.
  std::vector<float> scratch;
  std::unique_ptr<PoolBuffer> srcHold;
  dnnl::memory src = sourceFor(c.x, p.src, nm.roundOperands, scratch, srcHold);
  // Destination: y keeps the chosen layout for the next layer.
  dnnl::memory dst = outputMemory(c.y, p.dst);
  executeLayer(p, c.post,
               {{DNNL_ARG_SRC, src},
                {DNNL_ARG_WEIGHTS, wts.weights},
                {DNNL_ARG_BIAS, wts.bias},
                {DNNL_ARG_DST, dst}});
  // With 16 channels, NHWC is byte for byte nChw16c: say so, and the next
  // layer (blocked, like every fp32 layer) reads it without a reorder (a
  // first convolution whose padding the direct kernels reject writes NHWC).
  if (K == 16 && p.dst == dnnl::memory::desc({yd[0], 16, yd[2], yd[3]}, dt::f32,
                                             tag::nhwc)) {
    TensorImpl& impl = implOf(c.y);
    impl.mem = dnnl::memory(
        dnnl::memory::desc({yd[0], 16, yd[2], yd[3]}, dt::f32, tag::nChw16c),
        engine(), impl.memBuf);
  }
  if (c.post.residual && p.residual == ResidualAs::Split)
    runAdd(c.y, c.post.residual, c.post.act2, c.post.act2Lo, c.post.act2Hi,
           KnobSpec{}, c.y);
  roundResult(nm.roundOutput, c.y);
}

/// One way of computing a convolution, in oneDNN's implementation-list
/// style: applies() says whether it computes this call (reading no
/// activation data), run() computes it.
struct ConvVariant {
  const char* name;
  bool (*applies)(const ConvCall&);
  void (*run)(const ConvCall&);
};

/// The convolution variants, best first: runConv runs the first that
/// applies. The knob policy: perforation and sampling go to the
/// approximate engines, int8 to oneDNN's int8 kernels, everything else
/// (fp32, fp16 and bf16 numerics) to oneDNN's exact convolution. The layout
/// policy: activations stay in nChw16c (channels in blocks of 16) wherever
/// a fast kernel reads and writes it, measured fastest here for every
/// precision, most of all on the small spatial sizes of CIFAR nets.
const ConvVariant kConvVariants[] = {
    // A perforation that skips nothing on this output (an offset beyond a
    // short axis) is the exact convolution at the knob's precision.
    {"perforation-skips-nothing",
     [](const ConvCall& c) {
       if (c.knob.variant != Variant::PerfRow &&
           c.knob.variant != Variant::PerfCol)
         return false;
       if (c.knob.rate <= 1 ||
           approx::perforationPath() != approx::PerforationPath::Auto)
         return false;
       const std::vector<bool> kept = approx::perforationKept(
           c.knob.variant == Variant::PerfRow ? c.yd[2] : c.yd[3], c.knob.rate,
           c.knob.offset);
       return std::find(kept.begin(), kept.end(), false) == kept.end();
     },
     [](const ConvCall& c) {
       KnobSpec exact = c.knob;
       exact.variant = Variant::Exact;
       exact.rate = 1;
       exact.offset = 0;
       runConv(c.x, c.w, c.args, c.post, exact, c.y);
     }},
    // Perforation and sampling on nChw16c activations, the post-ops in the
    // output pass (PerforationBlocked.cpp, SamplingBlocked.cpp).
    {"approx-blocked",
     [](const ConvCall& c) {
       if (!c.approximate() ||
           approx::perforationPath() != approx::PerforationPath::Auto)
         return false;
       const std::optional<approx::BlockedConv> bc = c.blocked();
       return bc && (c.knob.variant == Variant::Samp
                         ? approx::sampledBlockedApplies(*bc)
                         : approx::perforatedBlockedApplies(*bc));
     },
     [](const ConvCall& c) {
       convApproxBlocked(c.x, c.w, c.args, c.post, c.knob, c.y, c.xd, c.wd,
                         c.yd);
     }},
    // Perforation and sampling of any geometry, on NCHW host data
    // (ConvPerforation.cpp, ConvSampling.cpp).
    {"approx-nchw", [](const ConvCall& c) { return c.approximate(); },
     [](const ConvCall& c) {
       convApprox(c.x, c.w, c.args, c.post, c.knob, c.y, c.xd, c.wd, c.yd);
     }},
    // int8 and int8_dyn: oneDNN's int8 convolution, nChw16c or NHWC.
    {"int8", [](const ConvCall& c) { return isInt8(c.knob.precision); },
     [](const ConvCall& c) {
       convInt8(c.x, c.w, c.args, c.post, c.knob, c.y, c.xd, c.wd, c.yd);
     }},
    // Exact, K in blocks of 16, not grouped or depthwise: oneDNN's direct
    // kernels on nChw16c (for bf16 too: 1.9-2.2x over fp32 on VGG16's
    // layers against 1.7-1.8x in the layouts oneDNN picks).
    {"exact-blocked",
     [](const ConvCall& c) {
       const int64_t K = c.wd[0], G = c.args.groups;
       if (K % 16 != 0 || (G != 1 && G != K))
         return false;
       c.exactBlocked = exactPrim(c, /*blocked=*/true);
       return c.exactBlocked != nullptr;
     },
     [](const ConvCall& c) { runExact(c, *c.exactBlocked); }},
    // Exact, any geometry (odd groups, K not in blocks of 16): the layouts
    // oneDNN picks, down to its reference kernel.
    {"exact-any", [](const ConvCall&) { return true; },
     [](const ConvCall& c) { runExact(c, *exactPrim(c, /*blocked=*/false)); }},
};

thread_local const char* lastConvVariantName = "";

} // namespace

void runConv(const Tensor* x, const Tensor* w, const ConvArgs& args,
             const PostOps& post, const KnobSpec& knob, Tensor* y) {
  applyThreads();
  HPVM_ASSERT(x != y && post.residual != y,
              "conv output must not alias its input or residual");
  const ConvCall call{x, w, args, post, knob, y, dims4(x), dims4(w), dims4(y)};
  checkConvShapes(call.xd, call.wd, call.yd, args);
  for (const ConvVariant& v : kConvVariants)
    if (v.applies(call)) {
      v.run(call);
      lastConvVariantName = v.name;
      return;
    }
  HPVM_UNREACHABLE("no convolution variant applies");
}

const char* lastConvVariant() { return lastConvVariantName; }

// --- Dense ------------------------------------------------------------------

void runDense(const Tensor* x, const Tensor* w, const PostOps& post,
              const KnobSpec& knob, Tensor* y) {
  applyThreads();
  HPVM_ASSERT(x != y && post.residual != y,
              "dense output must not alias its input or residual");
  Dims4 xd = dims4(x), wd = dims4(w), yd = dims4(y);
  const int64_t M = xd[0], K = xd[1] * xd[2] * xd[3], N = wd[3];
  HPVM_ASSERT(wd[0] == 1 && wd[1] == 1 && wd[2] == K && yd[0] == M &&
                  yd[1] == N && yd[2] * yd[3] == 1,
              fmt::format("dense shapes wrong: x {}, w {}, y {}", dimsStr(x),
                          dimsStr(w), dimsStr(y)));
  if (isInt8(knob.precision)) {
    denseInt8(x, w, post, knob, y);
    return;
  }
  Numerics nm = numericsOf(knob);
  if (knob.variant != Variant::Exact && knob.rate > 1)
    nm = numericsOf(KnobSpec{knob.id, Variant::Exact, knob.precision, 1, 0});
  const dt inType = nm.nativeBf16 ? dt::bf16 : dt::f32;

  // The inner product takes x as 4-D in its current layout (no reorder of
  // a blocked activation); the weights K x N are (o=N, i=C, h, w) in the
  // physical order i,h,w,o (tag ihwo).
  dims src4{xd[0], xd[1], xd[2], xd[3]};
  dnnl::memory::desc wPlain({N, xd[1], xd[2], xd[3]}, dt::f32, tag::ihwo);
  dnnl::memory::desc wAny({N, xd[1], xd[2], xd[3]}, inType, tag::any);
  dnnl::memory::desc biasDesc({N}, dt::f32, tag::x);
  dnnl::memory::desc dstDesc({M, N}, dt::f32, tag::nc);
  dnnl::memory::desc srcWant =
      inType == dt::f32 && nm.roundOperands == Precision::FP32
          ? currentMemory(x).get_desc()
          : dnnl::memory::desc(src4, inType, tag::any);

  auto make = [&](const dnnl::memory::desc& srcDesc) {
    dnnl::inner_product_forward::desc desc(dnnl::prop_kind::forward_inference,
                                           srcDesc, wAny, biasDesc, dstDesc);
    dnnl::inner_product_forward::primitive_desc pd(
        desc, postOpsAttr(post, ResidualAs::Sum), engine());
    ResidualAs how = ResidualAs::Sum;
    if (post.residual && isRefImpl(pd)) {
      // Only the reference kernel fuses the sum here: add it separately.
      how = ResidualAs::Split;
      pd = dnnl::inner_product_forward::primitive_desc(
          desc, postOpsAttr(post, how), engine());
    }
    return Prim{dnnl::inner_product_forward(pd), pd.src_desc(),
                pd.weights_desc(), pd.dst_desc(), how};
  };
  std::string key = fmt::format("ip|{}|{}|{}|{}", descKey(srcWant), N,
                                static_cast<int>(inType), postKey(post));
  const Prim* p = nullptr;
  try {
    p = &cachedPrim(key, [&] { return make(srcWant); });
  } catch (const dnnl::error&) {
    // No implementation takes this blocked source: let oneDNN choose.
    srcWant = dnnl::memory::desc(src4, inType, tag::any);
    key = fmt::format("ip|{}|{}|{}|{}", descKey(srcWant), N,
                      static_cast<int>(inType), postKey(post));
    p = &cachedPrim(key, [&] { return make(srcWant); });
  }

  const auto& wts =
      derivedWeights(w, post, wPlain, p->weights, N, K, 1, N, nm.roundOperands);
  std::vector<float> scratch;
  std::unique_ptr<PoolBuffer> srcHold;
  dnnl::memory src = sourceFor(x, p->src, nm.roundOperands, scratch, srcHold);
  // The M x N result is written straight into y's NCHW host buffer.
  allocHost(y);
  dnnl::memory dst(dstDesc, engine(), y->impl->host);
  executeLayer(*p, post,
               {{DNNL_ARG_SRC, src},
                {DNNL_ARG_WEIGHTS, wts.weights},
                {DNNL_ARG_BIAS, wts.bias},
                {DNNL_ARG_DST, dst}});
  markHostWritten(y);
  if (post.residual && p->residual == ResidualAs::Split)
    runAdd(y, post.residual, post.act2, post.act2Lo, post.act2Hi, KnobSpec{},
           y);
  roundResult(nm.roundOutput, y);
}

// --- Pooling ----------------------------------------------------------------

void runPool(const Tensor* x, const PoolArgs& a, const KnobSpec& knob,
             Tensor* y) {
  applyThreads();
  HPVM_ASSERT(x != y, "pool output must not alias its input");
  Dims4 xd = dims4(x), yd = dims4(y);
  HPVM_ASSERT(a.kh >= 1 && a.kw >= 1 && a.strideH >= 1 && a.strideW >= 1 &&
                  a.padH >= 0 && a.padW >= 0 && a.bottom() >= 0 &&
                  a.right() >= 0 && xd[2] + a.padH + a.bottom() >= a.kh &&
                  xd[3] + a.padW + a.right() >= a.kw && a.padH < a.kh &&
                  a.padW < a.kw && a.bottom() < a.kh && a.right() < a.kw,
              fmt::format("bad pool arguments for x {}: window {}x{} pad "
                          "{}x{} (after {}x{}) stride {}x{}",
                          dimsStr(x), a.kh, a.kw, a.padH, a.padW, a.bottom(),
                          a.right(), a.strideH, a.strideW));
  int64_t Ho = 1 + (xd[2] + a.padH + a.bottom() - a.kh) / a.strideH;
  int64_t Wo = 1 + (xd[3] + a.padW + a.right() - a.kw) / a.strideW;
  HPVM_ASSERT(yd[0] == xd[0] && yd[1] == xd[1] && yd[2] == Ho && yd[3] == Wo,
              fmt::format("pool output dims wrong: x {}, y {}", dimsStr(x),
                          dimsStr(y)));
  // oneDNN's padding for the last window: the output size may leave the
  // right/bottom pad partly unused, which oneDNN needs stated exactly.
  int64_t padBottom = (Ho - 1) * a.strideH + a.kh - xd[2] - a.padH;
  int64_t padRight = (Wo - 1) * a.strideW + a.kw - xd[3] - a.padW;
  // A max pool takes an int8 layer's u8 result (or a bf16 one) as it is
  // (the maximum of rounded values is the rounded maximum) and hands it on.
  dnnl::memory src =
      a.kind == PoolArgs::Max ? storedMemory(x) : currentMemory(x);
  const dt type = src.get_desc().data_type();
  HPVM_ASSERT(type == dt::f32 || type == dt::u8 || type == dt::bf16,
              "pool input must be f32, u8 or bf16");
  dnnl::memory::desc dstAny({yd[0], yd[1], yd[2], yd[3]}, type, tag::any);
  auto alg = a.kind == PoolArgs::Max ? dnnl::algorithm::pooling_max
             : a.excludePad ? dnnl::algorithm::pooling_avg_exclude_padding
                            : dnnl::algorithm::pooling_avg_include_padding;
  std::string key =
      fmt::format("pool|{}|{}|{}x{}p{},{},{},{}s{},{}", descKey(src.get_desc()),
                  static_cast<int>(alg), a.kh, a.kw, a.padH, a.padW, padBottom,
                  padRight, a.strideH, a.strideW);
  const Prim& p = cachedPrim(key, [&] {
    dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_inference, alg,
                                     src.get_desc(), dstAny,
                                     {a.strideH, a.strideW}, {a.kh, a.kw},
                                     {a.padH, a.padW}, {padBottom, padRight});
    dnnl::pooling_forward::primitive_desc pd(desc, engine());
    return Prim{dnnl::pooling_forward(pd), pd.src_desc(), {}, pd.dst_desc()};
  });
  const float scale = implOf(x).memScale;
  // The maximum of values rounded to the knob's precision is rounded.
  const bool rounded =
      a.kind == PoolArgs::Max && alreadyRounded(x, knob.precision);
  dnnl::memory dst = outputMemory(y, p.dst);
  p.prim.execute(stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  stream().wait();
  if (type != dt::f32) {
    implOf(y).memScale = scale;
    return;
  }
  keepOrRound(rounded, knob.precision, y);
}

// --- Batch norm -------------------------------------------------------------

namespace {
/// dst = act(src); src and dst have the same layout and may be the same
/// memory. Act::None copies.
void eltwise(const dnnl::memory& src, const dnnl::memory& dst, Act act,
             float lo, float hi) {
  if (act == Act::None) {
    if (src.get_data_handle() != dst.get_data_handle())
      parallelCopy(dst.get_data_handle(), src.get_data_handle(),
                   src.get_desc().get_size());
    return;
  }
  // One primitive per step, the first from src, the others in place on dst.
  const EltwiseSteps steps = eltwiseSteps(act, lo, hi);
  for (int i = 0; i < steps.count; ++i) {
    const EltwiseStep& e = steps.step[i];
    const std::string key = fmt::format("elt|{}|{}|{}", descKey(src.get_desc()),
                                        actKey(act, lo, hi), i);
    const Prim& p = cachedPrim(key, [&] {
      dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference,
                                       e.alg, src.get_desc(), e.alpha, e.beta);
      dnnl::eltwise_forward::primitive_desc pd(desc, engine());
      return Prim{
          dnnl::eltwise_forward(pd), src.get_desc(), {}, src.get_desc()};
    });
    p.prim.execute(stream(),
                   {{DNNL_ARG_SRC, i == 0 ? src : dst}, {DNNL_ARG_DST, dst}});
    stream().wait();
  }
}

/// The memory y's result goes to when it has src's layout: src itself when
/// y is the input tensor (in place), else y's own buffer.
dnnl::memory sameLayoutOutput(const Tensor* x, const dnnl::memory& src,
                              Tensor* y) {
  if (x == y)
    return src;
  return outputMemory(y, src.get_desc());
}

dnnl::memory paramMemory(const Tensor* t, int64_t C) {
  return dnnl::memory({{C}, dt::f32, tag::x}, engine(),
                      const_cast<float*>(hostData(t)));
}
} // namespace

void runBatchNorm(const Tensor* x, const Tensor* gamma, const Tensor* beta,
                  const Tensor* mean, const Tensor* var, double eps, Act act,
                  float lo, float hi, const KnobSpec& knob, Tensor* y) {
  applyThreads();
  Dims4 xd = dims4(x);
  HPVM_ASSERT(numElems(y) == numElems(x),
              fmt::format("batch norm output {} differs from input {}",
                          dimsStr(y), dimsStr(x)));
  const int64_t C = xd[1];
  checkPerChannel(gamma, C, "batch norm gamma");
  checkPerChannel(beta, C, "batch norm beta");
  checkPerChannel(mean, C, "batch norm mean");
  checkPerChannel(var, C, "batch norm variance");
  dnnl::memory src = currentMemory(x);
  // ReLU fuses into the primitive; other activations run after it.
  auto flags = dnnl::normalization_flags::use_global_stats |
               dnnl::normalization_flags::use_scale |
               dnnl::normalization_flags::use_shift;
  if (act == Act::Relu)
    flags = flags | dnnl::normalization_flags::fuse_norm_relu;
  std::string key = fmt::format("bn|{}|{}|{}", descKey(src.get_desc()), eps,
                                act == Act::Relu);
  const Prim& p = cachedPrim(key, [&] {
    dnnl::batch_normalization_forward::desc desc(
        dnnl::prop_kind::forward_inference, src.get_desc(),
        static_cast<float>(eps), flags);
    dnnl::batch_normalization_forward::primitive_desc pd(desc, engine());
    return Prim{dnnl::batch_normalization_forward(pd),
                pd.src_desc(),
                {},
                pd.dst_desc()};
  });
  // Parameters are read in place from the host buffers; the output takes
  // the input's layout.
  dnnl::memory g = paramMemory(gamma, C), b = paramMemory(beta, C),
               m = paramMemory(mean, C), v = paramMemory(var, C);
  dnnl::memory dst = sameLayoutOutput(x, src, y);
  p.prim.execute(stream(), {{DNNL_ARG_SRC, src},
                            {DNNL_ARG_SCALE, g},
                            {DNNL_ARG_SHIFT, b},
                            {DNNL_ARG_MEAN, m},
                            {DNNL_ARG_VARIANCE, v},
                            {DNNL_ARG_DST, dst}});
  stream().wait();
  if (act != Act::Relu)
    eltwise(dst, dst, act, lo, hi);
  markInPlace(y, dst);
  roundResult(knob.precision, y);
}

// --- Add --------------------------------------------------------------------

namespace {

/// y = act(src0 <alg> src1) by oneDNN's binary primitive, in a's layout (y
/// may be a), then rounded to the knob's precision.
void runBinary(dnnl::algorithm alg, const Tensor* a, const dnnl::memory& src0,
               const dnnl::memory& src1, Act act, float lo, float hi,
               const KnobSpec& knob, Tensor* y) {
  const std::string key = fmt::format(
      "binary{}|{}|{}|{}", static_cast<int>(alg), descKey(src0.get_desc()),
      descKey(src1.get_desc()), actKey(act, lo, hi));
  const Prim& p = cachedPrim(key, [&] {
    dnnl::binary::desc desc(alg, src0.get_desc(), src1.get_desc(),
                            src0.get_desc());
    dnnl::post_ops ops;
    appendAct(ops, act, lo, hi);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    dnnl::binary::primitive_desc pd(desc, attr, engine());
    return Prim{dnnl::binary(pd), pd.src_desc(0), {}, pd.dst_desc()};
  });
  dnnl::memory dst = sameLayoutOutput(a, src0, y);
  // oneDNN 2.6's binary kernel computes wrong values in place on a blocked
  // layout whose channels do not fill the last block (nChw8c with 19
  // channels: AVX2's layout after a convolution): there it writes a
  // scratch buffer, copied back.
  const dnnl::memory::desc desc0 = src0.get_desc();
  const bool padded =
      desc0.data.ndims > 1 && desc0.data.padded_dims[1] != desc0.data.dims[1];
  dnnl::memory out = dst;
  std::unique_ptr<PoolBuffer> scratch;
  if (padded && dst.get_data_handle() == src0.get_data_handle()) {
    scratch = std::make_unique<PoolBuffer>(dst.get_desc().get_size());
    out = dnnl::memory(dst.get_desc(), engine(), scratch->get());
  }
  p.prim.execute(
      stream(),
      {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, out}});
  stream().wait();
  if (scratch)
    std::memcpy(dst.get_data_handle(), scratch->get(),
                dst.get_desc().get_size());
  markInPlace(y, dst);
  roundResult(knob.precision, y);
}

/// b's host values as the second operand \p dims (N x C x 1 x 1, N 1 or
/// a's) of a binary op on a (whose source is \p src0): such values are the
/// same bytes in nChw16c as in NCHW when C fills whole blocks, and matching
/// a's blocked layout selects oneDNN's vectorised kernel instead of its
/// reference one.
dnnl::memory spatialBroadcast(const Tensor* b, const dims& d, const Tensor* a,
                              const dnnl::memory& src0) {
  const bool blocked16 = d[1] % 16 == 0 && src0.get_desc() != nchwDesc(a);
  return dnnl::memory({d, dt::f32, blocked16 ? tag::nChw16c : tag::nchw},
                      engine(), const_cast<float*>(hostData(b)));
}

} // namespace

void runAdd(const Tensor* a, const Tensor* b, Act act, float lo, float hi,
            const KnobSpec& knob, Tensor* y) {
  applyThreads();
  Dims4 ad = dims4(a);
  const int64_t n = numElems(a), C = ad[1];
  const bool perChannel = numElems(b) != n;
  HPVM_ASSERT(numElems(y) == n && (!perChannel || numElems(b) == C),
              fmt::format("add shapes wrong: a {}, b {}, y {}", dimsStr(a),
                          dimsStr(b), dimsStr(y)));
  HPVM_ASSERT(b != y || a == y, "add output must not alias b alone");
  dnnl::memory src0 = currentMemory(a);
  // The second operand: per-channel 1xCx1x1 from the host, or the same
  // layout as a (reordered if it differs).
  dnnl::memory src1;
  if (perChannel) {
    src1 = spatialBroadcast(b, {1, C, 1, 1}, a, src0);
  } else if (dims4(b) == ad) {
    src1 = memoryAs(b, src0.get_desc());
  } else {
    // Same element count, other dims: b's NCHW values viewed as a's dims.
    dnnl::memory view(nchwDesc(a), engine(), const_cast<float*>(hostData(b)));
    src1 = dnnl::memory(src0.get_desc(), engine());
    reorder(view, src1);
  }
  runBinary(dnnl::algorithm::binary_add, a, src0, src1, act, lo, hi, knob, y);
}

void runMultiply(const Tensor* a, const Tensor* b, Act act, float lo, float hi,
                 const KnobSpec& knob, Tensor* y) {
  applyThreads();
  const Dims4 ad = dims4(a), bd = dims4(b);
  HPVM_ASSERT(numElems(y) == numElems(a) && b != y,
              fmt::format("multiply shapes wrong: a {}, b {}, y {}", dimsStr(a),
                          dimsStr(b), dimsStr(y)));
  dnnl::memory src0 = currentMemory(a);
  dnnl::memory src1;
  if (bd == ad) {
    src1 = memoryAs(b, src0.get_desc());
  } else {
    HPVM_ASSERT(bd[2] == 1 && bd[3] == 1,
                "multiply broadcasts only over 1 x 1 spatial extents");
    src1 = spatialBroadcast(b, {bd[0], bd[1], 1, 1}, a, src0);
  }
  runBinary(dnnl::algorithm::binary_mul, a, src0, src1, act, lo, hi, knob, y);
}

// --- Concatenation ----------------------------------------------------------

namespace {

/// runConcat() into storage bindChannelView() planned (batch 1, nChw16c,
/// every part a multiple of 16 channels): each part is one contiguous run
/// of y's buffer; a part whose producer wrote it there is left as it is,
/// the others are copied in.
void concatInPlace(Tensor* const* parts, int n, Tensor* y) {
  const dnnl::memory dst = outputMemory(y, blocked16Desc(y));
  const Dims4 yd = dims4(y);
  auto* base = static_cast<float*>(dst.get_data_handle());
  int64_t channel = 0;
  for (int i = 0; i < n; ++i) {
    const dnnl::memory::desc want = blocked16Desc(parts[i]);
    float* at = base + channel * yd[2] * yd[3];
    channel += dims4(parts[i])[1];
    const TensorImpl& impl = implOf(parts[i]);
    if (impl.memValid && impl.mem.get_data_handle() == at &&
        impl.mem.get_desc() == want)
      continue;
    const dnnl::memory from = currentMemory(parts[i]);
    if (from.get_desc() == want)
      parallelCopy(at, from.get_data_handle(), want.get_size());
    else
      reorder(from, dnnl::memory(want, engine(), at));
  }
}

} // namespace

void runConcat(Tensor* const* parts, int n, const KnobSpec& knob, Tensor* y) {
  applyThreads();
  const Dims4 yd = dims4(y);
  int64_t channels = 0;
  bool blocks16 = true;
  for (int i = 0; i < n; ++i) {
    const Dims4 d = dims4(parts[i]);
    HPVM_ASSERT(d[0] == yd[0] && d[2] == yd[2] && d[3] == yd[3] &&
                    parts[i] != y,
                fmt::format("concat part {} is {}, the result {}", i,
                            dimsStr(parts[i]), dimsStr(y)));
    channels += d[1];
    blocks16 = blocks16 && d[1] % 16 == 0;
  }
  HPVM_ASSERT(channels == yd[1], "concat channels do not add up");
  // fp32 only: rounding the result in place would round the parts too.
  if (yd[0] == 1 && blocks16 && knob.precision == Precision::FP32 &&
      hasChannelViews(y)) {
    concatInPlace(parts, n, y);
    return;
  }
  std::vector<dnnl::memory> src(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    src[i] = currentMemory(parts[i]);
  // Blocked by 16 channels when every part fills whole blocks (the
  // convolutions' layout, which the next convolution reads: DenseNet's
  // concatenations of 32-channel layers), reordering the parts that are
  // not; else channel-last if every part is; else plain NCHW.
  auto all = [&](auto pred) {
    for (int i = 0; i < n; ++i)
      if (!pred(i, dims4(parts[i])))
        return false;
    return true;
  };
  tag layout = tag::nchw;
  if (all([](int, const Dims4& d) { return d[1] % 16 == 0; }))
    layout = tag::nChw16c;
  else if (all([&](int i, const Dims4& d) {
             return src[i].get_desc() ==
                    dnnl::memory::desc({d[0], d[1], d[2], d[3]}, dt::f32,
                                       tag::nhwc);
           }))
    layout = tag::nhwc;
  std::vector<dnnl::memory::desc> descs;
  std::string key = "concat";
  for (int i = 0; i < n; ++i) {
    const Dims4 d = dims4(parts[i]);
    dnnl::memory::desc want({d[0], d[1], d[2], d[3]}, dt::f32, layout);
    if (src[i].get_desc() != want)
      src[i] = memoryAs(parts[i], want);
    descs.push_back(want);
    key += "|" + descKey(want);
  }
  const dnnl::memory::desc dstDesc({yd[0], yd[1], yd[2], yd[3]}, dt::f32,
                                   layout);
  const Prim& p = cachedPrim(key, [&] {
    dnnl::concat::primitive_desc pd(dstDesc, 1, descs, engine());
    return Prim{dnnl::concat(pd), {}, {}, pd.dst_desc()};
  });
  dnnl::memory dst = outputMemory(y, dstDesc);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_DST, dst}};
  for (int i = 0; i < n; ++i)
    args.emplace(DNNL_ARG_MULTIPLE_SRC + i, src[i]);
  p.prim.execute(stream(), args);
  stream().wait();
  // Values already rounded to the knob's precision stay rounded.
  bool rounded = true;
  for (int i = 0; i < n; ++i)
    rounded = rounded && alreadyRounded(parts[i], knob.precision);
  keepOrRound(rounded, knob.precision, y);
}

namespace {

/// y's channel c = x's channel source(c), plane by plane in parallel
/// (NCHW host data); y keeps x's rounding.
template <class Source>
void copyChannels(const Tensor* x, const KnobSpec& knob, Tensor* y,
                  Source source) {
  applyThreads();
  const Dims4 xd = dims4(x), yd = dims4(y);
  HPVM_ASSERT(
      x != y && xd[0] == yd[0] && xd[2] == yd[2] && xd[3] == yd[3],
      fmt::format("channel copy from {} to {}", dimsStr(x), dimsStr(y)));
  const float* xp = hostData(x);
  allocHost(y);
  float* yp = y->impl->host;
  const int64_t N = yd[0], C = yd[1], XC = xd[1], HW = yd[2] * yd[3];
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c)
      std::memcpy(yp + (b * C + c) * HW, xp + (b * XC + source(c)) * HW,
                  static_cast<size_t>(HW) * sizeof(float));
  markHostCopied(x, knob.precision, y);
}

} // namespace

void runChannelSlice(const Tensor* x, int64_t begin, int64_t end,
                     const KnobSpec& knob, Tensor* y) {
  HPVM_ASSERT(begin >= 0 && end > begin && end <= dims4(x)[1] &&
                  dims4(y)[1] == end - begin,
              "channel slice out of range");
  copyChannels(x, knob, y, [begin](int64_t c) { return begin + c; });
}

void runChannelShuffle(const Tensor* x, int64_t groups, const KnobSpec& knob,
                       Tensor* y) {
  const int64_t C = dims4(x)[1];
  HPVM_ASSERT(groups >= 1 && C % groups == 0 && dims4(y)[1] == C,
              "channel shuffle groups do not divide the channels");
  const int64_t per = C / groups;
  // Output channel j * groups + i reads input channel i * per + j.
  copyChannels(x, knob, y, [groups, per](int64_t c) {
    return (c % groups) * per + c / groups;
  });
}

// --- Ranges -----------------------------------------------------------------

void extendRange(const float* data, int64_t n, float& lo, float& hi) {
  float l = lo, h = hi;
#pragma omp parallel for reduction(min : l) reduction(max : h) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    l = std::min(l, data[i]);
    h = std::max(h, data[i]);
  }
  lo = l;
  hi = h;
}

// --- Activations ------------------------------------------------------------

void runAct(const Tensor* x, Act act, float lo, float hi, const KnobSpec& knob,
            Tensor* y) {
  applyThreads();
  HPVM_ASSERT(numElems(y) == numElems(x),
              fmt::format("activation output {} differs from input {}",
                          dimsStr(y), dimsStr(x)));
  // ReLU (and a clip to bounds the precision represents) selects input
  // values or bounds: on input already rounded to the knob's precision the
  // result is rounded too, and needs no rounding pass.
  auto representable = [&](float v) {
    float r = v;
    roundTo(knob.precision, &r, 1);
    return r == v;
  };
  const bool selects =
      act == Act::None || act == Act::Relu ||
      (act == Act::Clip && representable(lo) && representable(hi));
  const bool rounded = selects && alreadyRounded(x, knob.precision);
  dnnl::memory src = currentMemory(x);
  dnnl::memory dst = sameLayoutOutput(x, src, y);
  eltwise(src, dst, act, lo, hi);
  markInPlace(y, dst);
  keepOrRound(rounded, knob.precision, y);
}

// --- Layer normalization ----------------------------------------------------

void runLayerNorm(const Tensor* x, const Tensor* gamma, const Tensor* beta,
                  double eps, const KnobSpec& knob, Tensor* y) {
  applyThreads();
  const Dims4 xd = dims4(x);
  const int64_t N = xd[0], C = xd[1], HW = xd[2] * xd[3];
  HPVM_ASSERT(
      numElems(y) == numElems(x) && numElems(gamma) == C && numElems(beta) == C,
      fmt::format("layer norm shapes wrong: x {}, gamma {}, beta {}, "
                  "y {}",
                  dimsStr(x), dimsStr(gamma), dimsStr(beta), dimsStr(y)));
  const float* g = hostData(gamma);
  const float* b = hostData(beta);
  // x held in nChw16c (a convolution's output): normalized in that layout,
  // and y left in it for the convolution that follows (ConvNeXt, Swin,
  // ViT), with no reorder either side. The 16 channels of a block are the
  // vector: each pixel sums C/16 vectors, then across the lanes.
  const TensorImpl& xi = implOf(x);
  if (y != x && C % 16 == 0 && xi.memValid && xi.memScale == 1.f &&
      xi.mem.get_desc() == blocked16Desc(x)) {
    const float* xb = static_cast<const float*>(xi.mem.get_data_handle());
    float* yb = static_cast<float*>(
        outputMemory(y, blocked16Desc(y)).get_data_handle());
    const int64_t CB = C / 16;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t p = 0; p < HW; ++p) {
        const float* xp = xb + (n * CB * HW + p) * 16;
        float* yp = yb + (n * CB * HW + p) * 16;
        float acc[16] = {};
        for (int64_t cb = 0; cb < CB; ++cb)
#pragma omp simd
          for (int64_t l = 0; l < 16; ++l)
            acc[l] += xp[cb * HW * 16 + l];
        float mean = 0;
        for (int64_t l = 0; l < 16; ++l)
          mean += acc[l];
        mean /= float(C);
        float sq[16] = {};
        for (int64_t cb = 0; cb < CB; ++cb)
#pragma omp simd
          for (int64_t l = 0; l < 16; ++l) {
            const float d = xp[cb * HW * 16 + l] - mean;
            sq[l] += d * d;
          }
        float var = 0;
        for (int64_t l = 0; l < 16; ++l)
          var += sq[l];
        const float inv = float(1 / std::sqrt(double(var) / double(C) + eps));
        for (int64_t cb = 0; cb < CB; ++cb)
#pragma omp simd
          for (int64_t l = 0; l < 16; ++l)
            yp[cb * HW * 16 + l] =
                (xp[cb * HW * 16 + l] - mean) * inv * g[cb * 16 + l] +
                b[cb * 16 + l];
      }
    roundResult(knob.precision, y);
    return;
  }
  const float* xp = hostData(x);
  if (y != x)
    allocHost(y);
  float* yp = y->impl->host;
  // Pixels in blocks: each block sums over the channels with the pixels as
  // the contiguous (vectorised) inner loop, in two passes (the mean, then
  // the squared deviations from it, as PyTorch's layer_norm).
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (HW + kBlock - 1) / kBlock;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t p0 = blk * kBlock, len = std::min(kBlock, HW - p0);
      float mean[kBlock], inv[kBlock];
      const float* xb = xp + n * C * HW + p0;
      float* yb = yp + n * C * HW + p0;
      std::fill_n(mean, len, 0.f);
      for (int64_t c = 0; c < C; ++c)
#pragma omp simd
        for (int64_t p = 0; p < len; ++p)
          mean[p] += xb[c * HW + p];
      std::fill_n(inv, len, 0.f);
      for (int64_t p = 0; p < len; ++p)
        mean[p] /= float(C);
      for (int64_t c = 0; c < C; ++c)
#pragma omp simd
        for (int64_t p = 0; p < len; ++p) {
          const float d = xb[c * HW + p] - mean[p];
          inv[p] += d * d;
        }
      for (int64_t p = 0; p < len; ++p)
        inv[p] = float(1 / std::sqrt(double(inv[p]) / double(C) + eps));
      for (int64_t c = 0; c < C; ++c) {
        const float gc = g[c], bc = b[c];
#pragma omp simd
        for (int64_t p = 0; p < len; ++p)
          yb[c * HW + p] = (xb[c * HW + p] - mean[p]) * inv[p] * gc + bc;
      }
    }
  markHostWritten(y);
  roundResult(knob.precision, y);
}

// --- Softmax ----------------------------------------------------------------

void runSoftmax(const Tensor* x, const KnobSpec& knob, Tensor* y) {
  applyThreads();
  Dims4 xd = dims4(x);
  HPVM_ASSERT(numElems(y) == numElems(x),
              fmt::format("softmax output {} differs from input {}", dimsStr(y),
                          dimsStr(x)));
  // A few classes per image: the reference loop on NCHW host data is as
  // fast as a primitive and sums in double as HPVM does.
  const float* xp = hostData(x);
  allocHost(y);
  ref::softmax(xp, xd[0], xd[1] * xd[2] * xd[3], y->impl->host);
  markHostWritten(y);
  roundResult(knob.precision, y);
}

// --- Vision transformer tokens ---------------------------------------------

void runClassToken(const Tensor* x, const Tensor* cls, const Tensor* pos,
                   const KnobSpec& knob, Tensor* y) {
  applyThreads();
  const Dims4 xd = dims4(x);
  const int64_t N = xd[0], C = xd[1], T = xd[2] * xd[3];
  HPVM_ASSERT(numElems(cls) == C && numElems(pos) == C * (T + 1) &&
                  numElems(y) == N * C * (T + 1),
              fmt::format("class token shapes wrong: x {}, token {}, "
                          "position embedding {}, y {}",
                          dimsStr(x), dimsStr(cls), dimsStr(pos), dimsStr(y)));
  const float* xp = hostData(x);
  const float* cp = hostData(cls);
  const float* pp = hostData(pos);
  allocHost(y);
  float* yp = y->impl->host;
  // One token row (a channel of one image) per iteration.
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const float* pc = pp + c * (T + 1);
      const float* xc = xp + (b * C + c) * T;
      float* yc = yp + (b * C + c) * (T + 1);
      yc[0] = cp[c] + pc[0];
#pragma omp simd
      for (int64_t t = 0; t < T; ++t)
        yc[1 + t] = xc[t] + pc[1 + t];
    }
  markHostWritten(y);
  roundResult(knob.precision, y);
}

void runAttention(const Tensor* qkv, int64_t heads, const KnobSpec& knob,
                  Tensor* y) {
  applyThreads();
  const Dims4 xd = dims4(qkv);
  const int64_t N = xd[0], C = xd[1] / 3, T = xd[2] * xd[3];
  HPVM_ASSERT(heads >= 1 && xd[1] == 3 * C && C % heads == 0 &&
                  numElems(y) == N * C * T,
              fmt::format("attention shapes wrong: qkv {} with {} heads, y {}",
                          dimsStr(qkv), heads, dimsStr(y)));
  const int64_t D = C / heads;
  // Channel-first tokens hold each head's queries, keys and values
  // transposed: token t, channel d of head h at [b, h*D + d, t]. As
  // matrices per (image, head): Q^T, K^T and V^T, D x T row-major, image
  // stride 3C*T, head stride D*T.
  const dims qkvStrides = {3 * C * T, D * T, T, 1};
  const dnnl::memory::desc transposed({N, heads, D, T}, dt::f32, qkvStrides);
  const dnnl::memory::desc rowsQ({N, heads, T, D}, dt::f32,
                                 dims{3 * C * T, D * T, 1, T});
  const dnnl::memory::desc scores({N, heads, T, T}, dt::f32, tag::abcd);
  const dnnl::memory::desc scoresT({N, heads, T, T}, dt::f32,
                                   dims{heads * T * T, T * T, 1, T});
  const dnnl::memory::desc out({N, heads, D, T}, dt::f32, tag::abcd);
  const std::string key = fmt::format("attn|{}|{}|{}|{}", N, C, T, heads);
  // Step 1: S = Q K^T / sqrt(D), a batched matmul of Q (Q^T read
  // transposed) by K^T, the scale an output scale.
  const Prim& qk = cachedPrim(key + "|qk", [&] {
    dnnl::matmul::desc desc(rowsQ, transposed, scores);
    dnnl::primitive_attr attr;
    attr.set_output_scales(0, {float(1 / std::sqrt(double(D)))});
    dnnl::matmul::primitive_desc pd(desc, attr, engine());
    return Prim{dnnl::matmul(pd), rowsQ, transposed, scores};
  });
  // Step 2: softmax over each row of S, in place.
  const Prim& soft = cachedPrim(key + "|softmax", [&] {
    dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_inference, scores,
                                     3);
    dnnl::softmax_forward::primitive_desc pd(desc, engine());
    return Prim{dnnl::softmax_forward(pd), scores, {}, scores};
  });
  // Step 3: the output O = P V, computed transposed as O^T = V^T P^T: it
  // is D x T per (image, head), channel-first tokens again.
  const Prim& pv = cachedPrim(key + "|pv", [&] {
    dnnl::matmul::desc desc(transposed, scoresT, out);
    dnnl::matmul::primitive_desc pd(desc, engine());
    return Prim{dnnl::matmul(pd), transposed, scoresT, out};
  });
  // Memories: queries, keys and values at channel offsets 0, C and 2C of
  // qkv's host data; S in a pooled scratch buffer; O^T y's host buffer.
  float* base = const_cast<float*>(hostData(qkv));
  PoolBuffer scratch(static_cast<size_t>(N * heads * T * T) * sizeof(float));
  allocHost(y);
  dnnl::memory q(rowsQ, engine(), base);
  dnnl::memory k(transposed, engine(), base + C * T);
  dnnl::memory v(transposed, engine(), base + 2 * C * T);
  dnnl::memory s(scores, engine(), scratch.get());
  dnnl::memory sT(scoresT, engine(), scratch.get());
  dnnl::memory o(out, engine(), y->impl->host);
  qk.prim.execute(
      stream(), {{DNNL_ARG_SRC, q}, {DNNL_ARG_WEIGHTS, k}, {DNNL_ARG_DST, s}});
  soft.prim.execute(stream(), {{DNNL_ARG_SRC, s}, {DNNL_ARG_DST, s}});
  pv.prim.execute(
      stream(), {{DNNL_ARG_SRC, v}, {DNNL_ARG_WEIGHTS, sT}, {DNNL_ARG_DST, o}});
  stream().wait();
  markHostWritten(y);
  roundResult(knob.precision, y);
}

namespace {

/// e^x for x <= 0 (a softmax's shifted scores), within 2 ulp down to
/// e^-87 (below it: e^-87, which is 0 next to the row's 1): x = n ln 2 + r,
/// |r| <= ln 2 / 2, e^r by its Taylor series to r^6 (error < 2e-7), 2^n by
/// the exponent bits. Branch-free, so that `omp simd` loops vectorize it
/// (with -fno-trapping-math: hpvm_rt/CMakeLists.txt).
inline float expNonPositive(float x) {
  x = x < -87.f ? -87.f : x;
  const float n = std::floor(x * 1.44269504f + 0.5f);
  const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f;
  float p = 1.f / 720;
  p = p * r + 1.f / 120;
  p = p * r + 1.f / 24;
  p = p * r + 1.f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  return p * __builtin_bit_cast(float, (int32_t(n) + 127) << 23);
}

} // namespace

// GCC would turn the short run copies below into memcpy calls, each
// costlier than its copy.
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif
void runWindowAttention(const OpCall& c) {
  applyThreads();
  const Tensor *qkv = c.in[0], *bias = c.in[1], *mask = c.in[2];
  const Dims4 xd = dims4(qkv);
  const int64_t wh = int64_t(c.scalars[0]), ww = int64_t(c.scalars[1]),
                heads = int64_t(c.scalars[2]), sh = int64_t(c.scalars[3]),
                sw = int64_t(c.scalars[4]);
  const int64_t N = xd[0], C = xd[1] / 3, H = xd[2], W = xd[3], HW = H * W;
  const int64_t T = wh * ww, D = C / heads, across = W / ww,
                windows = (H / wh) * across, masks = numElems(mask) / (T * T);
  HPVM_ASSERT(
      xd[1] == 3 * C && C % heads == 0 && H % wh == 0 && W % ww == 0 &&
          numElems(bias) == heads * T * T && (masks == 1 || masks == windows) &&
          numElems(c.out) == N * C * HW,
      fmt::format("window attention shapes wrong: qkv {}, bias {}, "
                  "mask {}, y {}",
                  dimsStr(qkv), dimsStr(bias), dimsStr(mask), dimsStr(c.out)));
  const float* xp = hostData(qkv);
  const float* bp = hostData(bias);
  const float* mp = hostData(mask);
  allocHost(c.out);
  float* yp = c.out->impl->host;
  const float scale = float(1 / std::sqrt(double(D)));
  // KB: 4 vectors of 16 floats, the queries a loop takes at a time: 4
  // independent FMA chains, one broadcast per 4 FMAs. Token rows are
  // padded with zeros to whole blocks (Tp).
  constexpr int64_t KB = 64;
  const int64_t Tp = (T + KB - 1) / KB * KB;
  struct Run {
    int64_t token, pixel, length;
  };
  // One (image, window, head) per iteration, in buffers that stay in L1.
  // Channel-first data holds a head's queries, keys and values transposed
  // (channel d, token t at plane d, pixel of t): copied run by run (a
  // window row is one run of pixels, two where the roll wraps it) into
  // D x Tp matrices. The scores transposed, S^T = K^T Q scaled plus bias
  // and mask (T x Tp: key s, query t; bias and mask are key-major too),
  // so that every step runs along the queries: S^T a key and KB queries at
  // a time, the softmax over the keys of each query (maxima, exponentials
  // and sums of rows), and O^T = V P^T, whose rows are runs of the output
  // planes again.
#pragma omp parallel
  {
    std::vector<float> buf(static_cast<size_t>(4 * D * Tp + T * Tp + 2 * Tp),
                           0.f);
    float *qt = buf.data(), *kt = qt + D * Tp, *vt = kt + D * Tp,
          *ot = vt + D * Tp, *st = ot + D * Tp, *mx = st + T * Tp,
          *inv = mx + Tp;
    std::vector<Run> runs;
#pragma omp for collapse(3) schedule(static)
    for (int64_t b = 0; b < N; ++b)
      for (int64_t w = 0; w < windows; ++w)
        for (int64_t h = 0; h < heads; ++h) {
          const int64_t y0 = (w / across) * wh + sh,
                        x0 = (w % across) * ww + sw;
          runs.clear();
          for (int64_t r = 0; r < wh; ++r) {
            const int64_t y = (y0 + r) % H, x = x0 % W;
            const int64_t first = std::min(ww, W - x);
            runs.push_back({r * ww, y * W + x, first});
            if (first < ww)
              runs.push_back({r * ww + first, y * W, ww - first});
          }
          const float* q = xp + (b * 3 * C + h * D) * HW;
          const float* k = q + C * HW;
          const float* v = k + C * HW;
          for (int64_t d = 0; d < D; ++d)
            for (const Run& run : runs) {
              const float* qs = q + d * HW + run.pixel;
              const float* ks = k + d * HW + run.pixel;
              const float* vs = v + d * HW + run.pixel;
              float* qd = qt + d * Tp + run.token;
              float* kd = kt + d * Tp + run.token;
              float* vd = vt + d * Tp + run.token;
#pragma omp simd
              for (int64_t l = 0; l < run.length; ++l) {
                qd[l] = qs[l];
                kd[l] = ks[l];
                vd[l] = vs[l];
              }
            }
          const float* bh = bp + h * T * T;
          const float* mw = mp + (masks == 1 ? 0 : w) * T * T;
          for (int64_t s2 = 0; s2 < T; ++s2)
            for (int64_t t0 = 0; t0 < Tp; t0 += KB) {
              float acc[KB];
              const int64_t n = std::min(KB, T - t0);
#pragma omp simd
              for (int64_t l = 0; l < KB; ++l)
                acc[l] =
                    l < n ? bh[s2 * T + t0 + l] + mw[s2 * T + t0 + l] : 0.f;
              for (int64_t d = 0; d < D; ++d) {
                const float kd = kt[d * Tp + s2] * scale;
                const float* qd = qt + d * Tp + t0;
#pragma omp simd
                for (int64_t l = 0; l < KB; ++l)
                  acc[l] += kd * qd[l];
              }
#pragma omp simd
              for (int64_t l = 0; l < KB; ++l)
                st[s2 * Tp + t0 + l] = acc[l];
            }
#pragma omp simd
          for (int64_t t = 0; t < Tp; ++t)
            mx[t] = st[t];
          for (int64_t s2 = 1; s2 < T; ++s2)
#pragma omp simd
            for (int64_t t = 0; t < Tp; ++t)
              mx[t] = std::max(mx[t], st[s2 * Tp + t]);
#pragma omp simd
          for (int64_t t = 0; t < Tp; ++t)
            inv[t] = 0;
          for (int64_t s2 = 0; s2 < T; ++s2) {
            float* __restrict e = st + s2 * Tp;
            const float* __restrict m = mx;
            float* __restrict sum = inv;
#pragma omp simd
            for (int64_t t = 0; t < Tp; ++t) {
              e[t] = expNonPositive(e[t] - m[t]);
              sum[t] += e[t];
            }
          }
#pragma omp simd
          for (int64_t t = 0; t < Tp; ++t)
            inv[t] = 1 / inv[t];
          for (int64_t d = 0; d < D; ++d)
            for (int64_t t0 = 0; t0 < Tp; t0 += KB) {
              float acc[KB] = {};
              for (int64_t s2 = 0; s2 < T; ++s2) {
                const float vd = vt[d * Tp + s2];
                const float* ps = st + s2 * Tp + t0;
#pragma omp simd
                for (int64_t l = 0; l < KB; ++l)
                  acc[l] += vd * ps[l];
              }
#pragma omp simd
              for (int64_t l = 0; l < KB; ++l)
                ot[d * Tp + t0 + l] = acc[l] * inv[t0 + l];
            }
          float* out = yp + (b * C + h * D) * HW;
          for (int64_t d = 0; d < D; ++d)
            for (const Run& run : runs) {
              float* dst = out + d * HW + run.pixel;
              const float* src = ot + d * Tp + run.token;
#pragma omp simd
              for (int64_t l = 0; l < run.length; ++l)
                dst[l] = src[l];
            }
        }
  }
  markHostWritten(c.out);
  roundResult(c.knob.precision, c.out);
}

void runPad(const OpCall& c) {
  applyThreads();
  const Tensor* x = c.in[0];
  const Dims4 xd = dims4(x), yd = dims4(c.out);
  const int64_t top = int64_t(c.scalars[0]), left = int64_t(c.scalars[1]);
  const float value = float(c.scalars[4]);
  const int64_t NC = xd[0] * xd[1], H = xd[2], W = xd[3], OH = yd[2],
                OW = yd[3];
  HPVM_ASSERT(yd[0] == xd[0] && yd[1] == xd[1] &&
                  OH == top + H + int64_t(c.scalars[2]) &&
                  OW == left + W + int64_t(c.scalars[3]),
              fmt::format("pad of {} into {}", dimsStr(x), dimsStr(c.out)));
  const float* xp = hostData(x);
  allocHost(c.out);
  float* yp = c.out->impl->host;
  // One output row per iteration: the value, the input row, the value.
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t bc = 0; bc < NC; ++bc)
    for (int64_t i = 0; i < OH; ++i) {
      float* dst = yp + (bc * OH + i) * OW;
      const int64_t r = i - top;
      if (r < 0 || r >= H) {
        std::fill(dst, dst + OW, value);
        continue;
      }
      std::fill(dst, dst + left, value);
      std::memcpy(dst + left, xp + (bc * H + r) * W,
                  static_cast<size_t>(W) * sizeof(float));
      std::fill(dst + left + W, dst + OW, value);
    }
  markHostWritten(c.out);
  roundResult(c.knob.precision, c.out);
}

void runSpatialSlice(const OpCall& c) {
  applyThreads();
  const Tensor* x = c.in[0];
  const Dims4 xd = dims4(x), yd = dims4(c.out);
  const int64_t bh = int64_t(c.scalars[0]), bw = int64_t(c.scalars[1]),
                th = int64_t(c.scalars[2]), tw = int64_t(c.scalars[3]);
  const int64_t NC = xd[0] * xd[1], H = xd[2], W = xd[3], nh = yd[2],
                nw = yd[3];
  HPVM_ASSERT(
      yd[0] == xd[0] && yd[1] == xd[1] && nh == int64_t(c.scalars[4]) &&
          nw == int64_t(c.scalars[5]) && bh + (nh - 1) * th < H &&
          bw + (nw - 1) * tw < W,
      fmt::format("spatial slice of {} into {}", dimsStr(x), dimsStr(c.out)));
  const float* xp = hostData(x);
  allocHost(c.out);
  float* yp = c.out->impl->host;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t bc = 0; bc < NC; ++bc)
    for (int64_t i = 0; i < nh; ++i) {
      const float* src = xp + (bc * H + bh + i * th) * W + bw;
      float* dst = yp + (bc * nh + i) * nw;
      for (int64_t j = 0; j < nw; ++j)
        dst[j] = src[j * tw];
    }
  markHostCopied(x, c.knob.precision, c.out);
}

void runSelectToken(const Tensor* x, int64_t index, const KnobSpec& knob,
                    Tensor* y) {
  applyThreads();
  const Dims4 xd = dims4(x);
  const int64_t N = xd[0], C = xd[1], T = xd[2] * xd[3];
  HPVM_ASSERT(
      index >= 0 && index < T && numElems(y) == N * C,
      fmt::format("token {} of {} into {}", index, dimsStr(x), dimsStr(y)));
  const float* xp = hostData(x);
  allocHost(y);
  ref::selectToken(xp, N, C, T, index, y->impl->host);
  markHostCopied(x, knob.precision, y);
}

} // namespace hpvm::rt
