// TestSample.h - which combinations an exhaustive test case runs. The
// Release tests run every one. The sanitizer build (HPVM_TEST_SANITIZED, set
// by tests/CMakeLists.txt when HPVM_SANITIZE is on) is ten times slower and
// looks for memory errors, which follow the shapes and layouts rather than
// the values: there a case runs one variant per shape, rotating, so that
// every shape and every variant still run at least once.
#ifndef TORCH2HPVM_TESTS_TESTSAMPLE_H
#define TORCH2HPVM_TESTS_TESTSAMPLE_H

#include <cstddef>

namespace hpvm::test {

#ifdef HPVM_TEST_SANITIZED
inline constexpr bool kSampled = true;
#else
inline constexpr bool kSampled = false;
#endif

/// Whether combination number `index` (counted over the whole case) runs
/// variant `variant` of `variants`.
inline bool runsVariant(size_t index, int variant, int variants) {
  return !kSampled || static_cast<int>(index % size_t(variants)) == variant;
}

} // namespace hpvm::test

#endif // TORCH2HPVM_TESTS_TESTSAMPLE_H
