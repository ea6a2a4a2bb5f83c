// ResizeTest.cpp - resize_nearest, resize_linear and resize_cubic against
// the pixel-by-pixel reference, for every coordinate mode and rounding on
// upsampling, downsampling, non-integer and one-pixel geometries; their
// crop rows over regions inside, across and beyond the image; and the
// rounding rules and the crop mapping on values written out by hand.
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

/// The coordinate modes of the plain rows (tf_crop_and_resize is the crop
/// rows').
constexpr size_t kPlainModes = size_t(ResizeCoord::TfCropAndResize);

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
    for (size_t m = 0; m < kPlainModes; ++m) {
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
  CHECK(kPlainModes == 6);
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
    for (size_t m = 0; m < kPlainModes; ++m)
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

/// Regions (top, left, bottom, right): inside, the whole image, across two
/// edges, flipped, and wholly outside.
const float kRegions[][4] = {{0.2f, 0.1f, 0.7f, 0.9f},
                             {0.f, 0.f, 1.f, 1.f},
                             {-0.3f, 0.4f, 0.6f, 1.5f},
                             {0.9f, 0.8f, 0.1f, 0.3f},
                             {1.2f, -2.f, 1.6f, -1.f}};

TEST_CASE("Resize: the crop rows match the reference over regions inside, "
          "across and beyond the image, for every mode") {
  int cases = 0;
  for (const Geometry& g : kGeometries)
    for (const auto& roi : kRegions) {
      const std::vector<float> x =
          randomVec(size_t(g.n * g.c * g.h * g.w), unsigned(g.h * 41 + g.wo));
      const ref::ResizeCrop crop{true, {roi[0], roi[1], roi[2], roi[3]}, -7.5f};
      const std::vector<double> head = {
          double(g.ho), double(g.wo), roi[0], roi[1], roi[2], roi[3], -7.5};
      const std::string where =
          fmt::format("{}x{} -> {}x{}, region {} {} {} {}", g.h, g.w, g.ho,
                      g.wo, roi[0], roi[1], roi[2], roi[3]);
      std::vector<float> want(size_t(g.n * g.c * g.ho * g.wo));
      for (size_t r = 0; r < std::size(kNearestRoundingNames); ++r) {
        const auto rounding = static_cast<NearestRounding>(r);
        ref::resize(x.data(), g.n, g.c, g.h, g.w, g.ho, g.wo, 1.f, 1.f,
                    ResizeCoord::TfCropAndResize, false, rounding, want.data(),
                    crop);
        std::vector<double> scalars = head;
        scalars.push_back(double(r));
        checkClose(runRow(runResizeNearestCrop, g, scalars, x), want, 0, 0,
                   "nearest " + where);
        ++cases;
      }
      ref::resize(x.data(), g.n, g.c, g.h, g.w, g.ho, g.wo, 1.f, 1.f,
                  ResizeCoord::TfCropAndResize, true, NearestRounding::Floor,
                  want.data(), crop);
      checkClose(runRow(runResizeLinearCrop, g, head, x), want, 1e-6, 1e-6,
                 "linear " + where);
      ++cases;
      for (bool exclude : {false, true}) {
        ref::resizeCubic(x.data(), g.n, g.c, g.h, g.w, g.ho, g.wo, 1.f, 1.f,
                         ResizeCoord::TfCropAndResize, -0.75, exclude,
                         want.data(), crop);
        std::vector<double> scalars = head;
        scalars.push_back(-0.75);
        scalars.push_back(exclude ? 1 : 0);
        checkClose(runRow(runResizeCubicCrop, g, scalars, x), want, 1e-5, 1e-5,
                   "cubic " + where);
        ++cases;
      }
    }
  CHECK(cases == 7 * 5 * (4 + 1 + 2));
}

TEST_CASE("Resize: a crop maps its region's ends onto the output's and "
          "extrapolates beyond the image") {
  // 1 x 5, values 10 .. 14; region columns 0.25 .. 1.25 of (5 - 1): input
  // columns 1 .. 5 in 5 steps of 1; column 5 is outside.
  const std::vector<float> x = {10, 11, 12, 13, 14};
  const Geometry g{1, 1, 1, 5, 1, 5};
  CHECK(runRow(runResizeLinearCrop, g, {1, 5, 0, 0.25, 1, 1.25, -1}, x) ==
        std::vector<float>{11, 12, 13, 14, -1});
  // Halfway steps: columns 1, 1.5, ..., 3; nearest rounds halves up.
  CHECK(runRow(runResizeNearestCrop, g, {1, 5, 0, 0.25, 1, 0.75, 0, 1}, x) ==
        std::vector<float>{11, 12, 12, 13, 13});
  CHECK(runRow(runResizeLinearCrop, g, {1, 5, 0, 0.25, 1, 0.75, 0}, x) ==
        std::vector<float>{11, 11.5, 12, 12.5, 13});
  // One output pixel: the region's centre, column (0.25 + 0.75) / 2 * 4.
  CHECK(runRow(runResizeLinearCrop, Geometry{1, 1, 1, 5, 1, 1},
               {1, 1, 0, 0.25, 1, 0.75, 0}, x) == std::vector<float>{12});
  // Rows: a 1-row image's only row is 0 (inside) for any region.
  CHECK(runRow(runResizeLinearCrop, Geometry{1, 1, 1, 5, 2, 5},
               {2, 5, 0.3, 0, 0.9, 1, 0}, x) ==
        std::vector<float>{10, 11, 12, 13, 14, 10, 11, 12, 13, 14});
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
