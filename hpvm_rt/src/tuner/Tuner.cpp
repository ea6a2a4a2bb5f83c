// Tuner.cpp - tune-search's entry: runs a session with Ctrl-C caught, draws
// the plot, and maps a stale cache or an interruption to its message.
#include "tuner/Tuner.h"

#include "base/Errors.h"
#include "tuner/TuneInterrupt.h"
#include "tuner/TuneReport.h"
#include "tuner/TuneSession.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>

namespace hpvm::rt::tuner {

using json = nlohmann::json;

int tuneSearch(const TuneOptions& opts, ProgramRunner& runner) {
  InterruptGuard interrupts;
  TuneSession session(opts, runner);
  try {
    int rc = session.run();
    drawPlot(opts);
    return rc;
  } catch (const json::exception& e) {
    throw UserError(fmt::format("{}: a cached measurement is not what this "
                                "version records ({}); run again with --fresh",
                                opts.stateDir, e.what()));
  } catch (const Interrupted&) {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "\ninterrupted: every finished measurement is kept in %s; "
                 "run the same command with --resume to continue\n",
                 opts.stateDir.c_str());
    return 130;
  }
}

} // namespace hpvm::rt::tuner
