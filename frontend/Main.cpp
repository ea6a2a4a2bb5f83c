// Main.cpp - torch2hpvm-export: parse the options, run the export, map the
// outcome to exit codes (0 ok, 1 user error, 2 toolchain failure, 3
// regeneration conflict, 4 --check: files would change).
#include "Options.h"
#include "Pipeline.h"
#include "support/Diagnostics.h"
#include "support/Interrupt.h"

#include <exception>
#include <iostream>
#include <unistd.h>

int main(int argc, char** argv) {
  using namespace hpvm::fe;
  installInterruptHandlers();
  // A refusal lists every problem at once (ErrorList: grouped by op type,
  // each group's first nodes; with -v every node): printed whole up to
  // these sizes, which only hostile names reach.
  size_t messageLimit = 64 * 1024;
  try {
    Options opts = parseOptions(std::vector<std::string>(argv, argv + argc));
    if (opts.verbose) {
      ErrorList::listEveryNode(true);
      messageLimit = 16 * 1024 * 1024;
    }
    if (!opts.exitText.empty()) {
      std::cout << opts.exitText;
      return ExitOk;
    }
    if (!opts.listOps.empty()) {
      listOps(opts.listOps, std::cout);
      return ExitOk;
    }
    PipelineStreams streams;
    if (::isatty(STDERR_FILENO))
      streams.progress = &std::cerr;
    streams.ir = &std::cout;
    streams.commands = &std::cerr;
    streams.report = &std::cerr;
    ExportResult result = runExport(opts, streams);
    std::cout << result.checkReport;
    return result.status;
  } catch (const UserError& e) {
    std::cout.flush();
    std::cerr << "torch2hpvm-export: error: "
              << printableMessage(e.what(), messageLimit) << "\n";
    return e.exitCode();
  } catch (const std::exception& e) {
    // File system and allocation failures: the user's environment, not a
    // bug in the model or in us.
    std::cout.flush();
    std::cerr << "torch2hpvm-export: error: "
              << printableMessage(e.what(), messageLimit) << "\n";
    return ExitUserError;
  }
}
