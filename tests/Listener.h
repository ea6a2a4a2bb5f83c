// Listener.h - a doctest listener that does nothing, to derive from: a
// listener overrides only the events it needs.
#ifndef TORCH2HPVM_TESTS_LISTENER_H
#define TORCH2HPVM_TESTS_LISTENER_H

#include <doctest/doctest.h>

namespace hpvm::test {

struct Listener : doctest::IReporter {
  explicit Listener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

} // namespace hpvm::test

#endif // TORCH2HPVM_TESTS_LISTENER_H
