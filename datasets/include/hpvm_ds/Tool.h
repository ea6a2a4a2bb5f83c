// Tool.h - the torch2hpvm-dataset command line (convert and info), as a
// library function so that tests can run it in-process.
#ifndef HPVM_DS_TOOL_H
#define HPVM_DS_TOOL_H

#include <iosfwd>
#include <string>
#include <vector>

namespace hpvm::ds {

/// Runs `torch2hpvm-dataset ARGS...` (\p args excludes the program name),
/// printing results to \p out and errors to \p err. Returns the exit code:
/// 0 on success, 1 on any error (bad option, bad file, failed validation).
int runTool(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err);

/// Parses and checks \p args as runTool does (the options, and the values
/// that need no file: --shape, --scale, --split), reading and writing no
/// file. Returns the exit code where runTool would stop before opening a
/// file (--help, --version: 0; a bad command line, printed to \p err as
/// runTool prints it: 1), or -1 where it would go on to run the command.
int checkToolArgs(const std::vector<std::string>& args, std::ostream& out,
                  std::ostream& err);

} // namespace hpvm::ds

#endif // HPVM_DS_TOOL_H
