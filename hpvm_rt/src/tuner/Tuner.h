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

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hpvm::rt::tuner {

/// The tune-search command line.
struct TuneOptions {
  std::vector<double> qosLoss{1.0};
  std::string metric = "top1";
  bool relative = false;
  double psnrThreshold = 30;
  int64_t budget = 2000;
  uint64_t seed = 1;
  bool empirical = false;
  std::string qosModel = "p1";
  std::optional<int64_t> profileImages;
  std::optional<int64_t> timingImages;
  int calibrate = 12;
  int validate = 24;
  int repeats = 3;
  bool prune = true;
  bool timeEveryOffset = false;
  /// Per-(node, knob) costs from this bench-knobs JSON record instead of
  /// timing them ("" = time them).
  std::string costsFile;
  /// Only knobs HPVM's own CPU runtime parses on `cpu` lines (fp32, perf,
  /// samp), so that the file runs unchanged under HPVM.
  bool hpvmCompatible = false;
  std::string output = "tuner_confs.txt";
  std::string jsonFile;   ///< Default: output with .json.
  std::string plotStem;   ///< Default: output stem + "_front".
  std::string plotScript; ///< Default: $TORCH2HPVM_PLOT_SCRIPT.
  bool noPlot = false;
  std::string stateDir; ///< Default: output stem + ".state".
  bool fresh = false, resume = false;
  // Shared with the run modes.
  std::optional<int64_t> batchSize;
  std::optional<int> threads;
  std::string modelDir;
  bool quiet = false, help = false;
};

/// Parses the words after "tune-search". Throws UserError.
TuneOptions parseTuneOptions(int argc, const char* const* argv);

/// The comma-separated items of \p value ("" gives one empty item).
std::vector<std::string_view> splitCommas(std::string_view value);

/// The tune-search --help text.
std::string tuneHelp(const std::string& program);

/// Runs the tuning; returns the exit code (130 after an interruption, whose
/// measurements are kept for --resume). Throws UserError.
int tuneSearch(const TuneOptions& opts, ProgramRunner& runner);

/// The program's fused node \p node as a configuration line with one knob
/// per op: \p knobId on the first op, and on the other ops the exact knob
/// of the same precision (fp16 next to fp16 knobs, else fp32).
NodeConfig nodeLine(const FusedNodeInfo& node, int knobId);

/// The knob ids that may be chosen for \p node (its first op's knobs, in
/// table order; 11 first); with \p hpvmCpu only those HPVM's CPU runtime
/// parses (fp32, perf, samp).
std::vector<int> nodeKnobs(const FusedNodeInfo& node, bool hpvmCpu = false);

/// True if HPVM's own runtime parses \p line as a `cpu` line: its CPU
/// parser knows only the knob names fp32, perf and samp (reference 4.1).
bool hpvmParsesCpuLine(const NodeConfig& line);

} // namespace hpvm::rt::tuner

#endif // HPVM_RT_TUNER_TUNER_H
