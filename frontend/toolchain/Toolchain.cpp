// Toolchain.cpp - locate clang++/cmake/hpvm-clang and run them, logged.
#include "toolchain/Toolchain.h"

#include "codegen/Sanitizer.h"
#include "support/Diagnostics.h"
#include "support/Interrupt.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <spawn.h>
#include <string_view>
#include <sys/wait.h>
#include <thread>
#include <time.h>
#include <unistd.h>

extern char** environ;

namespace hpvm::fe {

namespace fs = std::filesystem;

std::string findExecutable(const std::string& name) {
  if (name.find('/') != std::string::npos)
    return ::access(name.c_str(), X_OK) == 0 ? name : std::string();
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos)
      end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (dir.empty())
      dir = ".";
    std::string candidate = dir + "/" + name;
    std::error_code ec;
    if (::access(candidate.c_str(), X_OK) == 0 &&
        fs::is_regular_file(candidate, ec))
      return fs::absolute(candidate, ec).string();
    start = end + 1;
  }
  return "";
}

std::string formatCommand(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv)
    out += (out.empty() ? "" : " ") + shellQuote(a);
  return out;
}

std::string lastLines(const std::string& path, int n) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (static_cast<int>(lines.size()) > n)
      lines.pop_front();
  }
  std::string out;
  for (const std::string& l : lines)
    out += l + "\n";
  return out;
}

namespace {

/// Terminates a command's process group if this process dies without
/// saying the command is over: even SIGKILL, which nothing here can catch,
/// must not leave cmake and the compilers running. A forked watchdog (not
/// in the group) reads a pipe: 'G' and the group id when the command
/// starts, 'D' when it is over; end of file first means this process is
/// gone, and the group gets SIGTERM, then SIGKILL 2 s later.
class GroupWatchdog {
public:
  GroupWatchdog() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      return; // no watchdog: the rest still works
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(fds[1]);
      watch(fds[0]); // never returns
    }
    ::close(fds[0]);
    if (pid_ < 0) {
      ::close(fds[1]);
      return;
    }
    fd_ = fds[1];
  }
  GroupWatchdog(const GroupWatchdog&) = delete;
  GroupWatchdog& operator=(const GroupWatchdog&) = delete;
  ~GroupWatchdog() {
    if (fd_ >= 0) {
      send('D', 0);
      ::close(fd_);
    }
    if (pid_ > 0)
      while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
  }

  void started(pid_t group) { send('G', group); }

private:
  void send(char what, pid_t group) {
    char msg[1 + sizeof(pid_t)];
    msg[0] = what;
    std::memcpy(msg + 1, &group, sizeof group);
    if (fd_ >= 0 && ::write(fd_, msg, sizeof msg) != sizeof msg) {
      // The watchdog is gone: nothing more to do.
    }
  }

  /// The watchdog process (async-signal-safe calls only: this is a fork of
  /// a process that may have threads).
  [[noreturn]] static void watch(int fd) {
    struct sigaction ignore = {};
    ignore.sa_handler = SIG_IGN;
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
      ::sigaction(sig, &ignore, nullptr);
    // Hold no one's terminal or pipe open (it prints nothing).
    for (int std = 0; std <= 2; ++std)
      ::close(std);
    pid_t group = 0;
    char msg[1 + sizeof(pid_t)];
    for (;;) {
      size_t got = 0;
      while (got < sizeof msg) {
        ssize_t n = ::read(fd, msg + got, sizeof msg - got);
        if (n < 0 && errno == EINTR)
          continue;
        if (n <= 0)
          break;
        got += static_cast<size_t>(n);
      }
      if (got < sizeof msg)
        break; // end of file: the exporter is gone
      if (msg[0] == 'D')
        ::_exit(0);
      std::memcpy(&group, msg + 1, sizeof group);
    }
    if (group > 0 && ::kill(-group, SIGTERM) == 0) {
      struct timespec grace = {2, 0};
      while (::nanosleep(&grace, &grace) < 0 && errno == EINTR) {
      }
      ::kill(-group, SIGKILL);
    }
    ::_exit(0);
  }

  pid_t pid_ = -1;
  int fd_ = -1;
};

} // namespace

int runCommand(const std::vector<std::string>& argv, const std::string& cwd,
               const std::string& logPath, std::ostream* echo,
               const std::vector<std::string>& extraEnv) {
  HPVM_ASSERT(!argv.empty(), "empty command");
  std::string command = formatCommand(argv);
  if (echo)
    *echo << command << std::endl;
  int log =
      ::open(logPath.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0)
    throw UserError("cannot write build log '" + logPath +
                        "': " + std::strerror(errno),
                    ExitToolchainError);
  std::string header = "$ " + command + "\n";
  if (::write(log, header.data(), header.size()) < 0) {
    // The log is advisory; the command's own output still goes to it.
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, log, 1);
  posix_spawn_file_actions_adddup2(&actions, log, 2);
  if (!cwd.empty())
    posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> env;
  for (char** e = environ; *e; ++e) {
    std::string_view entry(*e);
    bool overridden = false;
    for (const std::string& x : extraEnv)
      overridden |=
          entry.substr(0, x.find('=') + 1) == x.substr(0, x.find('=') + 1);
    if (!overridden)
      env.push_back(*e);
  }
  for (const std::string& e : extraEnv)
    env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);
  // The command runs in a process group of its own, which an interrupt
  // terminates as a whole (make, compilers, linkers), and which the
  // watchdog terminates if this process is killed.
  throwIfInterrupted();
  GroupWatchdog watchdog;
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, argv[0].c_str(), &actions, &attr, args.data(),
                         env.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc == 0) {
    watchdog.started(pid);
    setRunningGroup(pid);
  }
  ::close(log);
  if (rc != 0)
    throw UserError("cannot run '" + argv[0] + "': " + std::strerror(rc) +
                        "\n  command: " + command,
                    ExitToolchainError);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      setRunningGroup(0);
      throw UserError("lost track of '" + argv[0] +
                          "': " + std::strerror(errno),
                      ExitToolchainError);
    }
  }
  setRunningGroup(0);
  throwIfInterrupted();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

void runLogged(const std::vector<std::string>& argv, const std::string& cwd,
               const std::string& logPath, std::ostream* echo) {
  int status = runCommand(argv, cwd, logPath, echo);
  if (status == 0)
    return;
  std::string how = status > 0 ? "exit status " + std::to_string(status)
                               : "signal " + std::to_string(-status);
  throw UserError("build command failed (" + how + "):\n  " +
                      formatCommand(argv) + "\nlast lines of " + logPath +
                      ":\n" + lastLines(logPath, 20),
                  ExitToolchainError);
}

namespace {

/// The installation prefix this executable runs from, when it runs from
/// one (<prefix>/bin/torch2hpvm-export next to <prefix>/share/torch2hpvm):
/// an installed tree works wherever it was installed or moved to. Empty
/// for a build-tree executable.
fs::path installPrefix() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    return {};
  const fs::path bin = exe.parent_path();
  if (bin.filename() != fs::path(HPVM_INSTALL_BINDIR).filename())
    return {};
  const fs::path prefix = bin.parent_path();
  if (!fs::is_directory(prefix / HPVM_INSTALL_DATADIR / "torch2hpvm", ec))
    return {};
  return prefix;
}

} // namespace

std::filesystem::file_time_type hpvmRtBuiltAt() {
  fs::file_time_type newest = fs::file_time_type::min();
  std::string dir;
  try {
    dir = hpvmRtPackageDir();
  } catch (const UserError&) {
    return newest;
  }
  // A build tree holds the archive and the objects under the package
  // directory; an installation two levels up (lib/cmake/hpvm_rt -> lib).
  const fs::path pkg(dir);
  std::error_code ec;
  std::vector<fs::path> roots;
  if (fs::exists(pkg / "libhpvm_rt.a", ec))
    roots = {pkg};
  else
    roots = {pkg.parent_path().parent_path() / "libhpvm_rt.a",
             pkg.parent_path().parent_path() / "hpvm_rt_objects"};
  auto consider = [&](const fs::path& p) {
    const std::string ext = p.extension().string();
    if (ext != ".a" && ext != ".o")
      return;
    std::error_code e;
    if (!fs::is_regular_file(p, e))
      return;
    const fs::file_time_type t = fs::last_write_time(p, e);
    if (!e && t > newest)
      newest = t;
  };
  for (const fs::path& root : roots) {
    if (!fs::is_directory(root, ec)) {
      consider(root);
      continue;
    }
    for (fs::recursive_directory_iterator
             it(root, fs::directory_options::skip_permission_denied, ec),
         end;
         !ec && it != end; it.increment(ec))
      consider(it->path());
  }
  return newest;
}

std::string hpvmRtPackageDir() {
  std::error_code ec;
  std::vector<std::string> candidates;
  if (const fs::path prefix = installPrefix(); !prefix.empty())
    candidates.push_back(
        (prefix / HPVM_INSTALL_LIBDIR / "cmake" / "hpvm_rt").string());
  candidates.push_back(HPVM_RT_BUILD_DIR);
  candidates.push_back(HPVM_RT_INSTALL_DIR);
  for (const std::string& dir : candidates)
    if (fs::exists(dir + "/hpvm_rtConfig.cmake", ec))
      return dir;
  std::string tried;
  for (const std::string& dir : candidates)
    tried += "\n  " + dir;
  throw UserError("the hpvm_rt CMake package (hpvm_rtConfig.cmake) is in "
                  "none of:" +
                      tried +
                      "\nbuild or install torch2hpvm first, or use "
                      "--no-build",
                  ExitToolchainError);
}

std::string defaultTemplateDir() {
  std::error_code ec;
  if (const fs::path prefix = installPrefix(); !prefix.empty())
    return (prefix / HPVM_INSTALL_DATADIR / "torch2hpvm" / "templates")
        .string();
  std::string source = HPVM_TEMPLATE_DIR;
  if (fs::is_directory(source, ec))
    return source;
  return HPVM_INSTALLED_TEMPLATE_DIR;
}

std::string plotScriptPath() {
  if (const fs::path prefix = installPrefix(); !prefix.empty())
    return (prefix / HPVM_INSTALL_DATADIR / "torch2hpvm" / "plot_tuning.py")
        .string();
  return HPVM_SCRIPTS_DIR "/plot_tuning.py";
}

void buildProgram(const BuildRequest& req) {
  std::string log = req.projectDir + "/build.log";
  std::string buildDir = req.projectDir + "/build";
  std::error_code ec;
  fs::create_directories(buildDir, ec);
  if (ec)
    throw UserError("cannot create '" + buildDir + "': " + ec.message(),
                    ExitToolchainError);

  if (req.toolchain == Toolchain::Hpvm) {
    std::string hpvmClang = findExecutable("hpvm-clang");
    if (hpvmClang.empty())
      throw UserError("--toolchain hpvm needs HPVM's hpvm-clang on PATH; it "
                      "was not found (use the default --toolchain clang)",
                      ExitToolchainError);
    runLogged({hpvmClang, "-O3", "hpvm_c.cpp", "build/" + req.binaryName, "-t",
               "tensor", "--conf-file", req.configFile},
              req.projectDir, log, req.echo);
  } else {
    std::string cxx = findExecutable(req.cxx.empty() ? "clang++" : req.cxx);
    if (cxx.empty())
      throw UserError(req.cxx.empty()
                          ? "clang++ was not found on PATH (install clang or "
                            "give --cxx PATH)"
                          : "--cxx '" + req.cxx + "' is not an executable",
                      ExitToolchainError);
    std::string cmake = findExecutable(req.cmake.empty() ? "cmake" : req.cmake);
    if (cmake.empty())
      throw UserError(req.cmake.empty()
                          ? "cmake was not found on PATH (install cmake or "
                            "give --cmake PATH)"
                          : "--cmake '" + req.cmake + "' is not an executable",
                      ExitToolchainError);
    std::string rtDir = hpvmRtPackageDir();
    runLogged({cmake, "-S", req.projectDir, "-B", buildDir,
               "-DCMAKE_CXX_COMPILER=" + cxx, "-Dhpvm_rt_DIR=" + rtDir,
               "-DCMAKE_BUILD_TYPE=Release"},
              "", log, req.echo);
    unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
    runLogged({cmake, "--build", buildDir, "--parallel", std::to_string(jobs)},
              "", log, req.echo);
  }

  std::string binary = buildDir + "/" + req.binaryName;
  if (!fs::is_regular_file(binary, ec))
    throw UserError("the build finished but did not produce '" + binary +
                        "'; see " + log,
                    ExitToolchainError);
  // Keep only the executable and its shared library (torch2hpvm.load()):
  // the CMake tree names the temporary directory it was configured in and
  // would break a later rebuild in place.
  const std::string library = "lib" + req.binaryName + ".so";
  for (const fs::directory_entry& e : fs::directory_iterator(buildDir, ec))
    if (e.path().filename() != req.binaryName && e.path().filename() != library)
      fs::remove_all(e.path(), ec);
}

} // namespace hpvm::fe
