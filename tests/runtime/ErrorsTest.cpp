// ErrorsTest.cpp - hpvm_rt's two kinds of error (base/Errors.h): a user error
// ends a program with its exact message and status 1; a failed internal
// assertion or a oneDNN failure is reported as an internal error with file
// and line and aborts; no other error channel is left in hpvm_rt/src.
#include "base/Errors.h"
#include "kernels/TensorImpl.h"
#include "tensor_runtime.h"

#include <doctest/doctest.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <new>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using hpvm::rt::InternalError;
using hpvm::rt::reportError;
using hpvm::rt::UserError;

/// How a child process ended and what it wrote to stderr.
struct Ended {
  bool exited = false;   ///< Exited (status in `status`)...
  bool signaled = false; ///< ...or was killed by signal `status`.
  int status = 0;
  std::string err;
};

/// Runs \p body in a forked child with stderr captured and stdout
/// discarded, as a program that catches nothing: an exception escaping
/// \p body goes to the terminate handler. The child exits 0 if \p body
/// returns.
Ended inChild(const std::function<void()>& body) {
  std::fflush(stdout);
  std::fflush(stderr);
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // The test runner's SIGABRT handler must not report the child's abort.
    std::signal(SIGABRT, SIG_DFL);
    ::dup2(fds[1], 2);
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::close(fds[0]);
    ::close(fds[1]);
    [&]() noexcept { body(); }();
    std::fflush(stderr);
    ::_exit(0);
  }
  ::close(fds[1]);
  Ended e;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0)
    e.err.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  e.exited = WIFEXITED(status);
  e.signaled = WIFSIGNALED(status);
  e.status = e.exited ? WEXITSTATUS(status) : WTERMSIG(status);
  return e;
}

/// reportError() of what \p thrower throws, with stderr captured
/// in-process (for errors that return instead of aborting).
std::pair<int, std::string> reported(const std::function<void()>& thrower) {
  std::fflush(stderr);
  char path[] = "/tmp/hpvm_rt_errors_XXXXXX";
  int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  int saved = ::dup(2);
  ::dup2(fd, 2);
  int code = -1;
  try {
    thrower();
  } catch (...) {
    code = reportError("tool", std::current_exception());
  }
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  ::close(fd);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  return {code, text.str()};
}

const std::string kNote = ": note: this is a bug in hpvm_rt, not a problem "
                          "with the model, its files or the command line; "
                          "please report it\n";

} // namespace

TEST_CASE("Errors: a user error names its file, line and column") {
  CHECK(std::string(UserError("conf.txt", 4, 7, "unknown knob").what()) ==
        "conf.txt:4:7: unknown knob");
  CHECK(std::string(UserError("cal.txt", 3, 0, "bad range").what()) ==
        "cal.txt:3: bad range");
  CHECK(std::string(UserError("--repeat needs a value").what()) ==
        "--repeat needs a value");
}

TEST_CASE("Errors: a user error is reported as the exact message and "
          "status 1") {
  auto [code, err] = reported([] { throw UserError("a.bin: 3 bytes"); });
  CHECK(code == 1);
  CHECK(err == "tool: error: a.bin: 3 bytes\n");
  auto [oomCode, oom] = reported([] { throw std::bad_alloc(); });
  CHECK(oomCode == 1);
  CHECK(oom == "tool: error: out of memory\n");
}

TEST_CASE("Errors: a user error in the C API ends the program with status "
          "1 and the exact message") {
  Ended e = inChild([] {
    llvm_hpvm_initTensorRt(0);
    create4DTensor(0, /*data_format=*/1, 1, 1, 1, 1);
  });
  CHECK(e.exited);
  CHECK(e.status == 1);
  CHECK(e.err == "hpvm_rt: error: create4DTensor: only the NCHW data format "
                 "(0) is supported, got 1\n");

  const std::string conf = "/tmp/hpvm_rt_errors_conf.txt";
  std::ofstream(conf) << "1.5\nconf1 1 1 1 0\n";
  e = inChild([&] { llvm_hpvm_initializeRuntimeController(conf.c_str()); });
  std::remove(conf.c_str());
  CHECK(e.exited);
  CHECK(e.status == 1);
  CHECK(e.err == "hpvm_rt: error: " + conf +
                     ":2:1: expected '+++++' to open a configuration, found "
                     "'conf1'\n");
}

TEST_CASE("Errors: an internal assertion carries its file and line and is "
          "no user error") {
  const int line = __LINE__ + 2;
  try {
    HPVM_ASSERT(1 + 1 == 3, "arithmetic");
    FAIL("HPVM_ASSERT did not throw");
  } catch (const UserError&) {
    FAIL("an internal assertion was thrown as a user error");
  } catch (const InternalError& e) {
    CHECK(std::string(e.file()) == __FILE__);
    CHECK(e.line() == line);
    CHECK(e.message() == "assertion '1 + 1 == 3' failed: arithmetic");
    CHECK(std::string(e.what()) ==
          "internal error at " + std::string(__FILE__) + ":" +
              std::to_string(line) + ": " + e.message());
  }
  HPVM_ASSERT(1 + 1 == 2, "never evaluated");
}

TEST_CASE("Errors: an internal assertion is reported as an internal error "
          "with file and line, and aborts") {
  const int line = __LINE__ + 3;
  Ended e = inChild([] {
    try {
      HPVM_UNREACHABLE("no kernel for this op");
    } catch (...) {
      std::exit(reportError("tool", std::current_exception()));
    }
  });
  CHECK(e.signaled);
  CHECK(e.status == SIGABRT);
  CHECK(e.err == "tool: internal error at " + std::string(__FILE__) + ":" +
                     std::to_string(line) + ": no kernel for this op\ntool" +
                     kNote);
  CHECK(e.err.find("tool: error:") == std::string::npos);

  // A kernel's precondition reached through the C API, uncaught: reported
  // by the runtime's terminate handler, in the kernel's file and line.
  e = inChild([] {
    llvm_hpvm_initTensorRt(0);
    hpvm::rt::kern::dims4(nullptr);
  });
  CHECK(e.signaled);
  CHECK(e.status == SIGABRT);
  CHECK(std::regex_match(e.err,
                         std::regex("hpvm_rt: internal error at "
                                    "[^\n]*/kernels/Storage\\.cpp:[0-9]+: "
                                    "assertion 't != nullptr' failed: null "
                                    "tensor\nhpvm_rt: note: [^\n]*\n")));
}

TEST_CASE("Errors: a oneDNN or standard library failure is an internal "
          "error, not the user's") {
  Ended e = inChild([] {
    try {
      throw dnnl::error(dnnl_invalid_arguments, "could not create a "
                                                "convolution");
    } catch (...) {
      std::exit(reportError("net", std::current_exception()));
    }
  });
  CHECK(e.signaled);
  CHECK(e.status == SIGABRT);
  CHECK(e.err == "net: internal error: oneDNN failed with status " +
                     std::to_string(static_cast<int>(dnnl_invalid_arguments)) +
                     ": could not create a convolution\nnet" + kNote);

  e = inChild([] {
    try {
      static_cast<void>(std::vector<int>().at(3));
    } catch (...) {
      std::exit(reportError("net", std::current_exception()));
    }
  });
  CHECK(e.signaled);
  CHECK(e.status == SIGABRT);
  CHECK(e.err.rfind("net: internal error: uncaught exception: ", 0) == 0);
  CHECK(e.err.find("net: error:") == std::string::npos);
}

TEST_CASE("Errors: hpvm_rt/src reports errors only through Errors.h") {
  // The channels Errors.h replaced, and standard exceptions thrown for
  // either kind of error (std::bad_alloc, out of memory, stays).
  const std::regex banned(
      "\\b(RuntimeError|RunError|ConfigError|HPVM_KCHECK|setThrowOnError)\\b"
      "|throw std::(?!bad_alloc\\b)\\w+");
  // Only the one reporter and the terminate handler end the process.
  const std::regex exits("std::(exit|abort)\\(");
  const std::filesystem::path src =
      std::filesystem::path(HPVM_SOURCE_DIR) / "hpvm_rt" / "src";
  REQUIRE(std::filesystem::is_directory(src));
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(src)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cpp" && ext != ".h")
      continue;
    ++files;
    const std::string rel =
        std::filesystem::relative(entry.path(), src).string();
    std::ifstream in(entry.path());
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      CAPTURE(rel);
      CAPTURE(number);
      CAPTURE(line);
      CHECK_FALSE(std::regex_search(line, banned));
      if (rel != "base/Errors.cpp" && rel != "driver/Controller.cpp" &&
          rel != "core/TensorApi.cpp")
        CHECK_FALSE(std::regex_search(line, exits));
    }
  }
  CHECK(files > 40);
}
