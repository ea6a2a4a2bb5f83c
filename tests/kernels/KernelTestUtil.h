// KernelTestUtil.h - helpers of the kernel tests: owned test tensors,
// benchdnn-style shape lists, random data and tolerance comparisons.
#ifndef HPVM_TESTS_KERNELS_KERNELTESTUTIL_H
#define HPVM_TESTS_KERNELS_KERNELTESTUTIL_H

#include "approx/Isa.h"
#include "kernels/Kernels.h"
#include "kernels/Primitives.h"
#include "kernels/Reference.h"
#include "kernels/TensorImpl.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace hpvm::rt::test {

/// A Tensor with owned dims, storage through the kernels' storage API.
class TestTensor {
public:
  explicit TestTensor(std::vector<size_t> dims) : dims_(std::move(dims)) {
    std::memset(&t_, 0, sizeof(t_));
    t_.dims.num_dims = static_cast<int>(dims_.size());
    t_.dims.dim_sizes = dims_.data();
    allocHost(&t_);
  }
  TestTensor(const TestTensor&) = delete;
  TestTensor& operator=(const TestTensor&) = delete;
  ~TestTensor() { releaseStorage(&t_); }

  Tensor* get() { return &t_; }
  const Tensor* get() const { return &t_; }
  size_t size() const { return t_.num_elems; }
  size_t dim(int i) const { return dims_[i]; }

  /// Writes v into the host buffer and tells the kernels.
  void set(const std::vector<float>& v) {
    REQUIRE(v.size() == size());
    allocHost(&t_);
    std::copy(v.begin(), v.end(), static_cast<float*>(t_.host_data));
    hostModified(&t_);
  }
  /// Reads the NCHW values (reorders from a blocked layout if needed).
  std::vector<float> values() {
    ensureHost(&t_);
    const float* p = static_cast<const float*>(t_.host_data);
    return std::vector<float>(p, p + size());
  }

private:
  std::vector<size_t> dims_;
  Tensor t_;
};

/// n uniform values in [lo, hi) from a fixed seed.
inline std::vector<float> randomVec(size_t n, unsigned seed, float lo = -1.f,
                                    float hi = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v)
    x = dist(gen);
  return v;
}

/// Largest |v|.
/// The largest int8 weight code at this machine's ISA level: 127 with VNNI
/// or AMX, 63 below (oneDNN's 16-bit pair sums would saturate; Isa.h).
inline float int8WeightMax() { return approx::int8Vnni() ? 127.f : 63.f; }

inline float maxAbs(const std::vector<float>& v) {
  float m = 0.f;
  for (float x : v)
    m = std::max(m, std::fabs(x));
  return m;
}

/// Checks |got - want| <= atol + rtol * |want| element by element, with
/// atol relative to the output's scale; reports the worst element.
inline void checkClose(const std::vector<float>& got,
                       const std::vector<float>& want, double rtol,
                       double atolScale, const std::string& what) {
  REQUIRE_MESSAGE(got.size() == want.size(), what);
  double atol = atolScale * std::max(1.0, static_cast<double>(maxAbs(want)));
  size_t worst = 0, bad = 0;
  double worstExcess = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    double lim = atol + rtol * std::fabs(static_cast<double>(want[i]));
    if (!(err <= lim)) {
      ++bad;
      if (err - lim > worstExcess || std::isnan(err)) {
        worstExcess = err - lim;
        worst = i;
      }
    }
  }
  INFO(what << ": " << bad << " of " << got.size() << " elements off; worst at "
            << worst << ": got " << (got.empty() ? 0.f : got[worst])
            << ", want " << (want.empty() ? 0.f : want[worst]));
  CHECK(bad == 0);
}

/// One line of a shape list: integer fields (mb, ic, ...) and strings.
struct Shape {
  std::map<std::string, int64_t> num;
  std::map<std::string, std::string> str;
  std::string line;
  int64_t get(const std::string& k, int64_t dflt) const {
    auto it = num.find(k);
    return it == num.end() ? dflt : it->second;
  }
  std::string name() const {
    auto it = str.find("n");
    return it == str.end() ? line : it->second;
  }
};

/// Reads tests/kernels/shapes/<file>: one benchdnn-style descriptor per
/// line (`mb2ic3ih32oc16kh3ph1n"name"`), '#' comments.
inline std::vector<Shape> readShapes(const std::string& file) {
  std::string path =
      std::string(HPVM_SOURCE_DIR) + "/tests/kernels/shapes/" + file;
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot open shape list " + path);
  std::vector<Shape> shapes;
  std::string line;
  std::regex field(R"re(([a-z]+)(?:(\d+)|"([^"]*)"))re");
  int lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.empty() || line[0] == '#')
      continue;
    Shape s;
    s.line = line;
    size_t consumed = 0;
    for (std::sregex_iterator it(line.begin(), line.end(), field), end;
         it != end; ++it) {
      if (static_cast<size_t>(it->position()) != consumed)
        break;
      consumed += it->length();
      if ((*it)[2].matched)
        s.num[(*it)[1]] = std::stoll((*it)[2]);
      else
        s.str[(*it)[1]] = (*it)[3];
    }
    if (consumed != line.size())
      throw std::runtime_error(path + ":" + std::to_string(lineNo) +
                               ": cannot parse shape '" + line + "'");
    shapes.push_back(std::move(s));
  }
  if (shapes.empty())
    throw std::runtime_error("shape list " + path + " is empty");
  return shapes;
}

/// Convolution problem of a conv.txt line.
struct ConvShape {
  int64_t N, C, H, W, K, KH, KW;
  ConvArgs args;
  int64_t Ho() const {
    return 1 + (H + 2 * args.padH - args.spanH(KH)) / args.strideH;
  }
  int64_t Wo() const {
    return 1 + (W + 2 * args.padW - args.spanW(KW)) / args.strideW;
  }
};

inline ConvShape convShape(const Shape& s) {
  ConvShape c;
  c.N = s.get("mb", 1);
  c.C = s.get("ic", 1);
  c.H = s.get("ih", 1);
  c.W = s.get("iw", c.H);
  c.K = s.get("oc", 1);
  c.KH = s.get("kh", 1);
  c.KW = s.get("kw", c.KH);
  c.args.groups = static_cast<int>(s.get("g", 1));
  c.args.strideH = static_cast<int>(s.get("sh", 1));
  c.args.strideW = static_cast<int>(s.get("sw", c.args.strideH));
  c.args.padH = static_cast<int>(s.get("ph", 0));
  c.args.padW = static_cast<int>(s.get("pw", c.args.padH));
  // benchdnn's dh/dw count from 0 (oneDNN's dilation): taps dh + 1 apart.
  c.args.dilH = static_cast<int>(s.get("dh", 0)) + 1;
  c.args.dilW = static_cast<int>(s.get("dw", c.args.dilH - 1)) + 1;
  return c;
}

/// KnobSpec with the given variant and precision.
inline KnobSpec knobOf(Variant v, Precision p, int rate = 1, int offset = 0) {
  KnobSpec k;
  k.variant = v;
  k.precision = p;
  k.rate = rate;
  k.offset = offset;
  return k;
}

/// An int8 knob: static with the range [lo, hi], or dynamic.
inline KnobSpec int8Knob(bool dynamic, float lo = 0.f, float hi = 0.f) {
  KnobSpec k;
  k.precision = dynamic ? Precision::INT8DYN : Precision::INT8;
  k.hasRange = !dynamic;
  k.inLo = lo;
  k.inHi = hi;
  return k;
}

/// Post-op tensors of a test, owned, with the matching PostOps and the
/// reference sequence (unfused, in the PostOps order).
struct TestPost {
  std::unique_ptr<TestTensor> bias, gamma, beta, mean, var, residual;
  PostOps ops;

  /// Variant v of the post-op chains the tests use, for K channels and an
  /// output of \p outDims.
  TestPost(int v, int64_t K, const std::vector<size_t>& outDims,
           unsigned seed) {
    auto perK = [&](unsigned s, float lo, float hi) {
      auto t = std::make_unique<TestTensor>(
          std::vector<size_t>{1, static_cast<size_t>(K), 1, 1});
      t->set(randomVec(K, seed + s, lo, hi));
      return t;
    };
    if (v == 1 || v == 2 || v == 3) {
      bias = perK(1, -0.5f, 0.5f);
      ops.bias = bias->get();
    }
    if (v == 2 || v == 4 || v == 8) {
      gamma = perK(2, 0.5f, 1.5f);
      beta = perK(3, -0.5f, 0.5f);
      mean = perK(4, -0.5f, 0.5f);
      var = perK(5, 0.1f, 1.0f);
      ops.bnGamma = gamma->get();
      ops.bnBeta = beta->get();
      ops.bnMean = mean->get();
      ops.bnVar = var->get();
      ops.bnEps = 1e-3;
    }
    if (v == 1)
      ops.act = Act::Relu;
    if (v == 2)
      ops.act = Act::Tanh;
    if (v == 5) { // a squeeze-and-excitation gate
      bias = perK(1, -0.5f, 0.5f);
      ops.bias = bias->get();
      ops.act = Act::Sigmoid;
    }
    if (v == 6) { // MobileNet v3: batch norm folded into a bias, hardswish
      bias = perK(1, -0.5f, 0.5f);
      ops.bias = bias->get();
      ops.act = Act::HardSwish;
    }
    if (v == 7) { // a MobileNet v3 gate: hard sigmoid with alpha and beta
      bias = perK(1, -0.5f, 0.5f);
      ops.bias = bias->get();
      ops.act = Act::HardSigmoid;
      ops.actLo = 0.4f;
      ops.actHi = 0.45f;
    }
    if (v == 8) // EfficientNet: batch norm, SiLU
      ops.act = Act::Silu;
    if (v == 3 || v == 4) {
      ops.act = v == 3 ? Act::Clip : Act::Relu;
      ops.actLo = 0.f;
      ops.actHi = 0.5f;
    }
    // Two entries of one oneDNN algorithm in a chain, with other
    // parameters: a gate's hard sigmoid (linear, clip) and a clip after
    // the residual; a leaky ReLU and a ReLU.
    if (v == 9) {
      bias = perK(1, -0.5f, 0.5f);
      ops.bias = bias->get();
      ops.act = Act::HardSigmoid;
      ops.actLo = 0.4f;
      ops.actHi = 0.45f;
    }
    if (v == 10) {
      ops.act = Act::LeakyRelu;
      ops.actLo = 0.1f;
    }
    if (v == 3 || v == 4 || v == 9 || v == 10) {
      residual = std::make_unique<TestTensor>(outDims);
      residual->set(randomVec(residual->size(), seed + 6));
      ops.residual = residual->get();
      ops.act2 = v == 3 ? Act::Relu : Act::Clip;
      ops.act2Lo = -0.25f;
      ops.act2Hi = 1.f;
    }
  }
  static constexpr int kVariants = 11;

  /// Applies the post-ops to y (N x K x HW) with the reference kernels.
  void reference(std::vector<float>& y, int64_t N, int64_t K,
                 int64_t HW) const {
    float* p = y.data();
    if (bias)
      ref::add(p, bias->values().data(), N, K, HW, true, p);
    if (gamma)
      ref::batchNorm(p, N, K, HW, gamma->values().data(), beta->values().data(),
                     mean->values().data(), var->values().data(), ops.bnEps, p);
    ref::act(p, N * K * HW, ops.act, ops.actLo, ops.actHi, p);
    if (residual) {
      ref::add(p, residual->values().data(), N, K, HW, false, p);
      ref::act(p, N * K * HW, ops.act2, ops.act2Lo, ops.act2Hi, p);
    }
  }
};

/// t holds \p v in layout \p layout (its device buffer, the padding of a
/// blocked layout zero; the host copy stale).
inline void place(TestTensor& t, const std::vector<float>& v,
                  dnnl::memory::format_tag layout) {
  t.set(v);
  const kern::Dims4 d = kern::dims4(t.get());
  const dnnl::memory::desc want({d[0], d[1], d[2], d[3]},
                                dnnl::memory::data_type::f32, layout);
  if (want == kern::nchwDesc(t.get()))
    return;
  dnnl::memory tmp(want, kern::engine());
  kern::reorder(kern::currentMemory(t.get()), tmp);
  dnnl::memory out = kern::outputMemory(t.get(), want);
  std::memcpy(out.get_data_handle(), tmp.get_data_handle(), want.get_size());
}

/// The nonzero floats in the padded channels of t's stored blocked layout
/// (0 when it pads none): oneDNN's kernels expect zeros there.
inline int paddingNonzeros(const Tensor* t) {
  const dnnl::memory stored = kern::storedMemory(t);
  const dnnl::memory::desc d = stored.get_desc();
  if (!kern::hasChannelPadding(d))
    return 0;
  const kern::Dims4 dims = kern::dims4(t);
  const int64_t C = dims[1], HW = dims[2] * dims[3];
  const int64_t B = *kern::channelBlock(d), Cp = d.data.padded_dims[1];
  const float* p = static_cast<const float*>(stored.get_data_handle());
  int nonzero = 0;
  for (int64_t n = 0; n < dims[0]; ++n)
    for (int64_t hw = 0; hw < HW; ++hw)
      for (int64_t c = C; c < Cp; ++c)
        nonzero += p[(n * (Cp / B) + c / B) * HW * B + hw * B + c % B] != 0.f;
  return nonzero;
}

} // namespace hpvm::rt::test

#endif // HPVM_TESTS_KERNELS_KERNELTESTUTIL_H
