// Int8Test.cpp - the int8 knobs of the conv and dense kernels (INT8 with a
// calibrated input range, INT8DYN with the batch's own) against a reference
// written from the quantization formulas alone; the u8 chain from one int8
// conv through a max pool into the next; and the int8 result against the
// exact fp32 one.
//
// The reference (nothing of the code under test, not even ref::):
//   input   lo >= 0: q = clamp(rne(x / s), 0, 255), s = hi / 255;
//           else     q = clamp(rne(x / s), -128, 127), s = max(-lo, hi) / 127;
//           s = 1 for a zero range; INT8DYN takes lo, hi from the batch and
//           rounds s up to 2^(ceil(16 log2 s) / 16).
//   weights bias and batch norm folded first (fp32 weights w' = w g /
//           sqrt(var + eps), b' = beta + (b - mean) g / sqrt(var + eps)),
//           then per output channel ws = max|w'| / Q, q = clamp(rne(w' /
//           ws), -Q, Q), Q = 127 (63 below VNNI: int8WeightMax()).
//   result  int64 accumulation, y = acc s ws + b' in double, then the post-ops
//           (activation, residual add, second activation) in double.
// The scales are fp32 values (s, ws as the formulas give them in fp32).
#include "../TestSample.h"
#include "KernelTestUtil.h"
#include "kernels/TensorImpl.h"

#include <cstdint>
#include <utility>

using namespace hpvm::rt;
using namespace hpvm::rt::test;

namespace {

/// Unit roundoff of fp32 (half an ulp of 1).
constexpr double kU = 1.0 / 16777216.0;

/// The fp32 epilogue's rounding, in units of kU. oneDNN computes y =
/// fl(fl(acc + fl(b'f / sc)) * sc), sc = fl(s ws), b'f the folded bias
/// rounded twice to fp32 by the folding (b - mean in fp32, then the sum):
/// the acc term is rounded 3 times (sc, the sum, the product; INT8DYN's
/// exp2f may put s one more ulp from the grid value); the bias term 5 times
/// (sc cancels). Evaluated as fma(acc, sc, b'f) the counts are lower.
constexpr double kAccUlps = 4, kBiasUlps = 6;
/// oneDNN's vectorised tanh, relative to the result, in units of kU:
/// measured at most 1.2 (0.61 ulp) here; 4 (2 ulp) allowed.
constexpr double kTanhUlps = 4;

/// How a layer's input is quantized: real = q * scale.
struct InQuant {
  bool u8 = true;
  float scale = 1.f;
};

/// The quantization of the range [lo, hi].
InQuant rangeQuant(float lo, float hi) {
  InQuant q;
  q.u8 = lo >= 0.f;
  const float m = q.u8 ? hi : std::max(-lo, hi);
  if (m > 0.f && std::isfinite(m))
    q.scale = m / (q.u8 ? 255.f : 127.f);
  return q;
}

/// The INT8DYN quantization of x: its own range, the scale rounded up to a
/// grid of 16 steps per octave.
InQuant batchQuant(const std::vector<float>& x) {
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  InQuant q = rangeQuant(*lo, *hi);
  const double t = 16.0 * std::log2(static_cast<double>(q.scale));
  // An fp32 evaluation of t may round across a grid point this one does
  // not: the test data must keep clear of them unless exactly on one.
  REQUIRE_MESSAGE((t == std::round(t) || std::fabs(t - std::round(t)) > 1e-4),
                  "test data puts the dynamic scale on a grid boundary");
  q.scale = static_cast<float>(std::exp2(std::ceil(t) / 16.0));
  return q;
}

bool isPowerOfTwo(float v) {
  int e;
  return std::frexp(v, &e) == 0.5f;
}

/// Values quantized by the reference, with `near` = 1 where the exact
/// quotient lies so close to a rounding boundary (x.5) that an fp32
/// evaluation of it (x times 1/s, a scale one ulp off) may round the other
/// way: one quantum either way is then right.
struct Quantized {
  std::vector<int32_t> q, near;
  bool anyNear = false;
};

/// rne(v / scale) clamped to [lo, hi]; `window` is the relative distance
/// to a boundary that counts as near (none when scale is a power of two:
/// every evaluation of v / scale is then exact).
Quantized quantize(const std::vector<float>& v,
                   const std::vector<float>& scales, int64_t perScale,
                   int64_t stride, int64_t step, int lo, int hi,
                   double window) {
  Quantized r;
  r.q.assign(v.size(), 0);
  r.near.assign(v.size(), 0);
  for (size_t c = 0; c < scales.size(); ++c) {
    const double s = scales[c];
    const double win = isPowerOfTwo(scales[c]) ? 0.0 : window;
    for (int64_t e = 0; e < perScale; ++e) {
      const size_t i = c * stride + e * step;
      const double d = v[i] / s;
      // nearbyint rounds half to even in the default rounding mode.
      r.q[i] = static_cast<int32_t>(
          std::clamp(std::nearbyint(d), double(lo), double(hi)));
      const double frac = d - std::floor(d);
      r.near[i] = std::fabs(frac - 0.5) <= win * std::fabs(d) && d > lo - 1 &&
                  d < hi + 1;
      r.anyNear = r.anyNear || r.near[i];
    }
  }
  return r;
}

Quantized quantizeInput(const std::vector<float>& x, const InQuant& iq) {
  return quantize(x, {iq.scale}, static_cast<int64_t>(x.size()), 0, 1,
                  iq.u8 ? 0 : -128, iq.u8 ? 255 : 127, 4 * kU);
}

/// The post-ops of a TestPost as plain values.
struct RefPost {
  std::vector<float> bias, gamma, beta, mean, var, residual;
  double eps = 0;
  Act act = Act::None, act2 = Act::None;
  float actLo = 0, actHi = 0, act2Lo = 0, act2Hi = 0;

  explicit RefPost(TestPost& p) {
    auto get = [](std::unique_ptr<TestTensor>& t) {
      return t ? t->values() : std::vector<float>{};
    };
    bias = get(p.bias);
    gamma = get(p.gamma);
    beta = get(p.beta);
    mean = get(p.mean);
    var = get(p.var);
    residual = get(p.residual);
    eps = p.ops.bnEps;
    act = p.ops.act;
    actLo = p.ops.actLo;
    actHi = p.ops.actHi;
    act2 = p.ops.act2;
    act2Lo = p.ops.act2Lo;
    act2Hi = p.ops.act2Hi;
  }
  RefPost() = default;
};

double activate(Act a, double v, float lo, float hi) {
  switch (a) {
  case Act::None:
    return v;
  case Act::Relu:
    return v < 0 ? 0 : v;
  case Act::Clip:
    return std::clamp(v, double(lo), double(hi));
  case Act::Tanh:
    return std::tanh(v);
  case Act::Sigmoid:
    return 1 / (1 + std::exp(-v));
  case Act::HardSigmoid:
    return std::clamp(lo * v + hi, 0.0, 1.0);
  case Act::HardSwish:
    return v * std::clamp(v + 3, 0.0, 6.0) / 6;
  case Act::Gelu:
    return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
  case Act::LeakyRelu:
    return v > 0 ? v : lo * v;
  case Act::Silu:
    return v / (1 + std::exp(-v));
  }
  return v;
}

/// The bound \p e of a value \p z through activation \p a (its
/// Lipschitz constant; 1 for relu and clip) plus the activation's own fp32
/// roundings, relative to \p z and the result \p y: the linear part of a
/// hard sigmoid (at most 2, mul and add), hard swish's add, multiply and
/// division.
double actBound(Act a, double e, double z, double y, float lo) {
  switch (a) {
  case Act::HardSigmoid:
    return std::fabs(lo) * e + 2 * kU * (std::fabs(lo * z) + std::fabs(y));
  case Act::HardSwish:
    return 1.5 * e + 4 * kU * (std::fabs(z) + std::fabs(y));
  case Act::Gelu: // Lipschitz constant below 1.13
    return 1.13 * e + kTanhUlps * kU * std::fabs(y);
  case Act::Silu: // Lipschitz constant below 1.1, and the multiply by x
    return 1.1 * e + kTanhUlps * kU * std::fabs(y) + kU * std::fabs(y);
  case Act::LeakyRelu: // slope 1 or alpha, and alpha's multiply
    return std::max(1.0, double(std::fabs(lo))) * e + kU * std::fabs(y);
  case Act::None:
  case Act::Relu:
  case Act::Clip:
  case Act::Tanh:
  case Act::Sigmoid:
    break;
  }
  return isTranscendental(a) ? e + kTanhUlps * kU * std::fabs(y) : e;
}

/// The int8 weights of a layer: bias and batch norm folded, then quantized
/// per output channel.
struct QuantWeights {
  Quantized q;
  std::vector<float> scale; ///< ws[k].
  std::vector<double> bias; ///< Folded b'[k], exact.
  /// |beta| + |(b - mean) g / sqrt(var + eps)|, or |b|: the magnitude the
  /// fp32 folding and epilogue round.
  std::vector<double> biasMag;
};

/// Output channel k's weights are w[k * kStride + e * kStep], e < perK.
QuantWeights quantizeWeights(const std::vector<float>& w, const RefPost& post,
                             int64_t K, int64_t perK, int64_t kStride,
                             int64_t kStep) {
  QuantWeights r;
  std::vector<float> folded = w;
  r.bias.assign(K, 0.0);
  r.biasMag.assign(K, 0.0);
  r.scale.assign(K, 1.f);
  for (int64_t k = 0; k < K; ++k) {
    const double b = post.bias.empty() ? 0.0 : post.bias[k];
    r.bias[k] = b;
    r.biasMag[k] = std::fabs(b);
    if (!post.gamma.empty()) {
      const double g = post.gamma[k] / std::sqrt(post.var[k] + post.eps);
      for (int64_t e = 0; e < perK; ++e) {
        float& v = folded[k * kStride + e * kStep];
        v = static_cast<float>(v * g);
      }
      r.bias[k] = post.beta[k] + (b - post.mean[k]) * g;
      r.biasMag[k] =
          std::fabs(post.beta[k]) + std::fabs((b - post.mean[k]) * g);
    }
    float m = 0.f;
    for (int64_t e = 0; e < perK; ++e)
      m = std::max(m, std::fabs(folded[k * kStride + e * kStep]));
    if (m > 0.f)
      r.scale[k] = m / int8WeightMax();
  }
  const auto qmax = static_cast<int32_t>(int8WeightMax());
  r.q = quantize(folded, r.scale, perK, kStride, kStep, -qmax, qmax, 2 * kU);
  return r;
}

/// A conv or dense layer as the reference computes it: output batch x K x
/// HW; output channel k's weights at w[k * kStride + e * kStep], e < perK.
struct RefLayer {
  bool dense = false;
  ConvShape s{};                   ///< Conv.
  int64_t M = 0, Kd = 0, Nout = 0; ///< Dense: x M x Kd, w Kd x Nout.
  int64_t batch() const { return dense ? M : s.N; }
  int64_t channels() const { return dense ? Nout : s.K; }
  int64_t hw() const { return dense ? 1 : s.Ho() * s.Wo(); }
  int64_t perK() const {
    return dense ? Kd : s.C / s.args.groups * s.KH * s.KW;
  }
  int64_t kStride() const { return dense ? 1 : perK(); }
  int64_t kStep() const { return dense ? Nout : 1; }

  /// y[n, k, p] = sum over the window of a * b (zero padding), in A.
  template <typename A, typename T>
  std::vector<A> sum(const std::vector<T>& a, const std::vector<T>& b) const {
    std::vector<A> y(static_cast<size_t>(batch() * channels() * hw()), A(0));
    if (dense) {
      for (int64_t m = 0; m < M; ++m)
        for (int64_t e = 0; e < Kd; ++e)
          for (int64_t n = 0; n < Nout; ++n)
            y[m * Nout + n] += A(a[m * Kd + e]) * A(b[e * Nout + n]);
      return y;
    }
    const int64_t G = s.args.groups, Cg = s.C / G, Kg = s.K / G;
    const int64_t Ho = s.Ho(), Wo = s.Wo();
    for (int64_t n = 0; n < s.N; ++n)           // image
      for (int64_t k = 0; k < s.K; ++k)         // output channel
        for (int64_t oh = 0; oh < Ho; ++oh)     // output row
          for (int64_t ow = 0; ow < Wo; ++ow) { // output column
            A acc(0);
            for (int64_t c = 0; c < Cg; ++c) { // input channel of group
              const int64_t ci = k / Kg * Cg + c;
              for (int64_t r = 0; r < s.KH; ++r) { // filter row
                const int64_t ih =
                    oh * s.args.strideH - s.args.padH + r * s.args.dilH;
                if (ih < 0 || ih >= s.H)
                  continue;
                for (int64_t t = 0; t < s.KW; ++t) { // filter column
                  const int64_t iw =
                      ow * s.args.strideW - s.args.padW + t * s.args.dilW;
                  if (iw < 0 || iw >= s.W)
                    continue;
                  acc += A(a[((n * s.C + ci) * s.H + ih) * s.W + iw]) *
                         A(b[((k * Cg + c) * s.KH + r) * s.KW + t]);
                }
              }
            }
            y[((n * s.K + k) * Ho + oh) * Wo + ow] = acc;
          }
    return y;
  }
};

RefLayer convLayer(const ConvShape& s) {
  RefLayer l;
  l.s = s;
  return l;
}

RefLayer denseLayer(int64_t M, int64_t Kd, int64_t N) {
  RefLayer l;
  l.dense = true;
  l.M = M;
  l.Kd = Kd;
  l.Nout = N;
  return l;
}

/// The reference result and, per element, how far the kernel may be from
/// it.
struct Expected {
  std::vector<double> y, bound;
  InQuant in;
  Quantized qx;
  QuantWeights qw;
};

/// Applies the post-ops after bias and batch norm to z (bound e).
void postOps(const RefPost& post, size_t i, double& z, double& e) {
  double y = activate(post.act, z, post.actLo, post.actHi);
  e = actBound(post.act, e, z, y, post.actLo);
  z = y;
  if (!post.residual.empty()) {
    z += post.residual[i];
    e += kU * (std::fabs(z) + e); // the fp32 add
    y = activate(post.act2, z, post.act2Lo, post.act2Hi);
    e = actBound(post.act2, e, z, y, post.act2Lo);
    z = y;
  }
}

/// The int8 layer on x with input quantization `in`. The bound of an
/// element of channel k, with sc = s ws[k]:
///   kU (kAccUlps |acc| sc + kBiasUlps |b'|)   the fp32 epilogue
///   + sc * sum over the window of (near_x |qw| + (|qx| + near_x) near_w)
/// (one quantum either way for each input or weight near a rounding
/// boundary; no such slack for the exact ties of a power-of-two scale),
/// then through each activation as actBound() says (relu and clip are
/// 1-Lipschitz and keep it; kTanhUlps after a tanh or sigmoid), + one fp32
/// rounding of the residual sum. A scale off by one
/// part in 10^5, a bias added after scaling or a lost clamp exceeds it.
Expected int8Reference(const RefLayer& L, const std::vector<float>& x,
                       const std::vector<float>& w, const RefPost& post,
                       const InQuant& in) {
  Expected r;
  r.in = in;
  r.qx = quantizeInput(x, in);
  r.qw =
      quantizeWeights(w, post, L.channels(), L.perK(), L.kStride(), L.kStep());
  const std::vector<int64_t> acc = L.sum<int64_t>(r.qx.q, r.qw.q.q);
  std::vector<int64_t> slack(acc.size(), 0);
  if (r.qx.anyNear || r.qw.q.anyNear) {
    std::vector<int32_t> absW(r.qw.q.q.size()), absX(r.qx.q.size());
    for (size_t i = 0; i < absW.size(); ++i)
      absW[i] = std::abs(r.qw.q.q[i]);
    for (size_t i = 0; i < absX.size(); ++i)
      absX[i] = std::abs(r.qx.q[i]) + r.qx.near[i];
    const auto a = L.sum<int64_t>(r.qx.near, absW);
    const auto b = L.sum<int64_t>(absX, r.qw.q.near);
    for (size_t i = 0; i < slack.size(); ++i)
      slack[i] = a[i] + b[i];
  }
  const int64_t K = L.channels(), HW = L.hw();
  r.y.resize(acc.size());
  r.bound.resize(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t k = static_cast<int64_t>(i) / HW % K;
    const double sc = double(in.scale) * r.qw.scale[k];
    double z = double(acc[i]) * sc + r.qw.bias[k];
    double e = kU * (kAccUlps * std::fabs(double(acc[i])) * sc +
                     kBiasUlps * r.qw.biasMag[k]) +
               double(slack[i]) * sc;
    postOps(post, i, z, e);
    r.y[i] = z;
    r.bound[i] = e;
  }
  return r;
}

/// The exact fp32 layer in double: conv/dense, bias, batch norm (unfolded),
/// post-ops.
std::vector<double> exactReference(const RefLayer& L,
                                   const std::vector<float>& x,
                                   const std::vector<float>& w,
                                   const RefPost& post) {
  std::vector<double> y =
      L.sum<double>(std::vector<double>(x.begin(), x.end()),
                    std::vector<double>(w.begin(), w.end()));
  const int64_t K = L.channels(), HW = L.hw();
  for (size_t i = 0; i < y.size(); ++i) {
    const int64_t k = static_cast<int64_t>(i) / HW % K;
    double z = y[i] + (post.bias.empty() ? 0.0 : post.bias[k]);
    if (!post.gamma.empty())
      z = post.beta[k] + (z - post.mean[k]) * post.gamma[k] /
                             std::sqrt(post.var[k] + post.eps);
    double e = 0;
    postOps(post, i, z, e);
    y[i] = z;
  }
  return y;
}

/// Checks |got - want| <= bound element by element; reports the worst.
void checkWithin(const std::vector<float>& got, const Expected& want,
                 const std::string& what) {
  REQUIRE_MESSAGE(got.size() == want.y.size(), what);
  size_t bad = 0, worst = 0;
  double worstRatio = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - want.y[i]);
    const double ratio = err / std::max(want.bound[i], 1e-300);
    if (!(err <= want.bound[i]))
      ++bad;
    if (!(ratio <= worstRatio)) {
      worstRatio = ratio;
      worst = i;
    }
  }
  INFO(what << " (input " << (want.in.u8 ? "u8" : "s8") << ", scale "
            << want.in.scale << "): " << bad << " of " << got.size()
            << " elements outside the bound; worst at " << worst << ": got "
            << got[worst] << ", want " << want.y[worst] << ", bound "
            << want.bound[worst]);
  CHECK(bad == 0);
}

/// The reference's input quantization for knob k on input x.
InQuant inQuantOf(const KnobSpec& k, const std::vector<float>& x) {
  return k.precision == Precision::INT8DYN ? batchQuant(x)
                                           : rangeQuant(k.inLo, k.inHi);
}

/// An input distribution and how the knob quantizes it.
struct Mode {
  const char* name;
  float dataLo, dataHi;
  bool dynamic;
  float inLo, inHi; ///< Static range.
};

/// Every quantization the tests run: unsigned and signed, static (inside
/// the range, and with data beyond it on both sides: saturation at 0/255
/// and -128/127) and dynamic.
const Mode kModes[] = {
    {"u8 static", 0.f, 1.f, false, 0.f, 1.f},
    {"u8 static, data beyond the range", -0.25f, 1.f, false, 0.f, 0.8f},
    {"s8 static, data beyond the range", -1.f, 1.f, false, -0.6f, 0.85f},
    {"u8 dynamic", 0.f, 1.f, true, 0.f, 0.f},
    {"s8 dynamic", -1.f, 1.f, true, 0.f, 0.f},
    {"s8 dynamic, asymmetric", -0.3f, 1.5f, true, 0.f, 0.f},
};

std::vector<size_t> dimsOf(const ConvShape& s, bool output) {
  if (output)
    return {size_t(s.N), size_t(s.K), size_t(s.Ho()), size_t(s.Wo())};
  return {size_t(s.N), size_t(s.C), size_t(s.H), size_t(s.W)};
}

/// Runs an int8 conv and returns its NCHW result.
std::vector<float> runConv8(TestTensor& x, TestTensor& w, const ConvShape& s,
                            const PostOps& post, const KnobSpec& knob) {
  TestTensor y(dimsOf(s, true));
  runConv(x.get(), w.get(), s.args, post, knob, y.get());
  return y.values();
}

} // namespace

TEST_CASE("Kernels: int8 conv matches the quantized reference for every "
          "shape, post-op chain and input quantization") {
  unsigned seed = 800;
  size_t combination = 0;
  for (const Shape& sh : readShapes("conv.txt")) {
    const ConvShape s = convShape(sh);
    const RefLayer L = convLayer(s);
    TestTensor x(dimsOf(s, false));
    TestTensor w(
        {size_t(s.K), size_t(s.C / s.args.groups), size_t(s.KH), size_t(s.KW)});
    const float ws = 1.f / std::sqrt(float(L.perK()));
    w.set(randomVec(w.size(), ++seed, -ws, ws));
    const std::vector<float> wv = w.values();
    for (const Mode& mode : kModes) {
      x.set(randomVec(x.size(), ++seed, mode.dataLo, mode.dataHi));
      const std::vector<float> xv = x.values();
      const KnobSpec knob = int8Knob(mode.dynamic, mode.inLo, mode.inHi);
      ++combination;
      for (int v = 0; v < TestPost::kVariants; ++v) {
        if (!hpvm::test::runsVariant(combination, v, TestPost::kVariants))
          continue;
        TestPost post(v, s.K, dimsOf(s, true), ++seed);
        const RefPost rp(post);
        checkWithin(runConv8(x, w, s, post.ops, knob),
                    int8Reference(L, xv, wv, rp, inQuantOf(knob, xv)),
                    sh.name() + ", " + mode.name + ", post-op chain " +
                        std::to_string(v));
      }
    }
  }
}

TEST_CASE("Kernels: int8 dense matches the quantized reference for 2-D and "
          "4-D inputs, every post-op chain and input quantization") {
  unsigned seed = 900;
  for (const Shape& sh : readShapes("dense.txt")) {
    const int64_t M = sh.get("mb", 1), C = sh.get("ic", 1), H = sh.get("ih", 1),
                  W = sh.get("iw", H), N = sh.get("oc", 1), Kd = C * H * W;
    const RefLayer L = denseLayer(M, Kd, N);
    TestTensor w({1, 1, size_t(Kd), size_t(N)});
    const float ws = 1.f / std::sqrt(float(Kd));
    w.set(randomVec(w.size(), ++seed, -ws, ws));
    const std::vector<float> wv = w.values();
    for (bool fourD : {false, true}) {
      const std::vector<size_t> xDims =
          fourD
              ? std::vector<size_t>{size_t(M), size_t(C), size_t(H), size_t(W)}
              : std::vector<size_t>{size_t(M), size_t(Kd)};
      const std::vector<size_t> yDims =
          fourD ? std::vector<size_t>{size_t(M), size_t(N), 1, 1}
                : std::vector<size_t>{size_t(M), size_t(N)};
      TestTensor x(xDims);
      for (const Mode& mode : kModes) {
        x.set(randomVec(x.size(), ++seed, mode.dataLo, mode.dataHi));
        const std::vector<float> xv = x.values();
        const KnobSpec knob = int8Knob(mode.dynamic, mode.inLo, mode.inHi);
        for (int v = 0; v < TestPost::kVariants; ++v) {
          TestPost post(v, N, yDims, ++seed);
          const RefPost rp(post);
          TestTensor y(yDims);
          runDense(x.get(), w.get(), post.ops, knob, y.get());
          checkWithin(y.values(),
                      int8Reference(L, xv, wv, rp, inQuantOf(knob, xv)),
                      sh.name() + (fourD ? " 4-D, " : " 2-D, ") + mode.name +
                          ", post-op chain " + std::to_string(v));
        }
      }
    }
  }
}

TEST_CASE("Kernels: int8 layers quantize an input left blocked by an fp32 "
          "conv") {
  // fp32 conv (blocked result, K = 32, or padded blocks, K = 24) -> int8
  // conv and int8 dense straight on it, static and dynamic.
  unsigned seed = 1000;
  for (int64_t K : {32, 24}) {
    ConvShape s0{2, 16, 9, 9, K, 3, 3, ConvArgs{1, 1, 1, 1, 1}};
    TestTensor x(dimsOf(s0, false)), w0({size_t(K), 16, 3, 3});
    x.set(randomVec(x.size(), ++seed));
    w0.set(randomVec(w0.size(), ++seed, -0.1f, 0.1f));
    TestTensor c(dimsOf(s0, true));
    PostOps relu;
    relu.act = Act::Relu;
    runConv(x.get(), w0.get(), s0.args, relu, KnobSpec{}, c.get());

    ConvShape s1{2, K, 9, 9, 16, 3, 3, ConvArgs{0, 0, 2, 2, 1}};
    TestTensor w1({16, size_t(K), 3, 3});
    w1.set(randomVec(w1.size(), ++seed, -0.1f, 0.1f));
    const int64_t Kd = K * 81, N = 10;
    TestTensor fw({1, 1, size_t(Kd), 10});
    fw.set(randomVec(fw.size(), ++seed, -0.02f, 0.02f));
    for (bool dynamic : {false, true}) {
      const KnobSpec knob = int8Knob(dynamic, 0.f, 0.9f);
      std::vector<float> y = runConv8(c, w1, s1, PostOps{}, knob);
      TestTensor d({2, size_t(N), 1, 1});
      runDense(c.get(), fw.get(), PostOps{}, knob, d.get());
      // Read c only now: the int8 layers above saw its blocked copy.
      const std::vector<float> cv = c.values();
      const RefPost rp;
      checkWithin(y,
                  int8Reference(convLayer(s1), cv, w1.values(), rp,
                                inQuantOf(knob, cv)),
                  "conv on a blocked input, K " + std::to_string(K));
      checkWithin(d.values(),
                  int8Reference(denseLayer(2, Kd, N), cv, fw.values(), rp,
                                inQuantOf(knob, cv)),
                  "dense on a blocked input, K " + std::to_string(K));
    }
  }
}

TEST_CASE("Kernels: int8 input quantization rounds half to even, "
          "saturates at 0..255 and -128..127, and a zero range has scale 1") {
  // A 1x1 conv, one input and one output channel, weight 1 (q = 127, ws =
  // 1/127): y = q * s up to the epilogue's rounding, so q = rne(y / s).
  struct Case {
    const char* name;
    KnobSpec knob;
    float s;                   ///< The input scale the knob must give.
    std::vector<float> xOverS; ///< Inputs, in units of s.
    std::vector<int> q;        ///< Their quantized values.
  };
  // Power-of-two scales make x / s exact: these are true ties. 255/64 and
  // 127/64 are the ranges with scale 1/64.
  const std::vector<Case> cases{
      {"u8 static",
       int8Knob(false, 0.f, 255.f / 64),
       1.f / 64,
       {0.5f, 1.5f, 2.5f, 3.5f, -0.5f, -3.f, 100.49f, 100.51f, 254.5f, 255.f,
        255.5f, 300.f},
       {0, 2, 2, 4, 0, 0, 100, 101, 254, 255, 255, 255}},
      {"s8 static",
       int8Knob(false, -1.f, 127.f / 64),
       1.f / 64,
       {0.5f, 1.5f, -0.5f, -1.5f, -2.5f, -126.5f, -127.f, -127.5f, -128.5f,
        -200.f, 126.5f, 127.5f, 200.f},
       {0, 2, 0, -2, -2, -126, -127, -128, -128, -128, 126, 127, 127}},
      // The dynamic range is the data's own: the largest value sets s.
      {"u8 dynamic",
       int8Knob(true),
       1.f / 64,
       {0.5f, 1.5f, 2.5f, 254.5f, 255.f},
       {0, 2, 2, 254, 255}},
      {"s8 dynamic",
       int8Knob(true),
       1.f / 64,
       {-0.5f, -1.5f, -2.5f, 0.5f, 126.5f, -127.f},
       {0, -2, -2, 0, 126, -127}},
      // A largest value of 245 * 2^(-127/16) = 0.9997 gives s = 0.9997/255
      // = 2^(-7.995), rounded up to the grid: 2^(-127/16). Without the
      // rounding, 245 would be 255.
      {"u8 dynamic rounded up to the grid",
       int8Knob(true),
       std::exp2(-127.f / 16),
       {0.f, 100.f, 245.f},
       {0, 100, 245}},
      // A zero calibrated range: scale 1.
      {"zero range",
       int8Knob(false, 0.f, 0.f),
       1.f,
       {0.4f, 0.6f, 2.5f, 3.5f, 300.f, -3.f},
       {0, 1, 2, 4, 255, 0}},
  };
  for (const Case& c : cases) {
    const size_t n = c.xOverS.size();
    TestTensor x({1, 1, 1, n}), w({1, 1, 1, 1});
    std::vector<float> xv(n);
    for (size_t i = 0; i < n; ++i)
      xv[i] = c.xOverS[i] * c.s;
    x.set(xv);
    w.set({1.f});
    TestTensor y({1, 1, 1, n});
    runConv(x.get(), w.get(), ConvArgs{}, PostOps{}, c.knob, y.get());
    const std::vector<float> yv = y.values();
    for (size_t i = 0; i < n; ++i) {
      INFO(c.name << ": x = " << c.xOverS[i] << " s, y = " << yv[i]);
      const double q = std::nearbyint(yv[i] / c.s);
      CHECK(q == c.q[i]);
      CHECK(std::fabs(yv[i] - q * c.s) <= 4 * kU * std::fabs(q * c.s));
    }
  }
}

TEST_CASE("Kernels: int8 weights are quantized per output channel, "
          "rounding half to even") {
  // One output channel, four inputs: the largest weight 127/64 makes ws =
  // 1/64 (exact ties); input position p is 1 on channel p only (q = 64 at
  // s = 1/64), so y[p] = 64 qw[p] s ws = qw[p] / 64.
  const std::vector<float> wOverWs{127.f, 2.5f, -1.5f, 0.5f};
  const std::vector<int> qw{127, 2, -2, 0};
  TestTensor x({1, 4, 1, 4}), w({1, 4, 1, 1}), y({1, 1, 1, 4});
  std::vector<float> xv(16, 0.f), wv(4);
  for (int p = 0; p < 4; ++p) {
    xv[p * 4 + p] = 1.f;
    wv[p] = wOverWs[p] / 64;
  }
  x.set(xv);
  w.set(wv);
  runConv(x.get(), w.get(), ConvArgs{}, PostOps{},
          int8Knob(false, 0.f, 255.f / 64), y.get());
  const std::vector<float> yv = y.values();
  for (int p = 0; p < 4; ++p) {
    INFO("w = " << wOverWs[p] << " ws, y = " << yv[p]);
    CHECK(std::nearbyint(yv[p] * 64) == qw[p]);
  }
}

TEST_CASE("Kernels: an int8 layer gives the folded bias for an all-zero "
          "input or an all-zero weight channel") {
  unsigned seed = 1200;
  const ConvShape s{2, 8, 6, 6, 4, 3, 3, ConvArgs{1, 1, 1, 1, 1}};
  TestTensor x(dimsOf(s, false)), w({4, 8, 3, 3});
  std::vector<float> wv = randomVec(w.size(), ++seed, -0.2f, 0.2f);
  std::fill(wv.begin() + 2 * 72, wv.begin() + 3 * 72, 0.f); // channel 2
  w.set(wv);
  const int64_t Kd = 8 * 36, N = 5;
  TestTensor fw({1, 1, size_t(Kd), size_t(N)});
  std::vector<float> fwv = randomVec(fw.size(), ++seed, -0.05f, 0.05f);
  for (int64_t e = 0; e < Kd; ++e)
    fwv[e * N + 3] = 0.f; // output 3
  fw.set(fwv);
  for (bool zeroInput : {true, false}) {
    x.set(zeroInput ? std::vector<float>(x.size(), 0.f)
                    : randomVec(x.size(), ++seed));
    const std::vector<float> xv = x.values();
    for (const KnobSpec& knob :
         {int8Knob(true), int8Knob(false, -1.f, 1.f), int8Knob(false, 0, 0)}) {
      for (int v = 0; v < TestPost::kVariants; ++v) {
        TestPost post(v, 4, dimsOf(s, true), ++seed);
        const RefPost rp(post);
        const Expected want =
            int8Reference(convLayer(s), xv, wv, rp, inQuantOf(knob, xv));
        const std::vector<float> y = runConv8(x, w, s, post.ops, knob);
        checkWithin(y, want,
                    std::string(zeroInput ? "zero" : "random") +
                        " input, post-op chain " + std::to_string(v));
        // Where the accumulator is zero, the result is the bias alone.
        for (size_t i = 0; i < y.size(); ++i) {
          const int64_t k = static_cast<int64_t>(i) / 36 % 4;
          if (!zeroInput && k != 2)
            continue;
          double z = want.qw.bias[k], e = 0;
          postOps(rp, i, z, e);
          CHECK(std::fabs(y[i] - z) <= want.bound[i]);
        }
        TestPost dpost(v, N, {2, size_t(N), 1, 1}, ++seed);
        TestTensor d({2, size_t(N), 1, 1});
        runDense(x.get(), fw.get(), dpost.ops, knob, d.get());
        checkWithin(d.values(),
                    int8Reference(denseLayer(2, Kd, N), xv, fwv, RefPost(dpost),
                                  inQuantOf(knob, xv)),
                    std::string("dense, ") + (zeroInput ? "zero" : "random") +
                        " input, post-op chain " + std::to_string(v));
      }
    }
  }
}

TEST_CASE("Kernels: int8 conv and dense follow new weight values") {
  // The second weights are three times larger: stale per-channel weight
  // scales would put every result off by that factor.
  const ConvShape s{2, 8, 7, 7, 16, 3, 3, ConvArgs{1, 1, 1, 1, 1}};
  TestTensor x(dimsOf(s, false)), w({16, 8, 3, 3});
  x.set(randomVec(x.size(), 1300));
  const std::vector<float> xv = x.values();
  TestTensor fw({1, 1, 8 * 49, 6});
  const RefPost none;
  for (const KnobSpec& knob : {int8Knob(false, -1.f, 1.f), int8Knob(true)}) {
    for (int round = 0; round < 2; ++round) {
      const float r = round == 0 ? 0.1f : 0.3f;
      w.set(randomVec(w.size(), 1301 + round, -r, r));
      fw.set(randomVec(fw.size(), 1303 + round, -r / 4, r / 4));
      checkWithin(runConv8(x, w, s, PostOps{}, knob),
                  int8Reference(convLayer(s), xv, w.values(), none,
                                inQuantOf(knob, xv)),
                  "conv, weights " + std::to_string(round));
      TestTensor d({2, 6, 1, 1});
      runDense(x.get(), fw.get(), PostOps{}, knob, d.get());
      checkWithin(d.values(),
                  int8Reference(denseLayer(2, 8 * 49, 6), xv, fw.values(), none,
                                inQuantOf(knob, xv)),
                  "dense, weights " + std::to_string(round));
    }
  }
}

TEST_CASE("Kernels: int8 conv and dense stay within 3% of the exact fp32 "
          "result, 5% with 7-bit weights") {
  // Gross mistakes (a lost bias, a wrong scale) show here even where the
  // quantized reference shares them. Data inside the calibrated range.
  // (Below VNNI the weights have 7 bits: twice the weight rounding.)
  const double bound = int8WeightMax() == 127.f ? 0.03 : 0.05;
  unsigned seed = 1400;
  auto check = [bound](const std::vector<float>& got,
                       const std::vector<double>& exact,
                       const std::string& what) {
    double m = 0, err = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      m = std::max(m, std::fabs(exact[i]));
      err = std::max(err, std::fabs(got[i] - exact[i]));
    }
    INFO(what << ": largest error " << err << " of max |y| " << m);
    CHECK(err <= bound * m);
  };
  for (const Shape& sh : readShapes("conv.txt")) {
    const ConvShape s = convShape(sh);
    const RefLayer L = convLayer(s);
    TestTensor x(dimsOf(s, false));
    TestTensor w(
        {size_t(s.K), size_t(s.C / s.args.groups), size_t(s.KH), size_t(s.KW)});
    const float ws = 1.f / std::sqrt(float(L.perK()));
    w.set(randomVec(w.size(), ++seed, -ws, ws));
    for (const Mode& mode : {kModes[0], kModes[4]}) {
      x.set(randomVec(x.size(), ++seed, mode.dataLo, mode.dataHi));
      const KnobSpec knob = int8Knob(mode.dynamic, mode.inLo, mode.inHi);
      for (int v = 0; v < TestPost::kVariants; ++v) {
        TestPost post(v, s.K, dimsOf(s, true), ++seed);
        check(runConv8(x, w, s, post.ops, knob),
              exactReference(L, x.values(), w.values(), RefPost(post)),
              sh.name() + ", " + mode.name + ", post-op chain " +
                  std::to_string(v));
      }
    }
  }
  for (const Shape& sh : readShapes("dense.txt")) {
    const int64_t M = sh.get("mb", 1), C = sh.get("ic", 1), H = sh.get("ih", 1),
                  W = sh.get("iw", H), N = sh.get("oc", 1), Kd = C * H * W;
    TestTensor x({size_t(M), size_t(C), size_t(H), size_t(W)});
    TestTensor w({1, 1, size_t(Kd), size_t(N)});
    const float ws = 1.f / std::sqrt(float(Kd));
    w.set(randomVec(w.size(), ++seed, -ws, ws));
    for (const Mode& mode : {kModes[0], kModes[4]}) {
      x.set(randomVec(x.size(), ++seed, mode.dataLo, mode.dataHi));
      const KnobSpec knob = int8Knob(mode.dynamic, mode.inLo, mode.inHi);
      for (int v = 0; v < TestPost::kVariants; ++v) {
        TestPost post(v, N, {size_t(M), size_t(N), 1, 1}, ++seed);
        TestTensor y({size_t(M), size_t(N), 1, 1});
        runDense(x.get(), w.get(), post.ops, knob, y.get());
        check(y.values(),
              exactReference(denseLayer(M, Kd, N), x.values(), w.values(),
                             RefPost(post)),
              sh.name() + ", " + mode.name + ", post-op chain " +
                  std::to_string(v));
      }
    }
  }
}

TEST_CASE("Kernels: an int8 conv's u8 result feeds, through a max pool, the "
          "next int8 conv as that conv would quantize it itself") {
  // A (int8, s8 input) -> [max pool] -> B (int8, u8 input with range
  // [0, hiB]). Chained: A writes u8 at B's scale, the pool keeps it, B
  // takes it as it is. Unchained: A writes fp32, the pool pools fp32, B
  // quantizes. Both must agree with the reference on the values B
  // received, and the u8 values may differ from B's own quantization only
  // where A's epilogue and B's quantization round a near tie differently.
  const ConvShape sA{2, 16, 12, 12, 32, 3, 3, ConvArgs{1, 1, 1, 1, 1}};
  TestTensor x(dimsOf(sA, false)), wA({32, 16, 3, 3});
  x.set(randomVec(x.size(), 1500));
  wA.set(randomVec(wA.size(), 1501, -1.f / 12, 1.f / 12));
  TestPost postA(1, 32, dimsOf(sA, true), 1502); // bias, relu
  const KnobSpec knobA = int8Knob(false, -1.f, 1.f);
  PoolArgs pool;
  pool.kh = pool.kw = 3;
  pool.strideH = pool.strideW = 2;
  pool.padH = pool.padW = 1;
  TestTensor wB({24, 32, 3, 3});
  wB.set(randomVec(wB.size(), 1503, -1.f / 17, 1.f / 17));
  const std::vector<float> wBv = wB.values();
  for (bool withPool : {true, false}) {
    for (Act actA : {Act::Relu, Act::None}) {
      const std::string what = std::string(withPool ? "with" : "without") +
                               " pool, A's activation " +
                               (actA == Act::Relu ? "relu" : "none");
      PostOps opsA = postA.ops;
      opsA.act = actA;
      TestTensor a32(dimsOf(sA, true)), aq(dimsOf(sA, true));
      runConv(x.get(), wA.get(), sA.args, opsA, knobA, a32.get());
      const std::vector<float> a32v = a32.values();
      // B's range leaves the largest fifth of A's results saturated.
      const float hiB = 0.8f * *std::max_element(a32v.begin(), a32v.end());
      const KnobSpec knobB = int8Knob(false, 0.f, hiB);
      const float sB = int8UnsignedScale(knobB);
      CHECK(sB == hiB / 255.f);
      opsA.quantizeOut = sB;
      runConv(x.get(), wA.get(), sA.args, opsA, knobA, aq.get());
      using dt = dnnl::memory::data_type;
      CHECK(kern::storedMemory(aq.get()).get_desc().data_type() == dt::u8);
      CHECK(kern::implOf(aq.get()).memScale == sB);

      const int64_t h = withPool ? 6 : 12;
      TestTensor pq({2, 32, size_t(h), size_t(h)}),
          p32({2, 32, size_t(h), size_t(h)});
      TestTensor* chainIn = &aq;
      TestTensor* selfIn = &a32;
      if (withPool) {
        runPool(aq.get(), pool, KnobSpec{}, pq.get());
        runPool(a32.get(), pool, KnobSpec{}, p32.get());
        CHECK(kern::storedMemory(pq.get()).get_desc().data_type() == dt::u8);
        CHECK(kern::implOf(pq.get()).memScale == sB);
        chainIn = &pq;
        selfIn = &p32;
      }
      const ConvShape shapeB{2, 32, h, h, 24, 3, 3, ConvArgs{1, 1, 1, 1, 1}};
      TestPost postB(2, 24, dimsOf(shapeB, true), 1504); // bias, bn, tanh
      const std::vector<float> yChain =
          runConv8(*chainIn, wB, shapeB, postB.ops, knobB);
      const std::vector<float> ySelf =
          runConv8(*selfIn, wB, shapeB, postB.ops, knobB);

      // ensureHost of the u8 tensor gives q * sB.
      const std::vector<float> chainV = chainIn->values();
      const std::vector<float> selfV = selfIn->values();
      const InQuant inB = rangeQuant(0.f, hiB);
      // Near a tie: within fp32 rounding of A's epilogue and B's
      // quantization (a few ulp) of x.5.
      const Quantized qSelf =
          quantize(selfV, {sB}, static_cast<int64_t>(selfV.size()), 0, 1, 0,
                   255, 8 * kU);
      std::vector<int32_t> dq(chainV.size());
      for (size_t i = 0; i < chainV.size(); ++i) {
        const double q = std::nearbyint(chainV[i] / sB);
        INFO(what << ": element " << i << " = " << chainV[i]);
        REQUIRE((q >= 0 && q <= 255));
        REQUIRE(chainV[i] == static_cast<float>(q) * sB);
        dq[i] = std::abs(static_cast<int32_t>(q) - qSelf.q[i]);
        REQUIRE(dq[i] <= 1);
        REQUIRE((dq[i] == 0 || qSelf.near[i]));
      }

      // B on each path against the reference on the values it received.
      const RefLayer LB = convLayer(shapeB);
      const RefPost rpB(postB);
      const Expected wantChain = int8Reference(LB, chainV, wBv, rpB, inB);
      const Expected wantSelf = int8Reference(LB, selfV, wBv, rpB, inB);
      checkWithin(yChain, wantChain, "B chained, " + what);
      checkWithin(ySelf, wantSelf, "B unchained, " + what);
      // And against each other: one quantum per differing input, through
      // B's weights.
      std::vector<int32_t> absW(wantChain.qw.q.q.size());
      for (size_t i = 0; i < absW.size(); ++i)
        absW[i] = std::abs(wantChain.qw.q.q[i]);
      const std::vector<int64_t> spread = LB.sum<int64_t>(dq, absW);
      for (size_t i = 0; i < yChain.size(); ++i) {
        const int64_t k = static_cast<int64_t>(i) / (h * h) % 24;
        const double diff = std::fabs(double(yChain[i]) - ySelf[i]);
        INFO(what << ": B's element " << i);
        CHECK(diff <= wantChain.bound[i] + wantSelf.bound[i] +
                          double(spread[i]) * sB * wantChain.qw.scale[k]);
      }
      if (std::all_of(dq.begin(), dq.end(), [](int32_t d) { return d == 0; }))
        CHECK(yChain == ySelf);

      // A consumer with another scale requantizes the dequantized values.
      const KnobSpec knobC = int8Knob(false, 0.f, 1.5f * hiB);
      checkWithin(
          runConv8(*chainIn, wB, shapeB, postB.ops, knobC),
          int8Reference(LB, chainV, wBv, rpB, rangeQuant(0, 1.5f * hiB)),
          "B with another scale, " + what);
    }
  }
}
