// ProgressTest.cpp - the progress bars' estimate of the time left.
#include "command/Progress.h"

#include <doctest/doctest.h>

using namespace hpvm::rt;

TEST_CASE("the progress bar's time left") {
  CHECK(ProgressBar::timeLeft(0.2) == "~0s left");
  CHECK(ProgressBar::timeLeft(42.4) == "~42s left");
  CHECK(ProgressBar::timeLeft(59.6) == "~1m00s left");
  CHECK(ProgressBar::timeLeft(185) == "~3m05s left");
  CHECK(ProgressBar::timeLeft(3725) == "~62m05s left");
}
