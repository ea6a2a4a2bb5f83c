// TuneSession.h - one tune-search run on this machine: its state, from the
// program's fused nodes and knobs to the validated front, and its steps.
#ifndef HPVM_RT_TUNER_TUNESESSION_H
#define HPVM_RT_TUNER_TUNESESSION_H

#include "command/ProgramRunner.h"
#include "command/Progress.h"
#include "tuner/BenchKnobs.h"
#include "tuner/KnobTimer.h"
#include "tuner/MeasureCache.h"
#include "tuner/Model.h"
#include "tuner/Search.h"
#include "tuner/TuneOptions.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hpvm::rt::tuner {

/// A measured configuration.
struct Measured {
  double qos = 0, loss = 0;
  double speedup = 1;
  std::vector<double> ratios; ///< Speedup of each timing round.
  double ms = 0;              ///< Median batch time, ms.
  bool noisy = false;
};

/// One tune-search run: discover the fused nodes, run the exact program,
/// profile every (node, knob), search, calibrate and validate, write the
/// files. Its steps are defined in TuneSession.cpp, its measurements in
/// TuneMeasure.cpp and its output files in TuneReport.cpp.
class TuneSession {
public:
  /// A session of \p runner's program with the settings \p opts (both
  /// outlive it). Throws UserError when the program has no tune set.
  TuneSession(const TuneOptions& opts, ProgramRunner& runner);

  /// Runs every step; returns the exit code. Throws UserError, and
  /// Interrupted after a signal.
  int run();

private:
  // --- Configurations ---
  Configuration configOf(const Genome& g, const std::string& name) const;
  std::string describe(const Genome& g) const;

  // --- Measurement ---
  /// A pass of \p g (nullptr: exact) over \p images of \p set in
  /// batches of \p batch images.
  PassResult runPass(const Genome* g, const std::string& set, int64_t images,
                     bool keepOutputs, bool nodeTimes, int64_t batch);
  /// A node-timed pass of \p g over \p images tune images in batches of
  /// \p batch (cached).
  nlohmann::json profilePass(const Genome& g, int64_t images,
                             const std::string& kind, bool keepOutputs,
                             std::vector<float>* outputs, int64_t batch);
  /// A timing probe of the KnobTimer: a node-timed pass (cached) of the
  /// exact program or of \p p's knob alone.
  NodeTimes timingProbe(ProbeKind kind, const KnobPair& p);
  /// Accuracy pass of \p g over \p images of \p set, then timing rounds
  /// interleaved with the exact program (cached).
  Measured measure(const Genome& g, const std::string& set, int64_t images,
                   int rounds);

  // --- Time limit ---
  /// True once the run has used \p share of --time-limit, or would with
  /// \p upcoming seconds more; the first time, records \p phase as where
  /// the limit stopped the run.
  bool pastLimit(double share, const char* phase, double upcoming = 0);
  /// Estimated seconds of measure() over \p images with \p rounds.
  double measureSeconds(int64_t images, int rounds) const;

  // --- Phases ---
  void discover();
  void referenceRuns();
  void profile();
  void chainCosts();
  std::vector<Evaluated> search();
  void calibrateAndValidate(const std::vector<Evaluated>& archive);
  /// Writes the configuration file, the JSON record and the summary
  /// (TuneReport.cpp); \p seconds is the whole run's.
  void writeOutputs(double seconds);
  /// Per node, its best profiled knob: time saved and loss (the
  /// sensitivity report, TuneSensitivity.cpp), as JSON and as summary
  /// lines.
  nlohmann::json sensitivityJson() const;
  void printSensitivity(const nlohmann::json& rows) const;

  const TuneOptions& opts_;
  ProgramRunner& runner_;
  QosSpec spec_;
  double maxLoss_ = 1;
  std::string qosModel_; ///< --qos-model, or p2 when p1 would not fit.
  int64_t batch_ = 1, tuneCount_ = 0, testCount_ = 0, profileImages_ = 0,
          timingImages_ = 0, probeImages_ = 0, classes_ = 0;
  /// Images per batch of the timing passes (--timing-batch).
  int64_t timingBatch_ = 1;
  /// The exact program's warm ms per image at timingBatch_ (discover()).
  double exactImageMs_ = 0;
  Clock::time_point start_ = Clock::now();
  /// The phase in which --time-limit stopped the run ("" if it did not).
  std::string stoppedIn_;
  std::vector<char> keepExact_; ///< Per node: --keep-exact named it.
  std::unique_ptr<MeasureCache> cache_;
  std::unique_ptr<KnobTimer> timer_;
  std::optional<KnobCosts> costs_; ///< --costs.
  std::string lastKey_;
  int64_t passes_ = 0;

  std::vector<FusedNodeInfo> nodes_;
  std::vector<std::vector<int>> knobs_; ///< Per node: choice -> knob id.
  std::vector<float> exactTune_, exactTest_, exactProfile_;
  double exactTuneQos_ = 0, exactTestQos_ = 0;
  double exactBatchMs_ = 0;
  std::vector<double> exactNodeMs_;

  struct PairInfo {
    size_t node;
    int choice;
    double deltaMs = 0, loss = 0;
    bool pruned = false, noisy = false, profiled = false;
    bool skipped = false; ///< Not timed or profiled: the time limit.
    bool chained = false; ///< deltaMs is its cost in a chain (chainCosts).
    /// Timed in a chain pass (chainCosts): kept wherever it runs, as the
    /// chain's savings on its neighbours may depend on it.
    bool inChain = false;
    std::string error{}; ///< Why the knob failed to run, if it did.
  };
  std::vector<PairInfo> pairs_;
  std::unique_ptr<Predictor> predictor_;
  std::vector<GeneSpace> genes_;
  std::vector<std::vector<uint16_t>> allowed_; ///< Per node: kept choices.
  std::vector<Genome> uniform_; ///< One knob on every node that kept it.

  // Results.
  struct Candidate {
    Genome genome;
    Point predicted, calibrated;
    std::optional<Measured> tune, test, calibration;
  };
  std::vector<Evaluated> archive_;
  std::vector<Candidate> candidates_;
  Calibration calibration_;
  double searchSeconds_ = 0, profileSeconds_ = 0, validateSeconds_ = 0;
  double exactTestMs_ = 0;
  std::vector<size_t> finalFront_;
};

} // namespace hpvm::rt::tuner

#endif // HPVM_RT_TUNER_TUNESESSION_H
