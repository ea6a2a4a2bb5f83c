// RuntimeCleanup.cpp - linked into the test executables that use hpvm_rt:
// after every test case, the runtime is shut down as a program's end does
// (llvm_hpvm_cleanupTensorRt frees every tensor still alive), so that
// LeakSanitizer holds the tests to the same standard as the programs.
#include <doctest/doctest.h>
#include <tensor_runtime.h>

namespace {

struct RuntimeCleanup : doctest::IReporter {
  explicit RuntimeCleanup(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {
    llvm_hpvm_cleanupTensorRt();
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

} // namespace

REGISTER_LISTENER("hpvm_rt cleanup", 1, RuntimeCleanup);
