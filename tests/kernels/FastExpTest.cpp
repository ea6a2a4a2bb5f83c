// FastExpTest.cpp - expNonPositive (kernels/FastExp.h), the softmaxes' e^x:
// within 2 ulp of e^x over its range, e^-87 below it, NaN kept.
#include "kernels/FastExp.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using hpvm::rt::kern::expNonPositive;

TEST_CASE("Kernels: expNonPositive is e^x within 2 ulp from 0 down to -87, "
          "e^-87 below, and NaN for NaN") {
  for (double x = 0; x >= -87; x -= 0.0137) {
    const float got = expNonPositive(float(x));
    const double want = std::exp(double(float(x)));
    INFO("x = " << x);
    CHECK(std::abs(double(got) - want) <=
          2 * double(std::numeric_limits<float>::epsilon()) * want);
  }
  CHECK(expNonPositive(0.f) == 1.f);
  const float floor = expNonPositive(-87.f);
  CHECK(expNonPositive(-1000.f) == floor);
  CHECK(expNonPositive(-std::numeric_limits<float>::infinity()) == floor);
  CHECK(std::isnan(expNonPositive(std::numeric_limits<float>::quiet_NaN())));
}
