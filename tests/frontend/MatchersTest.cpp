// MatchersTest.cpp - the small matchers the passes share, on the values a
// model's attributes can hold (fuzz_onnx found out-of-range axes read past
// a table here).
#include "passes/Matchers.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>

using namespace hpvm::fe;

TEST_CASE("channelFirstAxis maps N x H x W x C axes, negative ones too, and "
          "leaves axes no 4-D value has as they are") {
  CHECK(channelFirstAxis(0) == 0);
  CHECK(channelFirstAxis(1) == 2);
  CHECK(channelFirstAxis(2) == 3);
  CHECK(channelFirstAxis(3) == 1);
  CHECK(channelFirstAxis(-1) == 1);
  CHECK(channelFirstAxis(-4) == 0);
  for (int64_t a : {int64_t(4), int64_t(-5), int64_t(7),
                    std::numeric_limits<int64_t>::max(),
                    std::numeric_limits<int64_t>::min()})
    CHECK(channelFirstAxis(a) == a);
}
