// SamplingTest.cpp - filter-sampled convolution against the NumPy oracle
// and the exact reference kernel; the skip sets of both variants.
#include "approx/Approx.h"
#include "approx/ConvGeometry.h"
#include "base/Errors.h"
#include "kernels/Kernels.h"
#include "kernels/Reference.h"

#include "ConvShapes.h"
#include "Oracle.h"

#include <doctest/doctest.h>
#include <omp.h>

using namespace hpvm::rt;
using namespace hpvm::test;

namespace {

KnobSpec sampKnob(int rate, int offset) {
  KnobSpec k;
  k.id = 901;
  k.variant = Variant::Samp;
  k.rate = rate;
  k.offset = offset;
  return k;
}

std::vector<float> sampled(const ConvShape& s, const Array& x, const Array& w,
                           const KnobSpec& knob) {
  const int64_t ho = 1 + (s.h + 2 * s.args.padH - s.kh) / s.args.strideH;
  const int64_t wo = 1 + (s.w + 2 * s.args.padW - s.kw) / s.args.strideW;
  std::vector<float> y(s.n * s.k * ho * wo, -7.f);
  approx::convSampled(x.data.data(), s.n, s.c, s.h, s.w, w.data.data(), s.k,
                      s.kh, s.kw, s.args, knob, y.data());
  return y;
}

} // namespace

TEST_CASE("Approx: filter sampling matches the NumPy oracle") {
  // One and four threads take different paths (one GEMM per thread, or
  // one multi-threaded GEMM per chunk); both must match.
  struct Run {
    size_t oracle, shape;
    int rate, offset;
    std::vector<float> got, got4;
  };
  OracleBatch batch;
  std::vector<Run> runs;
  const auto& shapes = convShapes();
  for (size_t si = 0; si < shapes.size(); ++si) {
    const ConvShape& s = shapes[si];
    const Array x = randomArray({s.n, s.c, s.h, s.w}, 200 + uint32_t(si));
    const Array w =
        randomArray({s.k, s.c / s.args.groups, s.kh, s.kw}, 300 + uint32_t(si));
    const std::string xf = batch.addTensor(x), wf = batch.addTensor(w);
    for (int rate = 1; rate <= 4; ++rate)
      for (int offset = 0; offset < rate; ++offset) {
        const KnobSpec knob = sampKnob(rate, offset);
        const int saved = omp_get_max_threads();
        omp_set_num_threads(1);
        std::vector<float> one = sampled(s, x, w, knob);
        omp_set_num_threads(4);
        std::vector<float> four = sampled(s, x, w, knob);
        omp_set_num_threads(saved);
        runs.push_back({batch.addConv("samp", xf, wf, s.args, rate, offset), si,
                        rate, offset, std::move(one), std::move(four)});
      }
  }
  batch.run();
  for (const Run& r : runs) {
    const std::vector<float> want = batch.result(r.oracle);
    const int64_t bad = firstMismatch(r.got, want);
    INFO(describe(shapes[r.shape], "sampling", r.rate, r.offset));
    INFO("element " << bad << ": got "
                    << (bad >= 0 && bad < int64_t(r.got.size()) ? r.got[bad]
                                                                : 0.f)
                    << ", oracle "
                    << (bad >= 0 && bad < int64_t(want.size()) ? want[bad]
                                                               : 0.f));
    CHECK(want.size() == r.got.size());
    CHECK(bad == -1);
    CHECK(firstMismatch(r.got4, want) == -1);
  }
}

TEST_CASE("Approx: rate 1 sampling equals the exact reference kernel") {
  for (const ConvShape& s : convShapes()) {
    const Array x = randomArray({s.n, s.c, s.h, s.w}, 17);
    const Array w = randomArray({s.k, s.c / s.args.groups, s.kh, s.kw}, 18);
    const std::vector<float> got = sampled(s, x, w, sampKnob(1, 0));
    std::vector<float> want(got.size());
    ref::conv2d(x.data.data(), s.n, s.c, s.h, s.w, w.data.data(), s.k, s.kh,
                s.kw, s.args, want.data());
    INFO(describe(s, "sampling", 1, 0));
    CHECK(firstMismatch(got, want) == -1);
  }
}

TEST_CASE("Approx: sampling skips HPVM's filter elements") {
  // Regular (3x3, rate 3): channel c skips positions (offset + c) mod 3,
  // +3, +6.
  const std::vector<int64_t> reg = approx::samplingKept(2, 3, 3, 3, 1);
  CHECK(reg == std::vector<int64_t>{0, 2, 3, 5, 6, 8, 9, 10, 12, 13, 15, 16});
  // Irregular (3x3, rate 2): one offset over the flattened 2x3x3 filter.
  const std::vector<int64_t> irr = approx::samplingKept(2, 3, 3, 2, 1);
  CHECK(irr == std::vector<int64_t>{0, 2, 4, 6, 8, 10, 12, 14, 16});
  // Irregular kept count: N - ceil((N - s) / r).
  CHECK(approx::samplingKept(3, 5, 5, 4, 3).size() == 75 - 18);
  CHECK(approx::samplingKept(1, 1, 1, 2, 1).size() == 1);
  CHECK(approx::samplingScale(2) == 2.f);
  CHECK(approx::samplingScale(3) == 1.5f);
  CHECK(approx::samplingScale(4) == 4.f / 3.f);
}

TEST_CASE("Approx: sampling rejects bad knobs") {
  const Array x = randomArray({1, 2, 5, 5}, 1);
  const Array w = randomArray({2, 2, 3, 3}, 2);
  std::vector<float> y(2 * 9);
  KnobSpec perf = sampKnob(2, 0);
  perf.id = 123;
  perf.variant = Variant::PerfRow;
  auto call = [&](const KnobSpec& k) {
    approx::convSampled(x.data.data(), 1, 2, 5, 5, w.data.data(), 2, 3, 3,
                        {0, 0, 1, 1, 1}, k, y.data());
  };
  CHECK_THROWS_WITH_AS(
      call(perf),
      doctest::Contains("convSampled: knob 123 is row perforation, expected "
                        "filter sampling"),
      InternalError);
  CHECK_THROWS_WITH_AS(
      call(sampKnob(0, 0)),
      doctest::Contains("convSampled: knob 901 has rate 0, expected 1 to 4"),
      InternalError);
  CHECK_THROWS_WITH_AS(
      call(sampKnob(2, -1)),
      doctest::Contains("convSampled: knob 901 has offset -1, expected 0..1"),
      InternalError);
}
