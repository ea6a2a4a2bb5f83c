// Tuner.h - `<program> tune-search`: approximation tuning inside the
// generated program. Profiles every (fused node, knob) on this machine,
// predicts configurations from the profiles (or measures each one with
// --empirical), searches the speedup/loss Pareto front with NSGA-II,
// calibrates and validates the front for real on the tune set, measures the
// survivors on the test set and writes HPVM's tuner_confs.txt, a JSON
// record and (through a Python script) a plot.
#ifndef HPVM_RT_TUNER_TUNER_H
#define HPVM_RT_TUNER_TUNER_H

#include "command/ProgramRunner.h"
#include "tuner/TuneOptions.h"

namespace hpvm::rt::tuner {

/// Runs the tuning; returns the exit code (130 after an interruption, whose
/// measurements are kept for --resume). Throws UserError.
int tuneSearch(const TuneOptions& opts, ProgramRunner& runner);

} // namespace hpvm::rt::tuner

#endif // HPVM_RT_TUNER_TUNER_H
