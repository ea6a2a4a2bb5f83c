// Toolchain.h - building the generated program: locating tools, running
// them with explicit argument vectors (no shell), logging, and reporting
// failures with the command, its status and the log's last lines.
#ifndef TORCH2HPVM_FRONTEND_TOOLCHAIN_TOOLCHAIN_H
#define TORCH2HPVM_FRONTEND_TOOLCHAIN_TOOLCHAIN_H

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

namespace hpvm::fe {

/// Which compiler pipeline builds the program (--toolchain).
enum class Toolchain {
  Clang, ///< CMake + clang++ against hpvm_rt (default).
  Hpvm,  ///< HPVM's hpvm-clang -t tensor.
};

/// The absolute path of \p name found on $PATH, or "" (a name containing
/// '/' is returned as is when it is executable).
std::string findExecutable(const std::string& name);

/// The command line \p argv, each word shell-quoted (for -v and messages).
std::string formatCommand(const std::vector<std::string>& argv);

/// Runs \p argv (argv[0] an executable path) in directory \p cwd ("" for
/// the current one) with stdin from /dev/null and stdout and stderr
/// appended to \p logPath (after a "$ <command>" line), in this process's
/// environment plus \p extraEnv ("NAME=value" entries, which win). With
/// \p echo, the command is written there first. Returns its exit status, or
/// -N when signal N killed it. Throws UserError with exit code 2 when the
/// command cannot start.
int runCommand(const std::vector<std::string>& argv, const std::string& cwd,
               const std::string& logPath, std::ostream* echo,
               const std::vector<std::string>& extraEnv = {});

/// runCommand() for a build step: throws UserError with exit code 2 when
/// the command cannot start or does not exit with status 0; the message
/// names the command, the status and holds the log's last 20 lines.
void runLogged(const std::vector<std::string>& argv, const std::string& cwd,
               const std::string& logPath, std::ostream* echo);

/// The last \p n lines of file \p path ("" if unreadable).
std::string lastLines(const std::string& path, int n);

/// The hpvm_rt CMake package directory. An installed exporter (run from
/// <prefix>/bin) uses the package installed beside it, wherever the tree
/// was installed; otherwise the build tree's (HPVM_RT_BUILD_DIR), else the
/// configured install location (HPVM_RT_INSTALL_DIR). UserError (exit 2)
/// naming every place tried when none has the package.
std::string hpvmRtPackageDir();

/// When the hpvm_rt a program links was last built: the newest of its
/// archive and library objects (.a, .o) beside hpvmRtPackageDir(); the
/// oldest time when there is no package (nothing to compare with).
std::filesystem::file_time_type hpvmRtBuiltAt();

/// The default template directory: an installed exporter's own
/// (<prefix>/share/torch2hpvm/templates); otherwise the source tree's
/// (HPVM_TEMPLATE_DIR) when it exists, else the configured install
/// location (HPVM_INSTALLED_TEMPLATE_DIR).
std::string defaultTemplateDir();

/// The tuner's plotting script (plot_tuning.py): beside an installed tool
/// in <prefix>/share/torch2hpvm, else the source tree's scripts/.
std::string plotScriptPath();

/// How to build one generated project.
struct BuildRequest {
  Toolchain toolchain = Toolchain::Clang;
  std::string projectDir;       ///< Holds CMakeLists.txt and hpvm_c.cpp.
  std::string binaryName;       ///< Executable written to projectDir/build/.
  std::string configFile;       ///< For hpvm-clang --conf-file (relative name).
  std::string cxx;              ///< --cxx, or "" to find clang++ on PATH.
  std::string cmake;            ///< --cmake, or "" to find cmake on PATH.
  std::ostream* echo = nullptr; ///< -v: commands are echoed here.
};

/// Builds the project; output goes to projectDir/build.log. Afterwards
/// projectDir/build/ holds only the executable (the CMake tree would refer
/// to projectDir's temporary name). Throws UserError (exit 2) on failure.
void buildProgram(const BuildRequest& req);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_TOOLCHAIN_TOOLCHAIN_H
