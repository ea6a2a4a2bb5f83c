// ResizeTest.cpp - resize_nearest, resize_linear and resize_cubic against
// the pixel-by-pixel reference, for every coordinate mode and rounding on
// upsampling, downsampling, non-integer and one-pixel geometries; and the
// rounding rules on values written out by hand.
#include "KernelTestUtil.h"

#include <fmt/format.h>

namespace hpvm::rt::test {
namespace {

struct Geometry {
  int64_t n, c, h, w, ho, wo;
};

/// Runs resize row \p run with \p scalars on x (n x c x h x w) and
/// returns its output.
std::vector<float> runRow(void (*run)(const OpCall&), const Geometry& g,
                          const std::vector<double>& scalars,
                          const std::vector<float>& x) {
  TestTensor in({size_t(g.n), size_t(g.c), size_t(g.h), size_t(g.w)});
  TestTensor out({size_t(g.n), size_t(g.c), size_t(g.ho), size_t(g.wo)});
  in.set(x);
  Tensor* operands[] = {in.get()};
  run(OpCall{operands, 1, scalars.data(), PostAct{}, KnobSpec{}, out.get()});
  return out.values();
}

/// Runs one resize op on x (n x c x h x w) and returns its output.
std::vector<float> runResize(bool linear, const Geometry& g, float scaleH,
                             float scaleW, ResizeCoord coord, NearestRounding r,
                             const std::vector<float>& x) {
  return runRow(linear ? runResizeLinear : runResizeNearest, g,
                {double(g.ho), double(g.wo), scaleH, scaleW, double(int(coord)),
                 double(int(r))},
                x);
}

/// Upsampling, downsampling, non-integer and one-pixel geometries.
const Geometry kGeometries[] = {
    {2, 3, 5, 7, 10, 14},    // 2x up
    {1, 2, 7, 6, 3, 4},      // down, uneven
    {1, 3, 6, 5, 13, 11},    // non-integer up
    {2, 1, 9, 9, 1, 1},      // one output pixel
    {1, 2, 1, 1, 4, 5},      // one input pixel
    {1, 2, 2, 3, 7, 8},      // every cubic tap near an edge
    {1, 17, 32, 24, 64, 48}, // a segmentation head's 2x, 17 channels
};

TEST_CASE("Resize: both rows match the reference for every coordinate mode, "
          "rounding and geometry") {
  int cases = 0;
  for (const Geometry& g : kGeometries) {
    const std::vector<float> x =
        randomVec(size_t(g.n * g.c * g.h * g.w), unsigned(g.h * 31 + g.wo));
    // Scales as sizes give them, and the given scales of scale inputs.
    const float scaleH = float(g.ho) / float(g.h),
                scaleW = float(g.wo) / float(g.w);
    for (size_t m = 0; m < std::size(kResizeCoordNames); ++m) {
      const auto coord = static_cast<ResizeCoord>(m);
      for (size_t r = 0; r <= std::size(kNearestRoundingNames); ++r) {
        // r == the count: the linear row.
        const bool linear = r == std::size(kNearestRoundingNames);
        const auto rounding = static_cast<NearestRounding>(linear ? 0 : int(r));
        std::vector<float> want(size_t(g.n * g.c * g.ho * g.wo));
        ref::resize(x.data(), g.n, g.c, g.h, g.w, g.ho, g.wo, scaleH, scaleW,
                    coord, linear, rounding, want.data());
        const std::vector<float> got =
            runResize(linear, g, scaleH, scaleW, coord, rounding, x);
        checkClose(got, want, 1e-6, 1e-6,
                   fmt::format("{} {}x{} -> {}x{}, {}, {}",
                               linear ? "linear" : "nearest", g.h, g.w, g.ho,
                               g.wo, kResizeCoordNames[m],
                               linear ? "" : kNearestRoundingNames[r]));
        ++cases;
      }
    }
  }
  CHECK(cases == 7 * 6 * 5);
}

TEST_CASE("Resize: cubic matches ONNX's definition for every coordinate "
          "mode, coefficient and geometry, with and without the outside "
          "taps") {
  int cases = 0;
  for (const Geometry& g : kGeometries) {
    const std::vector<float> x =
        randomVec(size_t(g.n * g.c * g.h * g.w), unsigned(g.h * 37 + g.wo));
    const float scaleH = float(g.ho) / float(g.h),
                scaleW = float(g.wo) / float(g.w);
    for (size_t m = 0; m < std::size(kResizeCoordNames); ++m)
      for (float a : {-0.75f, -0.5f})
        for (bool exclude : {false, true}) {
          const auto coord = static_cast<ResizeCoord>(m);
          std::vector<float> want(size_t(g.n * g.c * g.ho * g.wo));
          ref::resizeCubic(x.data(), g.n, g.c, g.h, g.w, g.ho, g.wo, scaleH,
                           scaleW, coord, a, exclude, want.data());
          const std::vector<float> got =
              runRow(runResizeCubic, g,
                     {double(g.ho), double(g.wo), scaleH, scaleW,
                      double(int(coord)), a, exclude ? 1.0 : 0.0},
                     x);
          checkClose(got, want, 1e-5, 1e-5,
                     fmt::format("cubic {}x{} -> {}x{}, {}, a {}{}", g.h, g.w,
                                 g.ho, g.wo, kResizeCoordNames[m], a,
                                 exclude ? ", exclude outside" : ""));
          ++cases;
        }
  }
  CHECK(cases == 7 * 6 * 2 * 2);
  // With a = -0.5 Keys' kernel reproduces polynomials up to degree 2
  // (its weights sum to 1 and reproduce the coordinate): 2x of a ramp,
  // away from the edges, is the ramp at the output's coordinates (an
  // independent check of the weights' formula).
  std::vector<float> ramp(8);
  for (int i = 0; i < 8; ++i)
    ramp[size_t(i)] = float(3 * i + 1);
  const std::vector<float> got =
      runRow(runResizeCubic, Geometry{1, 1, 1, 8, 1, 16},
             {1, 16, 1, 2, double(int(ResizeCoord::HalfPixel)), -0.5, 0}, ramp);
  for (int o = 4; o < 12; ++o)
    CHECK(got[size_t(o)] ==
          doctest::Approx(3.0 * ((o + 0.5) / 2 - 0.5) + 1).epsilon(1e-6));
}

TEST_CASE("Resize: nearest rounds halves as its mode says, linear blends "
          "and clamps at the edges") {
  // 1 x 4 -> 1 x 8, asymmetric: the coordinates are 0, 0.5, 1, ..., 3.5.
  const std::vector<float> x = {10, 11, 12, 13};
  const Geometry g{1, 1, 1, 4, 1, 8};
  auto nearest = [&](NearestRounding r) {
    return runResize(false, g, 1.f, 2.f, ResizeCoord::Asymmetric, r, x);
  };
  CHECK(nearest(NearestRounding::RoundPreferFloor) ==
        std::vector<float>{10, 10, 11, 11, 12, 12, 13, 13});
  CHECK(nearest(NearestRounding::RoundPreferCeil) ==
        std::vector<float>{10, 11, 11, 12, 12, 13, 13, 13});
  CHECK(nearest(NearestRounding::Floor) ==
        std::vector<float>{10, 10, 11, 11, 12, 12, 13, 13});
  CHECK(nearest(NearestRounding::Ceil) ==
        std::vector<float>{10, 11, 11, 12, 12, 13, 13, 13});
  // Linear, half pixel: -0.25 clamps to 0; 0.25 -> 10.25; ...; 3.25 -> 13.
  CHECK(runResize(true, g, 1.f, 2.f, ResizeCoord::HalfPixel,
                  NearestRounding::Floor, x) ==
        std::vector<float>{10, 10.25, 10.75, 11.25, 11.75, 12.25, 12.75, 13});
  // Align corners: o * 3 / 7.
  const std::vector<float> corners = runResize(
      true, g, 1.f, 2.f, ResizeCoord::AlignCorners, NearestRounding::Floor, x);
  for (int o = 0; o < 8; ++o)
    CHECK(corners[size_t(o)] ==
          doctest::Approx(10 + o * 3.0 / 7).epsilon(1e-6));
}

} // namespace
} // namespace hpvm::rt::test
