// BenchKnobs.h - `<program> bench-knobs`: the time of every (HPVM fused
// node, applicable knob) of the program on this machine, as a table and a
// JSON record, and the reading of such a record back as tune-search's
// costs (--costs).
#ifndef HPVM_RT_TUNER_BENCHKNOBS_H
#define HPVM_RT_TUNER_BENCHKNOBS_H

#include "command/ProgramRunner.h"
#include "tuner/KnobTimer.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hpvm::rt::tuner {

// --- bench-knobs -------------------------------------------------------------

/// The bench-knobs command line.
struct BenchOptions {
  std::string jsonFile;             ///< --json FILE ("" = table only).
  std::optional<int64_t> batchSize; ///< --batch N.
  std::optional<int> threads;       ///< --threads T.
  std::optional<int64_t> images;    ///< --images N per probe.
  std::vector<int> knobs;           ///< --knobs ID,... (empty: all).
  bool everyOffset = false;         ///< --every-offset.
  int repeats = 1;                  ///< --repeats R.
  std::string modelDir;             ///< --model-dir DIR.
  bool quiet = false, help = false;
};

/// Parses the words after "bench-knobs". Throws UserError.
BenchOptions parseBenchOptions(int argc, const char* const* argv);

/// The bench-knobs --help text.
std::string benchHelp(const std::string& program);

/// Times every (fused node, knob) of the program on the tune set, prints
/// the table and writes the JSON record; returns the exit code.
int benchKnobs(const BenchOptions& opts, ProgramRunner& runner);

// --- A bench-knobs record as tune-search's costs -----------------------------

/// The costs a bench-knobs record holds for a program.
struct KnobCosts {
  std::string path;
  double exactBatchMs = 0;
  std::vector<double> exactNodeMs;            ///< Per fused node.
  std::vector<std::map<int, KnobCost>> knobs; ///< Per fused node, by id.

  /// The cost of knob \p knobId on fused node \p node (index); throws
  /// UserError naming the file when the record does not have it.
  const KnobCost& at(size_t node, int knobId) const;
};

/// Reads the bench-knobs record \p path and checks that it was made for
/// \p runner's program (model, batch size, threads) and its fused nodes
/// \p nodes; throws UserError naming the file and the mismatch.
KnobCosts readKnobCosts(const std::string& path,
                        const std::vector<FusedNodeInfo>& nodes,
                        const ProgramRunner& runner);

} // namespace hpvm::rt::tuner

#endif // HPVM_RT_TUNER_BENCHKNOBS_H