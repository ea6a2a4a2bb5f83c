// ConvShapes.h - the convolution shapes the approx tests sweep: odd sizes,
// strides, asymmetric paddings, groups, depthwise, 1x1 and one-row/one-column
// outputs.
#ifndef HPVM_TESTS_APPROX_CONVSHAPES_H
#define HPVM_TESTS_APPROX_CONVSHAPES_H

#include "approx/Approx.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hpvm::test {

/// One convolution problem.
struct ConvShape {
  const char* name;
  int64_t n, c, h, w, k, kh, kw;
  hpvm::rt::ConvArgs args;
};

/// The shape sweep shared by the perforation and sampling tests.
inline const std::vector<ConvShape>& convShapes() {
  static const std::vector<ConvShape> shapes = {
      {"3x3 pad1", 1, 3, 8, 8, 4, 3, 3, {1, 1, 1, 1, 1}},
      {"odd 13x11", 2, 5, 13, 11, 6, 3, 3, {1, 1, 1, 1, 1}},
      {"stride2 pad0", 2, 4, 9, 10, 8, 3, 3, {0, 0, 2, 2, 1}},
      {"groups2", 1, 6, 12, 12, 6, 3, 3, {1, 1, 1, 1, 2}},
      {"depthwise", 2, 8, 7, 7, 8, 3, 3, {1, 1, 1, 1, 8}},
      {"depthwise stride2", 1, 16, 9, 9, 16, 3, 3, {1, 1, 2, 2, 16}},
      {"5x5 pad2", 1, 3, 11, 9, 5, 5, 5, {2, 2, 1, 1, 1}},
      {"1x1 stride2", 1, 4, 8, 8, 3, 1, 1, {0, 0, 2, 2, 1}},
      {"one output row", 1, 2, 3, 5, 2, 3, 3, {0, 0, 1, 1, 1}},
      {"one output column", 1, 2, 5, 3, 2, 3, 3, {0, 0, 1, 1, 1}},
      {"one output pixel", 1, 3, 3, 3, 2, 3, 3, {0, 0, 1, 1, 1}},
      {"2x2 output", 1, 3, 4, 4, 2, 3, 3, {0, 0, 1, 1, 1}},
      {"16 to 32 channels", 2, 16, 16, 16, 32, 3, 3, {1, 1, 1, 1, 1}},
      {"7x7 stride2 pad3", 1, 3, 17, 16, 16, 7, 7, {3, 3, 2, 2, 1}},
      {"mixed strides", 1, 32, 6, 20, 24, 3, 3, {1, 1, 1, 2, 1}},
      {"2x2 stride2", 1, 4, 10, 10, 4, 2, 2, {0, 0, 2, 2, 1}},
      {"3x5 asymmetric", 1, 3, 10, 12, 4, 3, 5, {0, 2, 2, 1, 1}},
      {"unused trailing input", 1, 4, 12, 13, 5, 1, 1, {0, 0, 3, 4, 1}},
      {"64 channels 8x8", 2, 64, 8, 8, 64, 3, 3, {1, 1, 1, 1, 1}},
      {"wide outputs", 3, 5, 17, 17, 7, 3, 3, {1, 1, 1, 1, 1}},
      {"partial image chunk", 5, 3, 8, 8, 4, 3, 3, {1, 1, 1, 1, 1}},
  };
  return shapes;
}

/// A readable description of a case for failure messages.
inline std::string describe(const ConvShape& s, const char* op, int rate,
                            int offset) {
  return std::string(s.name) + " " + op + " rate " + std::to_string(rate) +
         " offset " + std::to_string(offset);
}

} // namespace hpvm::test

#endif // HPVM_TESTS_APPROX_CONVSHAPES_H
