// PerforationTest.cpp - row/column perforated convolution against the NumPy
// oracle, the exact reference kernel and its own interpolation rule.
#include "approx/Approx.h"
#include "approx/ConvGeometry.h"
#include "base/Errors.h"
#include "kernels/Kernels.h"
#include "kernels/Reference.h"

#include "ConvShapes.h"
#include "Oracle.h"

#include <doctest/doctest.h>

using namespace hpvm::rt;
using namespace hpvm::test;

namespace {

KnobSpec perfKnob(bool rows, int rate, int offset) {
  KnobSpec k;
  k.id = 900;
  k.variant = rows ? Variant::PerfRow : Variant::PerfCol;
  k.rate = rate;
  k.offset = offset;
  return k;
}

struct Problem {
  Array x, w;
  int64_t ho, wo;
};

Problem makeProblem(const ConvShape& s, uint32_t seed) {
  Problem p;
  p.x = randomArray({s.n, s.c, s.h, s.w}, seed);
  p.w = randomArray({s.k, s.c / s.args.groups, s.kh, s.kw}, seed + 1);
  p.ho = 1 + (s.h + 2 * s.args.padH - s.kh) / s.args.strideH;
  p.wo = 1 + (s.w + 2 * s.args.padW - s.kw) / s.args.strideW;
  return p;
}

std::vector<float> perforated(const ConvShape& s, const Problem& p,
                              const KnobSpec& knob) {
  std::vector<float> y(s.n * s.k * p.ho * p.wo, -7.f);
  approx::convPerforated(p.x.data.data(), s.n, s.c, s.h, s.w, p.w.data.data(),
                         s.k, s.kh, s.kw, s.args, knob, y.data());
  return y;
}

} // namespace

TEST_CASE("Approx: perforated convolution matches the NumPy oracle") {
  struct Run {
    size_t oracle;
    size_t shape;
    bool rows;
    int rate, offset;
    std::vector<float> got;
    approx::PerforationPath path;
  };
  // Every engine: oneDNN with the fused or the generic output pass, GEMM.
  OracleBatch batch;
  std::vector<Run> runs;
  const auto& shapes = convShapes();
  for (size_t si = 0; si < shapes.size(); ++si) {
    const ConvShape& s = shapes[si];
    const Problem p = makeProblem(s, 100 + static_cast<uint32_t>(si));
    const std::string xf = batch.addTensor(p.x), wf = batch.addTensor(p.w);
    for (approx::PerforationPath path :
         {approx::PerforationPath::DnnlFused,
          approx::PerforationPath::DnnlGeneric, approx::PerforationPath::Gemm})
      for (bool rows : {true, false})
        for (int rate = 1; rate <= 4; ++rate)
          for (int offset = 0; offset < rate; ++offset) {
            approx::setPerforationPath(path);
            Run r{batch.addConv(rows ? "perf_row" : "perf_col", xf, wf, s.args,
                                rate, offset),
                  si,
                  rows,
                  rate,
                  offset,
                  perforated(s, p, perfKnob(rows, rate, offset)),
                  path};
            approx::setPerforationPath(approx::PerforationPath::Auto);
            runs.push_back(std::move(r));
          }
  }
  batch.run();
  for (const Run& r : runs) {
    const ConvShape& s = shapes[r.shape];
    const std::vector<float> want = batch.result(r.oracle);
    const int64_t bad = firstMismatch(r.got, want);
    INFO(describe(s, r.rows ? "rows" : "columns", r.rate, r.offset)
         << " engine " << static_cast<int>(r.path));
    INFO("element " << bad << ": got "
                    << (bad >= 0 && bad < int64_t(r.got.size()) ? r.got[bad]
                                                                : 0.f)
                    << ", oracle "
                    << (bad >= 0 && bad < int64_t(want.size()) ? want[bad]
                                                               : 0.f));
    CHECK(want.size() == r.got.size());
    CHECK(bad == -1);
  }
}

TEST_CASE("Approx: rate 1 perforation equals the exact reference kernel") {
  for (const ConvShape& s : convShapes()) {
    const Problem p = makeProblem(s, 7);
    std::vector<float> want(s.n * s.k * p.ho * p.wo);
    ref::conv2d(p.x.data.data(), s.n, s.c, s.h, s.w, p.w.data.data(), s.k, s.kh,
                s.kw, s.args, want.data());
    for (bool rows : {true, false}) {
      INFO(describe(s, rows ? "rows" : "columns", 1, 0));
      CHECK(firstMismatch(perforated(s, p, perfKnob(rows, 1, 0)), want) == -1);
    }
  }
}

TEST_CASE("Approx: skipped rows and columns are interpolated bit-exactly") {
  // The fill rule is applied to the kernel's own computed values, so it can
  // be checked exactly: index 0 copies 1, the last copies the one before,
  // interior indices are (prev + next) * 0.5f.
  const ConvShape s = {"check", 2, 16, 15, 14, 32, 3, 3, {1, 1, 1, 1, 1}};
  const Problem p = makeProblem(s, 11);
  for (bool rows : {true, false})
    for (int rate = 2; rate <= 4; ++rate)
      for (int offset = 0; offset < rate; ++offset) {
        INFO(describe(s, rows ? "rows" : "columns", rate, offset));
        const std::vector<float> y =
            perforated(s, p, perfKnob(rows, rate, offset));
        const int64_t len = rows ? p.ho : p.wo;
        const std::vector<bool> kept =
            approx::perforationKept(len, rate, offset);
        int64_t skipped = 0, wrong = 0;
        for (int64_t plane = 0; plane < s.n * s.k; ++plane)
          for (int64_t a = 0; a < p.ho; ++a)
            for (int64_t b = 0; b < p.wo; ++b) {
              const int64_t i = rows ? a : b;
              if (kept[i])
                continue;
              ++skipped;
              auto at = [&](int64_t j) {
                return y[(plane * p.ho + (rows ? j : a)) * p.wo +
                         (rows ? b : j)];
              };
              float want;
              if (i == 0)
                want = at(1);
              else if (i == len - 1)
                want = at(len - 2);
              else
                want = (at(i - 1) + at(i + 1)) * 0.5f;
              wrong += at(i) != want;
            }
        CHECK(skipped > 0);
        CHECK(wrong == 0);
      }
}

TEST_CASE("Approx: perforation keeps the rows HPVM keeps") {
  // Reference section 6.2's examples for an 8-row output.
  auto skipped = [](int rate, int offset) {
    std::vector<int> out;
    const std::vector<bool> kept = approx::perforationKept(8, rate, offset);
    for (int i = 0; i < 8; ++i)
      if (!kept[i])
        out.push_back(i);
    return out;
  };
  CHECK(skipped(2, 0) == std::vector<int>{0, 2, 4, 6});
  CHECK(skipped(2, 1) == std::vector<int>{1, 3, 5, 7});
  CHECK(skipped(3, 0) == std::vector<int>{0, 3, 6});
  CHECK(skipped(3, 1) == std::vector<int>{1, 4, 7});
  CHECK(skipped(3, 2) == std::vector<int>{2, 5});
  CHECK(skipped(4, 0) == std::vector<int>{0, 4});
  CHECK(skipped(4, 3) == std::vector<int>{3, 7});
  CHECK(approx::perforationKept(1, 2, 0) == std::vector<bool>{true});
}

TEST_CASE("Approx: perforation rejects bad knobs and shapes") {
  const ConvShape s = {"bad", 1, 4, 8, 8, 4, 3, 3, {1, 1, 1, 1, 1}};
  const Problem p = makeProblem(s, 3);
  std::vector<float> y(1 * 4 * 8 * 8);
  auto call = [&](const KnobSpec& knob, const ConvArgs& a, int64_t kh) {
    approx::convPerforated(p.x.data.data(), 1, 4, 8, 8, p.w.data.data(), 4, kh,
                           3, a, knob, y.data());
  };
  KnobSpec samp = perfKnob(true, 2, 0);
  samp.id = 231;
  samp.variant = Variant::Samp;
  CHECK_THROWS_WITH_AS(
      call(samp, s.args, 3),
      doctest::Contains("convPerforated: knob 231 is filter sampling, "
                        "expected row perforation or column perforation"),
      InternalError);
  CHECK_THROWS_WITH_AS(
      call(perfKnob(true, 5, 0), s.args, 3),
      doctest::Contains("convPerforated: knob 900 has rate 5, expected 1 to 4"),
      InternalError);
  CHECK_THROWS_WITH_AS(
      call(perfKnob(false, 3, 3), s.args, 3),
      doctest::Contains("convPerforated: knob 900 has offset 3, expected 0..2"),
      InternalError);
  CHECK_THROWS_WITH_AS(
      call(perfKnob(true, 2, 0), {1, 1, 1, 1, 3}, 3),
      doctest::Contains("convPerforated: 3 groups do not divide 4 input and 4 "
                        "output channels"),
      InternalError);
  CHECK_THROWS_WITH_AS(
      call(perfKnob(true, 2, 0), {0, 0, 1, 1, 1}, 9),
      doctest::Contains("convPerforated: filter 9x3 is larger than the padded "
                        "input 8x8"),
      InternalError);
  CHECK_THROWS_WITH_AS(
      call(perfKnob(true, 2, 0), {1, 1, 0, 1, 1}, 3),
      doctest::Contains("convPerforated: strides 0,1 must be positive"),
      InternalError);
  CHECK_THROWS_WITH_AS(
      call(perfKnob(true, 2, 0), {-1, 1, 1, 1, 1}, 3),
      doctest::Contains("convPerforated: paddings -1,1 must not be negative"),
      InternalError);
  CHECK_THROWS_WITH_AS(
      call(perfKnob(true, 2, 0), s.args, 0),
      doctest::Contains("convPerforated: filter with 4 output channels and a "
                        "0x3 window has a non-positive extent"),
      InternalError);
  CHECK_THROWS_WITH_AS(
      approx::convPerforated(p.x.data.data(), 0, 4, 8, 8, p.w.data.data(), 4, 3,
                             3, s.args, perfKnob(true, 2, 0), y.data()),
      doctest::Contains(
          "convPerforated: input shape 0x4x8x8 has a non-positive extent"),
      InternalError);
}
