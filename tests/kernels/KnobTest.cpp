// KnobTest.cpp - knobs in the layer kernels: fp16 and bf16 numerics stay
// within their epsilon of the fp32 reference, perforated and sampled
// convolutions are the approximate algorithm followed by the post-ops, and
// non-convolution ops apply the knob's precision.
#include "KernelTestUtil.h"
#include "approx/Approx.h"
#include "approx/ConvGeometry.h"
#include "kernels/Numerics.h"
#include "kernels/TensorImpl.h"

using namespace hpvm::rt;
using namespace hpvm::rt::test;

namespace {

/// True if every value is exactly representable in the precision p.
bool representable(std::vector<float> v, Precision p) {
  std::vector<float> r = v;
  if (p == Precision::FP16)
    approx::roundToHalf(r.data(), int64_t(r.size()));
  else
    approx::roundToBf16(r.data(), int64_t(r.size()));
  return r == v;
}

/// An approximate convolution's result `got` against the algorithm
/// followed by the reference post-ops `want`: bit for bit, except after a
/// tanh, which runs as oneDNN's vectorised eltwise (a few ulp from
/// std::tanh; one binary16 step once rounded to fp16), and when the
/// blocked engine ran (`blocked`): its convolutions sum in another order
/// than the NCHW engine's, a few ulp apart (one binary16 step once
/// rounded to fp16).
void checkFused(const std::vector<float>& got, const std::vector<float>& want,
                const PostOps& ops, Precision p, const std::string& what,
                bool blocked = false) {
  if (!isTranscendental(ops.act) && !blocked) {
    CHECK_MESSAGE(got == want, what);
    return;
  }
  checkClose(got, want, p == Precision::FP16 ? 1e-3 : 2e-6,
             p == Precision::FP16 ? 1e-3 : 1e-6, what);
}

/// For a scope: filter sampling runs on the sampling engines wherever
/// runConv would run it as the exact convolution of the sampled filter
/// (the tests of the engines).
struct EnginesOnly {
  EnginesOnly() {
    approx::setPerforationPath(approx::PerforationPath::AutoEngines);
  }
  ~EnginesOnly() { approx::setPerforationPath(approx::PerforationPath::Auto); }
};

struct ConvCase {
  ConvShape s;
  /// True when runConv may compute knob variant v on a blocked engine
  /// (approx::convPerforatedBlocked, approx::convSampledBlocked) under
  /// perforation path `path`.
  bool blocked(Variant v, approx::PerforationPath path) const {
    if (!approx::autoPath(path) || s.K % 16 != 0)
      return false;
    if (v == Variant::Samp)
      return s.args.groups == 1 && s.C % 16 == 0;
    return (v == Variant::PerfRow || v == Variant::PerfCol) &&
           (s.args.groups == 1 || s.args.groups == s.K) && s.Ho() * s.Wo() > 3;
  }
  std::unique_ptr<TestTensor> x, w;
  std::vector<size_t> yDims;
  ConvCase(const char* name, unsigned seed) {
    Shape sh;
    for (const Shape& cand : readShapes("conv.txt"))
      if (cand.name() == name)
        sh = cand;
    REQUIRE_MESSAGE(!sh.num.empty(), "no shape named " << name);
    s = convShape(sh);
    x = std::make_unique<TestTensor>(std::vector<size_t>{
        size_t(s.N), size_t(s.C), size_t(s.H), size_t(s.W)});
    w = std::make_unique<TestTensor>(std::vector<size_t>{
        size_t(s.K), size_t(s.C / s.args.groups), size_t(s.KH), size_t(s.KW)});
    x->set(randomVec(x->size(), seed));
    float ws = 1.f / std::sqrt(float(w->size() / s.K));
    w->set(randomVec(w->size(), seed + 1, -ws, ws));
    yDims = {size_t(s.N), size_t(s.K), size_t(s.Ho()), size_t(s.Wo())};
  }
  std::vector<float> run(const PostOps& post, const KnobSpec& knob) {
    TestTensor y(yDims);
    runConv(x->get(), w->get(), s.args, post, knob, y.get());
    return y.values();
  }
  /// The approximate algorithm (the NCHW engines of approx::) on the
  /// operands rounded to p, then the reference post-ops, then the result
  /// rounded to p: what runConv with `knob` must give.
  std::vector<float> approximate(const TestPost& post, const KnobSpec& knob,
                                 Precision p) {
    std::vector<float> xv = x->values(), wv = w->values();
    if (p == Precision::FP16) {
      approx::roundToHalf(xv.data(), int64_t(xv.size()));
      approx::roundToHalf(wv.data(), int64_t(wv.size()));
    } else if (p == Precision::BF16) {
      // bf16 operands, fp32 sums and result.
      approx::roundToBf16(xv.data(), int64_t(xv.size()));
      approx::roundToBf16(wv.data(), int64_t(wv.size()));
    } else if (p == Precision::INT8) {
      // The input per tensor over the knob's range (unsigned when it is
      // nonnegative), the filter per output channel, both dequantized.
      REQUIRE(knob.hasRange);
      const bool u8 = knob.inLo >= 0.f;
      const float m = u8 ? knob.inHi : std::max(-knob.inLo, knob.inHi);
      const float sx = m / (u8 ? 255.f : 127.f), inv = 1.f / sx;
      for (float& v : xv)
        v = std::clamp(std::nearbyint(v * inv), u8 ? 0.f : -128.f,
                       u8 ? 255.f : 127.f) *
            sx;
      const size_t perK = wv.size() / size_t(s.K);
      for (size_t k = 0; k < size_t(s.K); ++k) {
        float wm = 0.f;
        for (size_t e = 0; e < perK; ++e)
          wm = std::max(wm, std::fabs(wv[k * perK + e]));
        const float sw = wm / int8WeightMax();
        for (size_t e = 0; e < perK; ++e)
          wv[k * perK + e] = std::nearbyint(wv[k * perK + e] / sw) * sw;
      }
    }
    std::vector<float> want(s.N * s.K * s.Ho() * s.Wo());
    if (knob.variant == Variant::Samp)
      approx::convSampled(xv.data(), s.N, s.C, s.H, s.W, wv.data(), s.K, s.KH,
                          s.KW, s.args, knob, want.data());
    else
      approx::convPerforated(xv.data(), s.N, s.C, s.H, s.W, wv.data(), s.K,
                             s.KH, s.KW, s.args, knob, want.data());
    post.reference(want, s.N, s.K, s.Ho() * s.Wo());
    if (p == Precision::FP16)
      approx::roundToHalf(want.data(), int64_t(want.size()));
    return want;
  }
  std::vector<float> reference(const TestPost& post) {
    std::vector<float> y(s.N * s.K * s.Ho() * s.Wo());
    ref::conv2d(x->values().data(), s.N, s.C, s.H, s.W, w->values().data(), s.K,
                s.KH, s.KW, s.args, y.data());
    post.reference(y, s.N, s.K, s.Ho() * s.Wo());
    return y;
  }
};

} // namespace

TEST_CASE("Kernels: fp16 conv and dense round operands and results to "
          "binary16") {
  for (const char* name : {"tail13", "depthwise", "stride2", "fmnist_first",
                           "dilated2", "dilated4_depthwise"}) {
    ConvCase c(name, 700);
    for (int v : {0, 2, 3}) {
      TestPost post(v, c.s.K, c.yDims, 710 + v);
      std::vector<float> got =
          c.run(post.ops, knobOf(Variant::Exact, Precision::FP16));
      CHECK_MESSAGE(representable(got, Precision::FP16), name);
      // fp16 has an 11-bit significand: relative error per rounding 2^-11;
      // operands and result rounded, sums of up to a few hundred products.
      checkClose(got, c.reference(post), 4e-3, 4e-3,
                 std::string(name) + " fp16 chain " + std::to_string(v));
    }
  }
  TestTensor x({3, 40, 1, 1}), w({1, 1, 40, 7}), y({3, 7, 1, 1});
  x.set(randomVec(x.size(), 720));
  w.set(randomVec(w.size(), 721, -0.2f, 0.2f));
  runDense(x.get(), w.get(), PostOps{}, knobOf(Variant::Exact, Precision::FP16),
           y.get());
  std::vector<float> want(y.size());
  ref::dense(x.values().data(), 3, 40, w.values().data(), 7, want.data());
  std::vector<float> got = y.values();
  CHECK(representable(got, Precision::FP16));
  checkClose(got, want, 4e-3, 4e-3, "fp16 dense");
}

TEST_CASE("Kernels: bf16 conv and dense stay within bf16 epsilon of fp32 "
          "and differ from it") {
  for (const char* name : {"vgg_first", "tail13", "grouped2", "depthwise",
                           "fmnist_first", "padded_by_window", "dilated2",
                           "dilated4_depthwise", "dilated_rectangular"}) {
    ConvCase c(name, 800);
    TestPost post(1, c.s.K, c.yDims, 810);
    std::vector<float> got =
        c.run(post.ops, knobOf(Variant::Exact, Precision::BF16));
    std::vector<float> exact = c.run(post.ops, KnobSpec{});
    // bf16 keeps 8 significand bits: 2^-8 relative per operand rounding.
    checkClose(got, c.reference(post), 2e-2, 2e-2, std::string(name) + " bf16");
    CHECK_MESSAGE(got != exact, name << ": bf16 knob gave fp32 results");
  }
  TestTensor x({5, 64, 1, 1}), w({1, 1, 64, 10}), y({5, 10, 1, 1});
  x.set(randomVec(x.size(), 820));
  w.set(randomVec(w.size(), 821, -0.2f, 0.2f));
  runDense(x.get(), w.get(), PostOps{}, knobOf(Variant::Exact, Precision::BF16),
           y.get());
  std::vector<float> want(y.size());
  ref::dense(x.values().data(), 5, 64, w.values().data(), 10, want.data());
  checkClose(y.values(), want, 2e-2, 2e-2, "bf16 dense");
}

TEST_CASE("Kernels: bf16 convs on AMX (NHWC brgconv, im2col + inner "
          "product) are the convolution of bf16-rounded operands") {
  // Where the CPU has AMX, exact bf16 convolutions of 64 output pixels or
  // more run oneDNN's brgconv on NHWC, smaller ones (without a residual)
  // im2col + its AMX inner product; with a residual and 16..63 pixels
  // brgconv too. Without AMX the same calls take the other variants and
  // must give the same numerics: bf16 operands, fp32 sums.
  const bool amx = approx::isaLevel() >= approx::IsaLevel::Amx;
  struct Want {
    const char* shape;
    int post;
    const char* variant;
  };
  for (const Want& c : std::vector<Want>{
           {"tail13", 1, "exact-amx"},
           {"pointwise", 0, "exact-amx"},
           {"stride2", 1, "exact-amx"},
           {"tiny4x4", 1, "exact-amx-im2col"},
           {"tiny2x2", 0, "exact-amx-im2col"},
           {"tiny2x2", 2, "exact-amx-im2col"},
           {"output1x1", 1, "exact-amx-im2col"},
           {"channels127", 1, "exact-amx-im2col"},
           {"rect16", 1, "exact-amx-im2col"}, // 9x7 outputs
           {"tiny4x4", 3, "exact-amx"},
           {"tiny2x2", 4, "exact-blocked"},
           // Depthwise on NHWC, between AMX layers (no AMX kernel of its own).
           {"depthwise", 1, "exact-amx"},
           {"depthwise_s2_tail", 0, "exact-amx"},
           {"depthwise_13", 1, "exact-amx"},
           // First layers: fp32 kernels on bf16-rounded operands.
           {"vgg_first", 1, "exact-blocked"},
           {"fmnist_first", 1, "exact-prepadded"},
           {"padded_by_window", 0, "exact-prepadded"},
       }) {
    ConvCase cc(c.shape, 2000);
    TestPost post(c.post, cc.s.K, cc.yDims, 2010);
    const std::vector<float> got =
        cc.run(post.ops, knobOf(Variant::Exact, Precision::BF16));
    const std::string what =
        std::string(c.shape) + " post " + std::to_string(c.post);
    if (amx)
      CHECK_MESSAGE(std::string(lastConvVariant()) == c.variant,
                    what << ": ran " << lastConvVariant());
    if (c.post > 1) {
      // Batch norm is folded into the weights before they are rounded.
      checkClose(got, cc.reference(post), 2e-2, 2e-2, what);
      continue;
    }
    std::vector<float> xv = cc.x->values(), wv = cc.w->values();
    approx::roundToBf16(xv.data(), int64_t(xv.size()));
    approx::roundToBf16(wv.data(), int64_t(wv.size()));
    std::vector<float> want(got.size());
    ref::conv2d(xv.data(), cc.s.N, cc.s.C, cc.s.H, cc.s.W, wv.data(), cc.s.K,
                cc.s.KH, cc.s.KW, cc.s.args, want.data());
    post.reference(want, cc.s.N, cc.s.K, cc.s.Ho() * cc.s.Wo());
    // Exact products, fp32 sums in another order.
    checkClose(got, want, 1e-5, 1e-5, what);
  }
}

TEST_CASE("Kernels: perforated and sampled convs are the approximate "
          "algorithm followed by the post-ops") {
  EnginesOnly engines;
  struct K {
    Variant v;
    int rate, offset;
  };
  for (const char* name : {"tail13", "stride2", "lenet_like_5x5"}) {
    ConvCase c(name, 900);
    for (K k : {K{Variant::PerfRow, 2, 0}, K{Variant::PerfRow, 3, 1},
                K{Variant::PerfCol, 2, 1}, K{Variant::PerfCol, 4, 3},
                K{Variant::Samp, 2, 0}, K{Variant::Samp, 3, 2},
                K{Variant::Samp, 4, 1}}) {
      KnobSpec knob = knobOf(k.v, Precision::FP32, k.rate, k.offset);
      for (int v : {0, 2, 3}) {
        TestPost post(v, c.s.K, c.yDims, 910 + v);
        std::vector<float> got = c.run(post.ops, knob);
        std::vector<float> want = c.approximate(post, knob, Precision::FP32);
        checkFused(got, want, post.ops, Precision::FP32,
                   std::string(name) + " variant " + std::to_string(int(k.v)) +
                       " rate " + std::to_string(k.rate) + " offset " +
                       std::to_string(k.offset) + " chain " + std::to_string(v),
                   c.blocked(k.v, approx::PerforationPath::Auto));
      }
    }
    // Rate 1 is the exact convolution.
    TestPost none(0, c.s.K, c.yDims, 0);
    checkClose(c.run(none.ops, knobOf(Variant::PerfRow, Precision::FP32, 1)),
               c.reference(none), 1e-5, 2e-5, std::string(name) + " rate 1");
  }
}

TEST_CASE("Kernels: approximate convs fuse every post-op chain on every "
          "perforation engine, fp32 and fp16") {
  using approx::PerforationPath;
  struct K {
    Variant v;
    int rate, offset;
  };
  for (const char* name : {"lenet_like_5x5", "tail13"}) {
    ConvCase c(name, 950);
    for (PerforationPath path :
         {PerforationPath::AutoEngines, PerforationPath::DnnlFused,
          PerforationPath::DnnlGeneric, PerforationPath::Gemm}) {
      approx::setPerforationPath(path);
      for (K k : {K{Variant::PerfRow, 2, 1}, K{Variant::PerfCol, 3, 0},
                  K{Variant::Samp, 2, 1}}) {
        if (k.v == Variant::Samp && path != PerforationPath::AutoEngines)
          continue;
        for (Precision p : {Precision::FP32, Precision::FP16}) {
          KnobSpec knob = knobOf(k.v, p, k.rate, k.offset);
          for (int v = 0; v < TestPost::kVariants; ++v) {
            TestPost post(v, c.s.K, c.yDims, 960 + v);
            std::vector<float> got = c.run(post.ops, knob);
            std::vector<float> want = c.approximate(post, knob, p);
            checkFused(
                got, want, post.ops, p,
                std::string(name) + " path " + std::to_string(int(path)) +
                    " variant " + std::to_string(int(k.v)) + " rate " +
                    std::to_string(k.rate) + " precision " +
                    std::to_string(int(p)) + " chain " + std::to_string(v),
                c.blocked(k.v, path));
          }
        }
      }
    }
    approx::setPerforationPath(PerforationPath::Auto);
  }
}

TEST_CASE("Kernels: the blocked perforation engine equals the NCHW one on "
          "every rate, offset and axis, from blocked and from host input") {
  // Shapes the blocked engine takes (K a multiple of 16, dense or
  // depthwise, more than 16 output positions): nChw16c and plain NCHW
  // input (vgg_first has 3 channels), stride 2, 1x1, depthwise.
  for (const char* name :
       {"vgg_first", "tail13", "stride2", "shortcut_1x1_s2", "pointwise",
        "depthwise", "depthwise_s2_tail", "tiny4x4", "tiny2x2", "rect16"}) {
    ConvCase c(name, 1100);
    REQUIRE_MESSAGE(c.blocked(Variant::PerfRow, approx::PerforationPath::Auto),
                    name);
    for (bool blockedInput : {false, true}) {
      if (blockedInput) {
        // x becomes the blocked output of an exact 1x1 convolution.
        TestTensor x0(
            {size_t(c.s.N), size_t(c.s.C), size_t(c.s.H), size_t(c.s.W)}),
            w0({size_t(c.s.C), size_t(c.s.C), 1, 1});
        x0.set(randomVec(x0.size(), 1101));
        w0.set(randomVec(w0.size(), 1102, -0.3f, 0.3f));
        runConv(x0.get(), w0.get(), ConvArgs{}, PostOps{}, KnobSpec{},
                c.x->get());
      }
      for (Variant v : {Variant::PerfRow, Variant::PerfCol})
        for (int rate = 2; rate <= 4; ++rate)
          for (int offset = 0; offset < rate; ++offset)
            for (int chain : {1, 3}) {
              KnobSpec knob = knobOf(v, Precision::FP32, rate, offset);
              TestPost post(chain, c.s.K, c.yDims, 1110 + chain);
              // The blocked engine computes it, unless nothing is skipped
              // on this output (then the exact kernel does).
              const std::vector<bool> kept = approx::perforationKept(
                  v == Variant::PerfRow ? c.s.Ho() : c.s.Wo(), rate, offset);
              const bool skips =
                  std::find(kept.begin(), kept.end(), false) != kept.end();
              const uint64_t before = approx::blockedRuns();
              std::vector<float> got = c.run(post.ops, knob);
              // (nChw16c: oneDNN's fast 16-channel kernels need AVX-512;
              // below it the NCHW engine computes everything.)
              const bool engine = skips && approx::haveAvx512();
              CHECK_MESSAGE(approx::blockedRuns() == before + (engine ? 1 : 0),
                            name << " variant " << int(v) << " rate " << rate
                                 << " offset " << offset
                                 << ": not computed by the blocked engine");
              std::vector<float> want =
                  c.approximate(post, knob, Precision::FP32);
              checkFused(got, want, post.ops, Precision::FP32,
                         std::string(name) + (blockedInput ? " blocked" : "") +
                             " variant " + std::to_string(int(v)) + " rate " +
                             std::to_string(rate) + " offset " +
                             std::to_string(offset) + " chain " +
                             std::to_string(chain),
                         true);
            }
    }
  }
}

TEST_CASE("Kernels: bf16 perforation equals the approximate algorithm on "
          "bf16-rounded operands, on the blocked engine") {
  // perf_bf16: the kept rows/columns by oneDNN's bf16 kernels (bf16 products
  // are exact in fp32; only the order of the fp32 sums differs from the
  // NCHW engine on rounded operands), then the same interpolation.
  for (const char* name :
       {"vgg_first", "tail13", "stride2", "pointwise", "depthwise", "rect16"}) {
    ConvCase c(name, 1200);
    REQUIRE_MESSAGE(c.blocked(Variant::PerfRow, approx::PerforationPath::Auto),
                    name);
    for (Variant v : {Variant::PerfRow, Variant::PerfCol})
      for (int rate = 2; rate <= 4; ++rate)
        for (int chain : {0, 3}) {
          const int offset = rate - 1;
          KnobSpec knob = knobOf(v, Precision::BF16, rate, offset);
          TestPost post(chain, c.s.K, c.yDims, 1210 + chain);
          const uint64_t before = approx::blockedRuns();
          std::vector<float> got = c.run(post.ops, knob);
          const std::string what = std::string(name) + " variant " +
                                   std::to_string(int(v)) + " rate " +
                                   std::to_string(rate) + " chain " +
                                   std::to_string(chain);
          const std::vector<bool> kept = approx::perforationKept(
              v == Variant::PerfRow ? c.s.Ho() : c.s.Wo(), rate, offset);
          // (the blocked engine where there is AVX-512, as for fp32)
          if (std::find(kept.begin(), kept.end(), false) != kept.end())
            CHECK_MESSAGE(approx::blockedRuns() ==
                              before + (approx::haveAvx512() ? 1 : 0),
                          what << ": not computed by the blocked engine");
          checkClose(got, c.approximate(post, knob, Precision::BF16), 2e-5,
                     2e-5, what);
          // And it is not the fp32 result.
          CHECK_MESSAGE(
              got != c.run(post.ops, knobOf(v, Precision::FP32, rate, offset)),
              what << ": bf16 == fp32");
        }
  }
}

TEST_CASE("Kernels: int8 perforation equals the approximate algorithm on "
          "quantized operands, on the blocked engine and off it") {
  // perf_int8: the kept rows/columns by oneDNN's int8 kernels (exact
  // 32-bit sums, rescaled), or the fp32 engine on the dequantized operands
  // where the blocked engine does not apply; then the same interpolation.
  for (const char* name : {"vgg_first", "tail13", "stride2", "pointwise",
                           "depthwise", "rect16", "lenet_like_5x5"}) {
    ConvCase c(name, 1500);
    std::vector<float> xv = c.x->values();
    for (bool nonneg : {true, false}) {
      if (nonneg) { // as after a ReLU
        for (float& v : xv)
          v = std::fabs(v);
        c.x->set(xv);
      }
      for (Variant v : {Variant::PerfRow, Variant::PerfCol})
        for (int rate : {2, 3}) {
          KnobSpec knob = knobOf(v, Precision::INT8, rate, 1);
          knob.hasRange = true;
          knob.inLo = *std::min_element(xv.begin(), xv.end());
          knob.inHi = *std::max_element(xv.begin(), xv.end());
          TestPost post(3, c.s.K, c.yDims, 1510);
          const uint64_t before = approx::blockedRuns();
          std::vector<float> got = c.run(post.ops, knob);
          const std::string what =
              std::string(name) + (nonneg ? " u8" : " s8") + " variant " +
              std::to_string(int(v)) + " rate " + std::to_string(rate);
          const std::vector<bool> kept = approx::perforationKept(
              v == Variant::PerfRow ? c.s.Ho() : c.s.Wo(), rate, 1);
          const bool skips =
              std::find(kept.begin(), kept.end(), false) != kept.end();
          if (skips && c.blocked(v, approx::PerforationPath::Auto))
            CHECK_MESSAGE(approx::blockedRuns() == before + 1,
                          what << ": not computed by the blocked engine");
          checkClose(got, c.approximate(post, knob, Precision::INT8), 2e-5,
                     2e-5, what);
          if (skips)
            CHECK_MESSAGE(
                got != c.run(post.ops, knobOf(v, Precision::FP32, rate, 1)),
                what << ": int8 == fp32");
        }
    }
  }
}

TEST_CASE("Kernels: bf16 and int8 sampling equal the approximate algorithm "
          "on rounded or quantized operands, on the blocked engine and off "
          "it") {
  // samp_bf16 / samp_int8: the reduced im2col and filter in bf16 (fp32
  // sums) or int8 (exact 32-bit sums, rescaled) through oneDNN's matmul
  // wherever the convolution is not grouped and its channels fill whole
  // blocks, whatever the output size; the NCHW engine on rounded or
  // dequantized operands elsewhere (3 input or 24 output channels,
  // grouped).
  EnginesOnly engines;
  for (const char* name :
       {"tail13", "stride2", "pointwise", "tiny4x4", "shortcut_1x1_s2",
        "rect16", "vgg_first", "depthwise", "lenet_like_5x5"}) {
    ConvCase c(name, 1700);
    const bool blocked =
        c.s.args.groups == 1 && c.s.C % 16 == 0 && c.s.K % 16 == 0;
    std::vector<float> xv = c.x->values();
    for (bool nonneg : {false, true}) {
      if (nonneg) { // as after a ReLU
        for (float& v : xv)
          v = std::fabs(v);
        c.x->set(xv);
      }
      for (Precision p : {Precision::BF16, Precision::INT8})
        for (int rate = 2; rate <= 4; ++rate) {
          const int offset = rate - 1;
          KnobSpec knob = knobOf(Variant::Samp, p, rate, offset);
          if (p == Precision::INT8) {
            knob.hasRange = true;
            knob.inLo = *std::min_element(xv.begin(), xv.end());
            knob.inHi = *std::max_element(xv.begin(), xv.end());
          }
          TestPost post(3, c.s.K, c.yDims, 1710);
          const uint64_t before = approx::blockedRuns();
          std::vector<float> got = c.run(post.ops, knob);
          const std::string what = std::string(name) +
                                   (nonneg ? " nonnegative" : " signed") +
                                   " precision " + std::to_string(int(p)) +
                                   " rate " + std::to_string(rate);
          // (Where the CPU has no bf16, the blocked engine takes bf16 only
          // where oneDNN has a fast bf16 matmul for the shape: either way.)
          if (p != Precision::BF16 ||
              approx::isaLevel() >= approx::IsaLevel::Avx512Bf16)
            CHECK_MESSAGE(approx::blockedRuns() == before + (blocked ? 1 : 0),
                          what << ": blocked engine ran "
                               << approx::blockedRuns() - before << " times");
          checkClose(got, c.approximate(post, knob, p), 2e-5, 2e-5, what);
          CHECK_MESSAGE(
              got != c.run(post.ops, knobOf(Variant::Samp, Precision::FP32,
                                            rate, offset)),
              what << ": equals fp32");
        }
    }
  }
}

TEST_CASE("Kernels: the blocked sampling engine equals the NCHW one on "
          "every rate and offset, fp32 and fp16") {
  // Shapes it takes (C and K multiples of 16, small outputs or 1x1):
  // 3x3 on 4x4, 2x2 and 8x8 (stride 2) outputs, 1x1 with and without
  // stride; the regular (rate 3 on 3x3) and irregular variants.
  EnginesOnly engines;
  for (const char* name :
       {"tiny4x4", "tiny2x2", "stride2", "pointwise", "shortcut_1x1_s2"}) {
    ConvCase c(name, 1300);
    REQUIRE_MESSAGE(c.blocked(Variant::Samp, approx::PerforationPath::Auto),
                    name);
    for (Precision p : {Precision::FP32, Precision::FP16})
      for (int rate = 2; rate <= 4; ++rate)
        for (int offset = 0; offset < rate; ++offset)
          for (int chain : {1, 3}) {
            KnobSpec knob = knobOf(Variant::Samp, p, rate, offset);
            TestPost post(chain, c.s.K, c.yDims, 1310 + chain);
            const uint64_t before = approx::blockedRuns();
            std::vector<float> got = c.run(post.ops, knob);
            CHECK_MESSAGE(approx::blockedRuns() == before + 1,
                          name << " rate " << rate << " offset " << offset
                               << ": not computed by the blocked engine");
            std::vector<float> want = c.approximate(post, knob, p);
            checkFused(
                got, want, post.ops, p,
                std::string(name) + " precision " + std::to_string(int(p)) +
                    " rate " + std::to_string(rate) + " offset " +
                    std::to_string(offset) + " chain " + std::to_string(chain),
                true);
          }
  }
}

TEST_CASE("Kernels: filter sampling run as the exact convolution of the "
          "sampled filter equals the sampling engines") {
  // fp32 on filters of fewer than 8192 weights per tap (C x K), at rate 4
  // on any, and at every rate where the exact convolution runs on the
  // Winograd kernels (the winograd_* shapes); bf16 at rate 2 where the CPU
  // has native bf16 convolutions. The same products as the engines, summed
  // in the exact kernel's order (Winograd's: rounded within 1e-5).
  const bool nativeBf16 =
      kern::numericsOf(knobOf(Variant::Exact, Precision::BF16, 1, 0))
          .nativeBf16;
  for (const char* name : {"tail13", "lenet_like_5x5", "stride2", "pointwise",
                           "wide64x128", "winograd_deep", "winograd_batch"}) {
    ConvCase c(name, 2100);
    const bool wide = c.s.C * c.s.K >= 8192;
    // The winograd_* shapes' exact convolutions run as Winograd on every
    // CPU (oneDNN's kernels from AVX-512 up, ConvWinograd.h's below); the
    // sampling variant takes them at every rate where oneDNN's run.
    const bool winogradShape = std::string(name).rfind("winograd", 0) == 0;
    const bool winograd = winogradShape && approx::haveAvx512();
    const float tol = winogradShape ? 1e-5f : 2e-6f;
    for (Precision p : {Precision::FP32, Precision::BF16})
      for (int rate = 2; rate <= 4; ++rate)
        for (int offset = 0; offset < rate; ++offset) {
          const bool asExact = p == Precision::FP32
                                   ? winograd || !(wide && rate <= 3)
                                   : rate == 2 && (nativeBf16 || !wide);
          const KnobSpec knob = knobOf(Variant::Samp, p, rate, offset);
          TestPost post(3, c.s.K, c.yDims, 2110 + rate);
          const std::vector<float> got = c.run(post.ops, knob);
          const std::string ran = lastConvVariant();
          const std::string what = std::string(name) + " precision " +
                                   std::to_string(int(p)) + " rate " +
                                   std::to_string(rate) + " offset " +
                                   std::to_string(offset);
          CHECK_MESSAGE((ran == "samp-as-exact") == asExact,
                        what << ": ran " << ran);
          if (!asExact)
            continue;
          std::vector<float> engines;
          {
            EnginesOnly only;
            engines = c.run(post.ops, knob);
          }
          CHECK_MESSAGE(std::string(lastConvVariant()) != "samp-as-exact",
                        what);
          checkClose(got, engines, tol, tol, what + " against the engines");
          checkClose(got, c.approximate(post, knob, p), tol, tol,
                     what + " against the algorithm");
        }
  }
  // A new filter: the sampled filter derived again.
  ConvCase c("tail13", 2120);
  const KnobSpec knob = knobOf(Variant::Samp, Precision::FP32, 2, 1);
  TestPost none(0, c.s.K, c.yDims, 2121);
  const std::vector<float> before = c.run(none.ops, knob);
  std::vector<float> wv = c.w->values();
  for (float& v : wv)
    v = -v;
  c.w->set(wv);
  const std::vector<float> after = c.run(none.ops, knob);
  REQUIRE(std::string(lastConvVariant()) == "samp-as-exact");
  checkClose(after, c.approximate(none, knob, Precision::FP32), 2e-6, 2e-6,
             "tail13 after a new filter");
  CHECK(after != before);
}

TEST_CASE("Kernels: bf16 perforation of an axis of two run as the exact "
          "convolution and a copy equals the perforation engines") {
  // On an AMX CPU with native bf16, outputs below 64 pixels: every skipped
  // row (column) is a copy of the computed one, the post-ops without a
  // residual commute with it.
  const bool amx =
      approx::isaLevel() >= approx::IsaLevel::Amx &&
      kern::numericsOf(knobOf(Variant::Exact, Precision::BF16, 1, 0))
          .nativeBf16;
  ConvCase c("tiny2x2", 2200);
  for (Variant v : {Variant::PerfRow, Variant::PerfCol})
    for (int rate = 2; rate <= 4; ++rate)
      for (int offset = 0; offset < 2; ++offset)
        for (int chain : {0, 1, 3, 4, 6, 9}) {
          const KnobSpec knob = knobOf(v, Precision::BF16, rate, offset);
          TestPost post(chain, c.s.K, c.yDims, 2210 + chain);
          const std::vector<float> got = c.run(post.ops, knob);
          const std::string ran = lastConvVariant();
          const std::string what =
              std::string(v == Variant::PerfRow ? "rows" : "columns") +
              " rate " + std::to_string(rate) + " offset " +
              std::to_string(offset) + " chain " + std::to_string(chain);
          CHECK_MESSAGE((ran == "perf-as-exact") == (amx && !post.ops.residual),
                        what << ": ran " << ran);
          std::vector<float> engines;
          {
            EnginesOnly only;
            engines = c.run(post.ops, knob);
          }
          checkClose(got, engines, 2e-5, 2e-5, what + " against the engines");
          checkClose(got, c.approximate(post, knob, Precision::BF16), 2e-5,
                     2e-5, what + " against the algorithm");
        }
}

TEST_CASE("Kernels: an fp16 op's input already rounded by the op before it "
          "is not rounded again, and new values are") {
  // y1 = relu(x) with fp16 numerics is fp16-representable; an fp16
  // convolution of y1 (which skips rounding its input) must equal one of a
  // fresh tensor holding the same values (which rounds them), and so must
  // one of y1 after its values are overwritten with unrounded ones.
  ConvCase c("tail13", 1200);
  for (Variant v : {Variant::Exact, Variant::PerfRow, Variant::Samp}) {
    const KnobSpec knob =
        knobOf(v, Precision::FP16, v == Variant::Exact ? 1 : 2);
    TestTensor y1({size_t(c.s.N), size_t(c.s.C), size_t(c.s.H), size_t(c.s.W)});
    runAct(c.x->get(), Act::Relu, 0, 0, knobOf(Variant::Exact, Precision::FP16),
           y1.get());
    TestTensor fresh(
        {size_t(c.s.N), size_t(c.s.C), size_t(c.s.H), size_t(c.s.W)});
    fresh.set(y1.values());
    TestTensor a(c.yDims), b(c.yDims);
    runConv(y1.get(), c.w->get(), c.s.args, PostOps{}, knob, a.get());
    runConv(fresh.get(), c.w->get(), c.s.args, PostOps{}, knob, b.get());
    CHECK_MESSAGE(a.values() == b.values(), "variant " << int(v));
    // Unrounded values written into y1 must be rounded by the next op.
    std::vector<float> raw = randomVec(y1.size(), 1201);
    y1.set(raw);
    fresh.set(raw);
    runConv(y1.get(), c.w->get(), c.s.args, PostOps{}, knob, a.get());
    runConv(fresh.get(), c.w->get(), c.s.args, PostOps{}, knob, b.get());
    CHECK_MESSAGE(a.values() == b.values(), "variant " << int(v) << " new");
    TestTensor e(c.yDims);
    runConv(y1.get(), c.w->get(), c.s.args, PostOps{},
            knobOf(v, Precision::FP32, v == Variant::Exact ? 1 : 2), e.get());
    CHECK_MESSAGE(a.values() != e.values(),
                  "variant " << int(v) << ": fp16 == fp32");
  }
}

TEST_CASE("Kernels: non-conv ops apply the knob's precision to their "
          "result") {
  TestTensor x({2, 8, 5, 5});
  x.set(randomVec(x.size(), 1000, -3.f, 3.f));
  for (Precision p : {Precision::FP16, Precision::BF16}) {
    KnobSpec knob = knobOf(Variant::Exact, p);
    TestTensor y({2, 8, 5, 5});
    runAct(x.get(), Act::Tanh, 0, 0, knob, y.get());
    std::vector<float> got = y.values(), want(x.size());
    ref::act(x.values().data(), int64_t(x.size()), Act::Tanh, 0, 0,
             want.data());
    CHECK(representable(got, p));
    checkClose(got, want, p == Precision::FP16 ? 1e-3 : 8e-3, 1e-6,
               "tanh rounded");
    PoolArgs pool;
    pool.kind = PoolArgs::Avg;
    pool.kh = pool.kw = pool.strideH = pool.strideW = 2;
    TestTensor py({2, 8, 2, 2});
    runPool(x.get(), pool, knob, py.get());
    CHECK(representable(py.values(), p));
  }
}

TEST_CASE("Kernels: a bf16 layer storing its result as bf16 gives the next "
          "bf16 layers the values they would round to") {
  // conv A (bf16, relu) -> [max pool] -> conv B (bf16) or dense (bf16): with
  // PostOps::bf16Out the result of A is stored as bf16; B's output must be
  // bit for bit the one computed from A's fp32 result.
  TestTensor x({4, 16, 8, 8}), wa({32, 16, 3, 3}), wb({16, 32, 3, 3}),
      wd({1, 1, 32 * 4 * 4, 10});
  x.set(randomVec(x.size(), 1400));
  wa.set(randomVec(wa.size(), 1401, -0.1f, 0.1f));
  wb.set(randomVec(wb.size(), 1402, -0.1f, 0.1f));
  wd.set(randomVec(wd.size(), 1403, -0.1f, 0.1f));
  ConvArgs same;
  same.padH = same.padW = 1;
  const KnobSpec bf16 = knobOf(Variant::Exact, Precision::BF16);
  PoolArgs pool;
  pool.kh = pool.kw = pool.strideH = pool.strideW = 2;
  for (bool viaPool : {false, true})
    for (bool chained : {false, true}) {
      PostOps pa;
      pa.act = Act::Relu;
      pa.bf16Out = chained;
      TestTensor a({4, 32, 8, 8}), p({4, 32, 4, 4});
      runConv(x.get(), wa.get(), same, pa, bf16, a.get());
      if (approx::isaLevel() >= approx::IsaLevel::Avx512Bf16)
        CHECK((kern::storedMemory(a.get()).get_desc().data_type() ==
               dnnl::memory::data_type::bf16) == chained);
      Tensor* in = a.get();
      if (viaPool) {
        runPool(a.get(), pool, KnobSpec{}, p.get());
        in = p.get();
      }
      TestTensor b({4, 16, viaPool ? 4u : 8u, viaPool ? 4u : 8u});
      runConv(in, wb.get(), same, PostOps{}, bf16, b.get());
      static std::vector<float> unchained[2];
      if (!chained) {
        unchained[viaPool] = b.values();
        continue;
      }
      CHECK_MESSAGE(b.values() == unchained[viaPool], "pool " << viaPool);
      if (viaPool) {
        TestTensor d({4, 10, 1, 1}), d0({4, 10, 1, 1});
        runDense(in, wd.get(), PostOps{}, bf16, d.get());
        // The same values, from the fp32 host copy.
        TestTensor copy({4, 32, 4, 4});
        copy.set(p.values());
        runDense(copy.get(), wd.get(), PostOps{}, bf16, d0.get());
        CHECK(d.values() == d0.values());
      }
    }
}

TEST_CASE("Conv: each call runs the first variant of the ordered list that "
          "applies") {
  struct Want {
    const char* shape;
    Variant v;
    Precision p;
    int rate, offset;
    const char* variant;
  };
  // nChw16c (the blocked variants) where there is AVX-512; oneDNN's own
  // layouts and the NCHW engines below it.
  const bool avx512 = approx::haveAvx512();
  const char* exactBlocked = avx512 ? "exact-blocked" : "exact-any";
  const char* approxBlocked = avx512 ? "approx-blocked" : "approx-nchw";
  for (const Want& c : std::vector<Want>{
           {"tail13", Variant::Exact, Precision::FP32, 1, 0, exactBlocked},
           {"depthwise", Variant::Exact, Precision::FP16, 1, 0, exactBlocked},
           {"grouped2", Variant::Exact, Precision::FP32, 1, 0, "exact-any"},
           {"lenet_like_5x5", Variant::Exact, Precision::FP32, 1, 0,
            "exact-any"},
           {"tail13", Variant::Exact, Precision::INT8, 1, 0, "int8"},
           {"grouped2", Variant::Exact, Precision::INT8DYN, 1, 0, "int8"},
           {"tail13", Variant::PerfRow, Precision::FP32, 2, 0, approxBlocked},
           // Sampling as the exact convolution of the sampled filter where
           // the engines would be slower (16 x 32 channels); on the engines
           // where they pay (64 x 128 at rate 2; bf16 at rate 3).
           {"tail13", Variant::Samp, Precision::FP32, 2, 1, "samp-as-exact"},
           // (the blocked sampling engine takes fp32 at every ISA level)
           {"wide64x128", Variant::Samp, Precision::FP32, 2, 1,
            "approx-blocked"},
           {"tail13", Variant::Samp, Precision::BF16, 3, 1,
            approx::isaLevel() >= approx::IsaLevel::Avx512Bf16
                ? "approx-blocked"
                : "approx-nchw"},
           {"lenet_like_5x5", Variant::PerfCol, Precision::FP32, 2, 1,
            "approx-nchw"},
           {"grouped2", Variant::Samp, Precision::FP16, 3, 0, "approx-nchw"},
           // 2 output rows, rate 4 offset 3: nothing skipped.
           {"tiny2x2", Variant::PerfRow, Precision::FP32, 4, 3,
            "perforation-skips-nothing"},
       }) {
    ConvCase cc(c.shape, 1900);
    KnobSpec knob = knobOf(c.v, c.p, c.rate, c.offset);
    knob.hasRange = true;
    knob.inLo = -1.f;
    knob.inHi = 1.f;
    TestPost none(0, cc.s.K, cc.yDims, 1901);
    cc.run(none.ops, knob);
    CHECK_MESSAGE(std::string(lastConvVariant()) == c.variant,
                  c.shape << " knob variant " << int(c.v) << " precision "
                          << int(c.p) << ": ran " << lastConvVariant());
  }
  // The tests' NCHW engines: the blocked variant steps aside.
  approx::setPerforationPath(approx::PerforationPath::DnnlFused);
  ConvCase cc("tail13", 1902);
  TestPost none(0, cc.s.K, cc.yDims, 1903);
  cc.run(none.ops, knobOf(Variant::PerfRow, Precision::FP32, 2, 0));
  approx::setPerforationPath(approx::PerforationPath::Auto);
  CHECK(std::string(lastConvVariant()) == "approx-nchw");
}
