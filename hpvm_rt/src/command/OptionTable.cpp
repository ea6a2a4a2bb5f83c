// OptionTable.cpp - the number parsers of option values.
#include "command/OptionTable.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

namespace hpvm::rt {

int64_t parseCount(std::string_view option, std::string_view value, int64_t min,
                   int64_t max) {
  int64_t n = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, n);
  if (ec != std::errc() || ptr != end || n < min || n > max)
    throw UserError(
        max == std::numeric_limits<int64_t>::max()
            ? fmt::format("bad value '{}' for {}: expected an integer >= {}",
                          value, option, min)
            : fmt::format("bad value '{}' for {}: expected an integer from {} "
                          "to {}",
                          value, option, min, max));
  return n;
}

double parseNumber(std::string_view option, std::string_view value,
                   double min) {
  std::string text(value);
  char* end = nullptr;
  double v = text.empty() ? 0 : std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !std::isfinite(v) || v < min)
    throw UserError(fmt::format("bad value '{}' for {}: expected a number >= "
                                "{}",
                                value, option, min));
  return v;
}

} // namespace hpvm::rt
