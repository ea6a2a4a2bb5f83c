// TestMain.cpp - doctest's main() for every test executable in tests/.
//
// One addition to doctest's own: a run whose --test-case filter matches no
// test case fails. CTest runs each case by name, so a name CTest cannot
// carry whole (doctest_discover_tests cuts names at ';') would otherwise
// run nothing and pass.
#define DOCTEST_CONFIG_IMPLEMENT
#include "Listener.h"

#include <cstdio>
#include <cstring>

namespace {

int casesRun = -1; ///< Test cases that passed the filters (-1: no run).

struct CountCases : hpvm::test::Listener {
  using Listener::Listener;
  void test_run_end(const doctest::TestRunStats& stats) override {
    casesRun = static_cast<int>(stats.numTestCasesPassingFilters);
  }
};

} // namespace

REGISTER_LISTENER("count cases", 0, CountCases);

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  int status = context.run();
  if (context.shouldExit() || status != 0)
    return status;
  bool filtered = false;
  for (int i = 1; i < argc; ++i)
    filtered = filtered || std::strncmp(argv[i], "--test-case=", 12) == 0 ||
               std::strncmp(argv[i], "-tc=", 4) == 0;
  if (filtered && casesRun == 0) {
    std::fprintf(stderr,
                 "%s: no test case matches the --test-case filter "
                 "(a name cut short by CTest?)\n",
                 argv[0]);
    return 1;
  }
  return status;
}
