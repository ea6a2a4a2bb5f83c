// ToolchainTest.cpp - running external commands: argv without a shell, logs,
// echo, and the exact failure reports (exit code 2).
#include "toolchain/Toolchain.h"
#include "CodegenTestGraphs.h"
#include "codegen/Sanitizer.h"
#include "support/Diagnostics.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <sstream>
#include <thread>

using namespace hpvm::fe;
using namespace hpvm::fe::testing;

TEST_CASE("Toolchain: executables are found on PATH") {
  CHECK(findExecutable("sh") != "");
  CHECK(findExecutable("/bin/sh") == "/bin/sh");
  CHECK(findExecutable("no-such-tool-torch2hpvm") == "");
  CHECK(findExecutable("/nonexistent/tool") == "");
}

TEST_CASE("Toolchain: commands are quoted for echo") {
  CHECK(formatCommand({"cmake", "-S", "/a b/c", "-DX=it's"}) ==
        "cmake -S '/a b/c' '-DX=it'\\''s'");
}

TEST_CASE("Toolchain: a command's output goes to the log, echo on request") {
  std::string dir = scratchDir("toolchain-ok");
  std::ostringstream echo;
  // The argument is passed as one word: no shell splits or expands it.
  runLogged({"/bin/echo", "a  $HOME;b"}, dir, dir + "/build.log", &echo);
  runLogged({"/bin/pwd"}, dir, dir + "/build.log", nullptr);
  CHECK(echo.str() == "/bin/echo 'a  $HOME;b'\n");
  CHECK(readFile(dir + "/build.log") == "$ /bin/echo 'a  $HOME;b'\n"
                                        "a  $HOME;b\n"
                                        "$ /bin/pwd\n" +
                                            dir + "\n");
}

TEST_CASE("Toolchain: a failing command reports status and the log's tail") {
  std::string dir = scratchDir("toolchain-fail");
  std::string log = dir + "/build.log";
  std::vector<std::string> argv = {"/bin/sh", "-c",
                                   "i=1; while [ $i -le 25 ]; do echo line $i; "
                                   "i=$((i+1)); done; exit 3"};
  std::string expected = "build command failed (exit status 3):\n  " +
                         formatCommand(argv) + "\nlast lines of " + log + ":\n";
  for (int i = 6; i <= 25; ++i)
    expected += "line " + std::to_string(i) + "\n";
  try {
    runLogged(argv, "", log, nullptr);
    FAIL("no error");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()) == expected);
    CHECK(e.exitCode() == ExitToolchainError);
  }
}

TEST_CASE("Toolchain: a command that cannot start is a toolchain error") {
  std::string dir = scratchDir("toolchain-missing");
  try {
    runLogged({"/nonexistent/cc", "-v"}, "", dir + "/build.log", nullptr);
    FAIL("no error");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()) ==
          "cannot run '/nonexistent/cc': No such file or directory\n"
          "  command: /nonexistent/cc -v");
    CHECK(e.exitCode() == ExitToolchainError);
  }
}

TEST_CASE("Toolchain: --toolchain hpvm without hpvm-clang fails clearly") {
  std::string dir = scratchDir("toolchain-hpvm");
  BuildRequest req;
  req.toolchain = Toolchain::Hpvm;
  req.projectDir = dir;
  req.binaryName = "m";
  req.configFile = "tuner_confs.txt";
  // PATH holds only an empty directory, so hpvm-clang cannot be found.
  std::string oldPath = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", dir.c_str(), 1);
  std::string message;
  int code = 0;
  try {
    buildProgram(req);
  } catch (const UserError& e) {
    message = e.what();
    code = e.exitCode();
  }
  ::setenv("PATH", oldPath.c_str(), 1);
  CHECK(message == "--toolchain hpvm needs HPVM's hpvm-clang on PATH; it was "
                   "not found (use the default --toolchain clang)");
  CHECK(code == ExitToolchainError);
}

TEST_CASE("Toolchain: a missing --cxx is a toolchain error") {
  std::string dir = scratchDir("toolchain-cxx");
  BuildRequest req;
  req.projectDir = dir;
  req.binaryName = "m";
  req.cxx = "/nonexistent/clang++";
  try {
    buildProgram(req);
    FAIL("no error");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()) ==
          "--cxx '/nonexistent/clang++' is not an executable");
    CHECK(e.exitCode() == ExitToolchainError);
  }
}

TEST_CASE("Toolchain: the default build runs cmake with explicit arguments") {
  std::string dir = scratchDir("toolchain-fake");
  std::string project = dir + "/proj";
  std::filesystem::create_directories(project);
  // A stand-in for cmake: records its arguments, and "builds" the binary
  // plus some CMake litter on --build.
  std::string fake = dir + "/fake-cmake";
  writeFile(fake, "#!/bin/sh\n"
                  "echo \"$@\" >> \"" +
                      dir +
                      "/calls\"\n"
                      "if [ \"$1\" = --build ]; then\n"
                      "  touch \"$2/m\" \"$2/CMakeCache.txt\"\n"
                      "  mkdir -p \"$2/CMakeFiles\"\n"
                      "fi\n");
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  std::string fakeCxx = dir + "/fake-clang++";
  writeFile(fakeCxx, "#!/bin/sh\n");
  std::filesystem::permissions(fakeCxx, std::filesystem::perms::owner_all);
  BuildRequest req;
  req.projectDir = project;
  req.binaryName = "m";
  req.cxx = fakeCxx;
  req.cmake = fake;
  std::ostringstream echo;
  req.echo = &echo;
  buildProgram(req);
  std::string rtDir = hpvmRtPackageDir();
  CHECK(readFile(dir + "/calls") ==
        "-S " + project + " -B " + project + "/build -DCMAKE_CXX_COMPILER=" +
            fakeCxx + " -Dhpvm_rt_DIR=" + rtDir +
            " -DCMAKE_BUILD_TYPE=Release\n--build " + project +
            "/build --parallel " +
            std::to_string(std::max(1u, std::thread::hardware_concurrency())) +
            "\n");
  CHECK(echo.str().find(shellQuote(fake) + " -S " + shellQuote(project)) == 0);
  // Only the executable is left in build/.
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(project + "/build"))
    left.push_back(e.path().filename().string());
  CHECK(left == std::vector<std::string>{"m"});
  CHECK(readFile(project + "/build.log").find("$ " + shellQuote(fake)) == 0);
}
