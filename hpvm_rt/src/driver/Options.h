// Options.h - the run modes' command line of every generated program
// (runModel): RunOptions, its option table's parser and its --help text.
#ifndef HPVM_RT_DRIVER_OPTIONS_H
#define HPVM_RT_DRIVER_OPTIONS_H

#include "command/OptionTable.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hpvm::rt {

/// Everything the command line can say. Unset optionals keep the model's
/// defaults (ModelInfo).
struct RunOptions {
  std::string set = "test";         ///< "test" or "tune".
  std::string configFile;           ///< -c FILE ("" = the baked-in one).
  std::string configSelector;       ///< --config NAME|INDEX.
  bool allConfigs = false;          ///< --all-configs.
  std::optional<int64_t> batchSize; ///< --batch-size N (0 = whole set).
  std::optional<int64_t> limit;     ///< --limit N (first N images).
  int64_t repeat = 1;               ///< --repeat N.
  bool printTime = false;           ///< --print-time.
  std::string outputNpy;            ///< --output FILE.npy.
  std::optional<int> threads;       ///< --threads N (0 = all cores).
  std::string modelDir;             ///< --model-dir DIR.
  std::string jsonFile;             ///< --json FILE.
  std::string profileFile;          ///< --profile FILE.json.
  std::string traceFile;            ///< --trace FILE.json.
  std::string callLogFile;          ///< --log-calls FILE.json.
  std::optional<double> qosLoss;    ///< --qos-loss L.
  bool quiet = false;               ///< --quiet.
  bool help = false;                ///< --help.
};

/// Parses argv[1..argc). Throws UserError with a message naming the option
/// and what is wrong (unknown option, missing or bad value, conflicting
/// options).
RunOptions parseRunOptions(int argc, const char* const* argv);

/// The --help text for \p program (argv[0]).
std::string runHelp(const std::string& program);

} // namespace hpvm::rt

#endif // HPVM_RT_DRIVER_OPTIONS_H
