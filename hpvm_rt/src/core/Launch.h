// Launch.h - the settings a program's launches run under (the
// configuration, the int8 calibration, per-op recording, an input
// observer) and what they report back (the program's fused nodes, the op
// records), as one object its owner hands to the executor, and the one
// point where the executor is handed it.
#ifndef HPVM_RT_CORE_LAUNCH_H
#define HPVM_RT_CORE_LAUNCH_H

#include "config/Match.h"
#include "core/Int8Calibration.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hpvm::rt {

/// One executed tensor op of the last launch, for profiles and call logs.
struct OpRecord {
  int opId = 0;         ///< __hpvm__node_id of the op's leaf (0 if none).
  int fusedOrdinal = 0; ///< FusedNodeInfo::ordinal it belongs to.
  HpvmOp op;
  KnobSpec knob;
  std::vector<std::vector<int64_t>> inputShapes;
  std::vector<int64_t> outputShape;
  double flops = 0;
  double startSeconds = 0; ///< Since the launch started.
  double seconds = 0;      ///< Wall time; fused ops share their group's time,
                           ///< split in proportion to FLOPs.
};

/// Called with the fp32 NCHW input of every conv, group_conv and mul that
/// starts a fused node, before it runs (calibration measurements).
using InputObserver = void (*)(void* context, int ordinal, HpvmOp op,
                               const float* data, int64_t n);

/// What the launches run under one LaunchSettings reported; the executor
/// writes it at every launch.
struct LaunchResults {
  /// The fused nodes of the most recently launched program (empty before
  /// the first launch).
  std::vector<FusedNodeInfo> nodes;
  /// The op records of the most recent launch (when recording is on;
  /// emptied when it is turned off).
  std::vector<OpRecord> records;
  /// Number of outputs the last launch's plan placed as channels of a
  /// concatenation's buffer (zero-copy concatenation); for tests and
  /// diagnostics.
  int64_t channelViews = 0;
  /// Number of squeeze-and-excitation gates the last launch's plan folded
  /// into the convolution reading their product (Groups.cpp foldGates);
  /// for tests and diagnostics.
  int64_t gatesFolded = 0;
  /// Plan whose nodes are in `nodes` (they are copied when it changes).
  uint64_t nodesOfPlan = 0;
};

/// The executor's settings for a program's launches, owned by whoever runs
/// the program (the driver's Runner and RuntimeController, the shared
/// library's opened model, a test) and handed to the executor with
/// LaunchScope or bindLaunchSettings(). The executor reads them once per
/// launch (the schedule-relevant ones only when they changed) and writes
/// the launch's results into results().
class LaunchSettings {
public:
  LaunchSettings();

  /// Applies \p config (nullptr: exact FP32 everywhere), read from \p path
  /// (for messages), to the following launches. The executor checks it
  /// against the program at the next launch and throws UserError naming
  /// the line and the fused node on mismatch.
  void setConfiguration(const Configuration* config, std::string path);
  const Configuration* configuration() const { return config_; }
  const std::string& configurationPath() const { return configPath_; }

  /// Uses \p cal (nullptr: none) for the INT8 knobs of the following
  /// launches; a configuration using one on a node the calibration lacks is
  /// a UserError at the next launch.
  void setCalibration(const Int8Calibration* cal);
  /// The calibration in use (nullptr: none).
  const Int8Calibration* calibration() const { return calibration_; }

  /// Turns zero-copy concatenation on (the default) or off (every
  /// concatenation copies its parts); for tests comparing the two.
  void setChannelViews(bool on);
  bool channelViews() const { return channelViews_; }

  /// Turns the folding of squeeze-and-excitation gates into the
  /// convolution reading their product on (the default) or off (the
  /// multiply runs as an op); for tests comparing the two.
  void setGateFolding(bool on);
  bool gateFolding() const { return gateFolding_; }

  /// Turns per-op timing records on or off (off: no timing overhead, and
  /// results().records is emptied).
  void setRecording(bool on);
  bool recording() const { return recording_; }

  /// Installs (or, with nullptr, removes) the input observer.
  void setInputObserver(InputObserver observer, void* context);
  InputObserver inputObserver() const { return observer_; }
  void* observerContext() const { return observerContext_; }

  /// Where the next launches write their root outputs: root tensor output
  /// i (in the root's order) is computed straight into \p buffers[i] when
  /// it has \p elems[i] values and the buffer is 64-byte aligned (the
  /// kernels' stores may assume it); any other output, or one an op
  /// computes in place, gets a buffer of its own, as with \p count 0 (the
  /// default). The buffers must outlive the launches' outputs.
  void setOutputBuffers(float* const* buffers, const int64_t* elems,
                        size_t count);
  /// The buffer root output \p i of \p elems values is computed into, or
  /// nullptr (setOutputBuffers()).
  float* outputBuffer(size_t i, int64_t elems) const;

  /// Identifies the settings a plan's schedule depends on (configuration,
  /// calibration, channel views, gate folding): a new value, unique in the
  /// process, at construction and at every change of them.
  uint64_t scheduleStamp() const { return scheduleStamp_; }

  /// What the launches under these settings reported.
  LaunchResults& results() { return results_; }
  const LaunchResults& results() const { return results_; }

private:
  const Configuration* config_ = nullptr;
  std::string configPath_;
  const Int8Calibration* calibration_ = nullptr;
  bool channelViews_ = true;
  bool gateFolding_ = true;
  bool recording_ = false;
  InputObserver observer_ = nullptr;
  void* observerContext_ = nullptr;
  std::vector<std::pair<float*, int64_t>> outputBuffers_;
  uint64_t scheduleStamp_;
  LaunchResults results_;
};

/// THE binding point between a program's owner and the executor. Generated
/// HPVM-C code calls __hpvm__launch without any context, so the settings
/// its launches run under are bound here: every launch from now on reads
/// \p settings and writes its results into them (nullptr: a process-wide
/// default, exact FP32 without recording). Returns the settings bound
/// before. Launches do not nest; bind between launches only.
///
/// Who binds: the driver's Runner around the batches it runs
/// (driver/Runner.h), the runtime controller of HPVM's protocol from
/// llvm_hpvm_initializeRuntimeController on (driver/Controller.h), the
/// shared library around each hpvm_rt_run (library/Library.cpp), tests.
LaunchSettings* bindLaunchSettings(LaunchSettings* settings);

/// Binds \p settings for the scope's lifetime (bindLaunchSettings()), then
/// binds the settings bound before again.
class LaunchScope {
public:
  explicit LaunchScope(LaunchSettings& settings)
      : previous_(bindLaunchSettings(&settings)) {}
  ~LaunchScope() { bindLaunchSettings(previous_); }
  LaunchScope(const LaunchScope&) = delete;
  LaunchScope& operator=(const LaunchScope&) = delete;

private:
  LaunchSettings* previous_;
};

} // namespace hpvm::rt

#endif // HPVM_RT_CORE_LAUNCH_H
