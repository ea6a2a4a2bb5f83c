// Fp16NativeTest.cpp - exact convolutions under an fp16 knob in half
// arithmetic (kernels/ConvHalf.cpp, approx/HalfConv.cpp) where the CPU has
// AVX512-FP16, against the exact result: within half precision's rounding of
// the sums they compute, for every post-op chain and the tile, chunk and
// channel-block edges of the kernel; elsewhere the emulation runs.
#include "KernelTestUtil.h"
#include "approx/Approx.h"
#include "approx/ConvGeometry.h"
#include "approx/HalfConv.h"
#include "kernels/Reference.h"
#include "kernels/TensorImpl.h"

#include <cmath>
#include <string>
#include <vector>

using namespace hpvm::rt;
using namespace hpvm::rt::test;

namespace {

struct HalfShape {
  size_t n, c, k, h, w, kh;
  int pad, stride;
};

/// Runs the fp16 knob on shape s with post-op chain v and checks it against
/// the exact fp32 result E: |got - E| <= 1.5 (2 u S + u |b|) + 2 u |E| with
/// u = 2^-11 (half's unit roundoff) and S the sum of the products'
/// magnitudes (of the batch-norm folded filter), and on average under half
/// of u S + u |E|: the half sums' error, not a missing product or tap.
void checkShape(const HalfShape& s, int v, unsigned seed) {
  const ConvArgs a{s.pad, s.pad, s.stride, s.stride, 1};
  const size_t ho = (s.h + 2 * s.pad - s.kh) / s.stride + 1;
  const size_t wo = (s.w + 2 * s.pad - s.kh) / s.stride + 1;
  const std::vector<size_t> yDims{s.n, s.k, ho, wo};
  TestTensor x({s.n, s.c, s.h, s.w}), w({s.k, s.c, s.kh, s.kh}), y(yDims);
  x.set(randomVec(x.size(), seed, -1.f, 1.f));
  w.set(randomVec(w.size(), seed + 1, -0.2f, 0.2f));
  TestPost post(v, static_cast<int64_t>(s.k), yDims, seed + 2);
  runConv(x.get(), w.get(), a, post.ops,
          knobOf(Variant::Exact, Precision::FP16), y.get());
  const std::string ran = lastConvVariant();
  const std::string what =
      "n" + std::to_string(s.n) + " c" + std::to_string(s.c) + " k" +
      std::to_string(s.k) + " " + std::to_string(s.h) + "x" +
      std::to_string(s.w) + " window " + std::to_string(s.kh) + " pad " +
      std::to_string(s.pad) + " stride " + std::to_string(s.stride) +
      " post-ops " + std::to_string(v) + " (" + ran + ")";
  CHECK_MESSAGE((ran == "exact-fp16-native") == approx::halfConvAvailable(),
                what);

  // The exact result, and the magnitudes of its terms.
  const int64_t N = s.n, C = s.c, K = s.k, H = s.h, W = s.w, KH = s.kh;
  const int64_t HW = static_cast<int64_t>(ho * wo);
  std::vector<float> exact(y.size()), mag(y.size());
  ref::conv2d(x.values().data(), N, C, H, W, w.values().data(), K, KH, KH, a,
              exact.data());
  post.reference(exact, N, K, HW);
  std::vector<float> xa = x.values(), wa = w.values();
  for (float& f : xa)
    f = std::fabs(f);
  for (float& f : wa)
    f = std::fabs(f);
  ref::conv2d(xa.data(), N, C, H, W, wa.data(), K, KH, KH, a, mag.data());
  // The folded scale and bias of each channel.
  std::vector<float> scale(K, 1.f), bias(K, 0.f);
  if (post.bias)
    bias = post.bias->values();
  if (post.gamma) {
    const auto g = post.gamma->values(), b = post.beta->values(),
               m = post.mean->values(), var = post.var->values();
    for (int64_t k = 0; k < K; ++k) {
      scale[k] = g[k] / std::sqrt(var[k] + static_cast<float>(post.ops.bnEps));
      bias[k] = b[k] + (bias[k] - m[k]) * scale[k];
    }
  }
  const double u = 1.0 / 2048;
  const std::vector<float> got = y.values();
  double worst = 0, sum = 0;
  size_t bad = 0, firstBad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const int64_t k = static_cast<int64_t>(i / HW) % K;
    const double S = mag[i] * std::fabs(scale[k]);
    const double e = std::fabs(double(got[i]) - exact[i]);
    const double tol = 1.5 * (2 * u * S + u * std::fabs(bias[k])) +
                       2 * u * std::fabs(exact[i]) + 1e-6;
    if (e > tol && bad++ == 0)
      firstBad = i;
    worst = std::max(worst, e / tol);
    sum += e / (u * S + u * std::fabs(exact[i]) + 1e-6);
  }
  CHECK_MESSAGE(bad == 0, what << ": " << bad << " values off, first at "
                               << firstBad << ": " << got[firstBad] << " for "
                               << exact[firstBad] << "; worst at " << worst
                               << " x tolerance");
  CHECK_MESSAGE(sum / got.size() < 0.5, what << ": mean error "
                                             << sum / got.size()
                                             << " x (u S + u |E|)");
  // The result is stored rounded to half.
  std::vector<float> rounded = got;
  approx::roundToHalf(rounded.data(), static_cast<int64_t>(rounded.size()));
  CHECK_MESSAGE(rounded == got, what << ": not half values");
}

} // namespace

TEST_CASE("Kernels: an exact fp16 convolution runs in half arithmetic where "
          "the CPU has AVX512-FP16, within half's rounding of its sums") {
  // Tiles (6, 9 or 12 pixels) that end inside a row or span rows and
  // images; channel blocks of 16-64 (K 16, 32, 48, 80); chunks that split
  // one tap's channels (C 256), hold several taps (C 16, 48) or end with a
  // short one; rows wider than a work item (70); strides and padding.
  const HalfShape shapes[] = {
      {2, 32, 48, 9, 9, 3, 1, 1},    {3, 16, 16, 7, 5, 3, 0, 2},
      {2, 64, 80, 5, 6, 1, 0, 1},    {1, 256, 32, 6, 6, 3, 1, 1},
      {2, 48, 64, 4, 70, 3, 1, 1},   {5, 16, 32, 2, 2, 3, 1, 1},
      {1, 128, 64, 11, 11, 5, 2, 2},
  };
  unsigned seed = 4100;
  for (const HalfShape& s : shapes)
    checkShape(s, 1, seed += 10);
  // Every post-op chain (bias, batch norm, activations, residuals) on one
  // shape.
  for (int v = 0; v < TestPost::kVariants; ++v)
    checkShape({2, 32, 48, 6, 7, 3, 1, 1}, v, seed += 10);
}

TEST_CASE("Kernels: an fp16 chain stores a result as NHWC half where the "
          "convolutions run in half arithmetic, with the same values") {
  // A = relu(conv(x)), stored as half (PostOps::halfOut) or fp32; B =
  // conv(A) + bias. A's values and B's must not depend on how A is stored.
  const ConvArgs same{1, 1, 1, 1, 1};
  const size_t N = 3, C = 32, K = 48, H = 7;
  TestTensor x({N, C, H, H}), wA({K, C, 3, 3}), wB({K, K, 3, 3}),
      b({1, K, 1, 1});
  x.set(randomVec(x.size(), 4300));
  wA.set(randomVec(wA.size(), 4301, -0.2f, 0.2f));
  wB.set(randomVec(wB.size(), 4302, -0.2f, 0.2f));
  b.set(randomVec(b.size(), 4303));
  const KnobSpec fp16 = knobOf(Variant::Exact, Precision::FP16);
  std::vector<float> aValues[2], bValues[2];
  for (int chained = 0; chained < 2; ++chained) {
    TestTensor a({N, K, H, H}), y({N, K, H, H});
    PostOps pa;
    pa.act = Act::Relu;
    pa.halfOut = chained == 1;
    runConv(x.get(), wA.get(), same, pa, fp16, a.get());
    const bool half = kern::storedMemory(a.get()).get_desc().data_type() ==
                      dnnl::memory::data_type::f16;
    CHECK(half == (chained == 1 && approx::halfConvAvailable()));
    PostOps pb;
    pb.bias = b.get();
    runConv(a.get(), wB.get(), same, pb, fp16, y.get());
    CHECK(kern::storedMemory(y.get()).get_desc().data_type() ==
          dnnl::memory::data_type::f32);
    aValues[chained] = a.values();
    bValues[chained] = y.values();
  }
  CHECK(aValues[0] == aValues[1]);
  CHECK(bValues[0] == bValues[1]);
}

TEST_CASE("Kernels: samp_fp16 runs as the half-arithmetic convolution of "
          "the sampled filter where the CPU has AVX512-FP16") {
  // The sampled filter: the kept elements (approx::samplingKept, tested
  // against the NumPy oracle) times rate / (rate - 1), the others zero.
  const ConvArgs a{1, 1, 1, 1, 1};
  const size_t N = 2, C = 32, K = 48, H = 7;
  TestTensor x({N, C, H, H}), w({K, C, 3, 3});
  x.set(randomVec(x.size(), 4300, -1.f, 1.f));
  w.set(randomVec(w.size(), 4301, -0.2f, 0.2f));
  for (int rate = 2; rate <= 4; ++rate)
    for (int offset = 0; offset < rate; ++offset) {
      const std::string what =
          "rate " + std::to_string(rate) + ", offset " + std::to_string(offset);
      TestPost post(1, static_cast<int64_t>(K), {N, K, H, H}, 4302);
      TestTensor y({N, K, H, H});
      runConv(x.get(), w.get(), a, post.ops,
              knobOf(Variant::Samp, Precision::FP16, rate, offset), y.get());
      const std::string ran = lastConvVariant();
      CHECK_MESSAGE((ran == "samp-as-exact") == approx::halfConvAvailable(),
                    what << " (" << ran << ")");
      if (!approx::halfConvAvailable())
        continue;
      std::vector<float> sampled(w.size(), 0.f);
      const std::vector<float> wv = w.values();
      const size_t perK = C * 9;
      for (size_t k = 0; k < K; ++k)
        for (const int64_t e : approx::samplingKept(C, 3, 3, rate, offset))
          sampled[k * perK + size_t(e)] =
              wv[k * perK + size_t(e)] * approx::samplingScale(rate);
      TestTensor ws({K, C, 3, 3}), yHalf({N, K, H, H});
      ws.set(sampled);
      runConv(x.get(), ws.get(), a, post.ops,
              knobOf(Variant::Exact, Precision::FP16), yHalf.get());
      CHECK_MESSAGE(lastConvVariant() == std::string("exact-fp16-native"),
                    what);
      CHECK_MESSAGE(y.values() == yHalf.values(), what);
    }
}

TEST_CASE("Kernels: perf_fp16 computes the kept rows or columns in half "
          "arithmetic where the CPU has AVX512-FP16, and fills the others "
          "from their neighbours") {
  // Kept positions: bit for bit the exact fp16 convolution's (the same
  // half sums and post-ops: a batch norm and tanh; a residual between two
  // activations). Skipped ones, without post-ops: the average
  // of the neighbours' sums, rounded to half: within half's rounding of
  // the average of the exact result's (rounded) neighbours. Row 0 (column
  // 0) copies its successor, the last its predecessor.
  const ConvArgs a{1, 1, 1, 1, 1};
  const size_t N = 2, C = 32, K = 48, H = 7, W = 9;
  TestTensor x({N, C, H, W}), w({K, C, 3, 3});
  x.set(randomVec(x.size(), 4400, -1.f, 1.f));
  w.set(randomVec(w.size(), 4401, -0.2f, 0.2f));
  for (const Variant v : {Variant::PerfRow, Variant::PerfCol})
    for (int rate = 2; rate <= 4; ++rate)
      for (int offset = 0; offset < rate; ++offset)
        for (const int chain : {0, 2, 4}) {
          const bool rows = v == Variant::PerfRow;
          const std::string what = std::string(rows ? "rows" : "columns") +
                                   ", rate " + std::to_string(rate) +
                                   ", offset " + std::to_string(offset) +
                                   ", post-op chain " + std::to_string(chain);
          TestPost post(chain, static_cast<int64_t>(K), {N, K, H, W}, 4402);
          TestTensor y({N, K, H, W}), yExact({N, K, H, W});
          runConv(x.get(), w.get(), a, post.ops,
                  knobOf(v, Precision::FP16, rate, offset), y.get());
          const std::string ran = lastConvVariant();
          CHECK_MESSAGE((ran == "perf-fp16-native") ==
                            approx::halfConvAvailable(),
                        what << " (" << ran << ")");
          if (!approx::halfConvAvailable())
            continue;
          runConv(x.get(), w.get(), a, post.ops,
                  knobOf(Variant::Exact, Precision::FP16), yExact.get());
          const std::vector<float> got = y.values(), exact = yExact.values();
          const size_t len = rows ? H : W;
          const std::vector<bool> kept =
              approx::perforationKept(int64_t(len), rate, offset);
          size_t skippedChecked = 0;
          for (size_t i = 0; i < got.size(); ++i) {
            const size_t col = i % W, row = i / W % H;
            const size_t at = rows ? row : col;
            if (kept[at]) {
              REQUIRE_MESSAGE(got[i] == exact[i], what << ", element " << i);
              continue;
            }
            if (chain != 0)
              continue;
            const size_t lo = at == 0 ? 1 : at - 1;
            const size_t hi = at == len - 1 ? len - 2 : at + 1;
            const size_t step = rows ? W : 1;
            const double want = (double(exact[i - (at - lo) * step]) +
                                 double(exact[i + (hi - at) * step])) /
                                2;
            const double tol =
                (std::fabs(double(exact[i - (at - lo) * step])) +
                 std::fabs(double(exact[i + (hi - at) * step]))) /
                    1024.0 +
                1e-6;
            REQUIRE_MESSAGE(std::fabs(got[i] - want) <= tol,
                            what << ", element " << i << ": " << got[i]
                                 << " vs " << want);
            ++skippedChecked;
          }
          if (chain == 0)
            CHECK_MESSAGE(skippedChecked > 0, what);
        }
}
