// TuneOptions.h - the tune-search command line: its settings with their
// defaults, the option table that parses them and the --help text.
#ifndef HPVM_RT_TUNER_TUNEOPTIONS_H
#define HPVM_RT_TUNER_TUNEOPTIONS_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hpvm::rt::tuner {

/// The Python interpreter that runs the plotting script unless
/// --plot-python names another: the system's, which has matplotlib
/// (python3-matplotlib, scripts/install-deps.sh).
inline constexpr const char* kDefaultPlotPython = "/usr/bin/python3";

/// The default --time-limit, seconds: a whole run with the default options
/// takes under five minutes on two cores.
inline constexpr double kDefaultTimeLimit = 240;

/// The largest timing batch by default (--timing-batch): a model exported
/// with one batch for the whole set is timed on sub-batches of this size.
inline constexpr int64_t kDefaultTimingBatch = 64;

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
  /// Images per batch of the timing passes (default: the batch size, at
  /// most kDefaultTimingBatch).
  std::optional<int64_t> timingBatch;
  /// Seconds after which the search stops and the front found so far is
  /// validated and written (0: no limit).
  double timeLimit = kDefaultTimeLimit;
  /// Fused nodes (ordinals, as the summary prints them) kept at the exact
  /// knob.
  std::vector<int> keepExact;
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
  /// The interpreter that runs plotScript (--plot-python).
  std::string plotPython = kDefaultPlotPython;
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

/// Seconds of a --time-limit value: "90", "90s", "5m", "1h", "1m30s"; 0 or
/// "none" for no limit. Throws UserError naming \p option.
double parseDuration(std::string_view option, std::string_view value);

/// The comma-separated items of \p value ("" gives one empty item).
std::vector<std::string_view> splitCommas(std::string_view value);

/// The tune-search --help text.
std::string tuneHelp(const std::string& program);

} // namespace hpvm::rt::tuner

#endif // HPVM_RT_TUNER_TUNEOPTIONS_H
