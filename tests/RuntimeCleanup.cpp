// RuntimeCleanup.cpp - linked into the test executables that use hpvm_rt:
// after every test case, the runtime is shut down as a program's end does
// (llvm_hpvm_cleanupTensorRt frees every tensor still alive), so that
// LeakSanitizer holds the tests to the same standard as the programs.
#include "Listener.h"

#include <tensor_runtime.h>

namespace {

struct RuntimeCleanup : hpvm::test::Listener {
  using Listener::Listener;
  void test_case_end(const doctest::CurrentTestCaseStats&) override {
    llvm_hpvm_cleanupTensorRt();
  }
};

} // namespace

REGISTER_LISTENER("hpvm_rt cleanup", 1, RuntimeCleanup);
