// Controller.h - hpvm_rt's runtime controller: the configuration loaded by
// llvm_hpvm_initializeRuntimeController, the running accuracy of
// llvm_hpvm_invokeRtControl and the per-iteration timing that
// llvm_hpvm_clearRuntimeController writes to profile_info.txt (HPVM's
// format, reference section 3.5).
#ifndef HPVM_RT_DRIVER_CONTROLLER_H
#define HPVM_RT_DRIVER_CONTROLLER_H

#include "config/Configuration.h"
#include "core/Launch.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hpvm::rt {

/// One iteration (batch) of profile_info.txt.
struct ProfileIteration {
  double computeSeconds = 0;
  /// (kernel name, seconds) per executed op; empty if ops were not recorded.
  std::vector<std::pair<std::string, double>> kernels;
};

/// The text of profile_info.txt for \p iterations (times in milliseconds,
/// energies 0: there are no power rails to read). Its "Total Time  : <ms>"
/// line is what hpvm-profiler reads.
std::string formatProfileInfo(const std::vector<ProfileIteration>& iterations);

/// The profile_info.txt kernel name of a recorded op: the runtime function
/// of the op with the knob when it is not fp32 ("tensorConvolution(perf)").
std::string profileKernelName(const OpRecord& record);

/// Prints the one-line notice that configuration lines marked `gpu` run on
/// the CPU with the same knobs, unless \p config has no gpu line, \p quiet
/// is set or \p noted is already true (it is set once printed).
void noteGpuLines(const Configuration& config, bool quiet, bool& noted);

/// Checks that \p config covers exactly \p numOps ops (when numOps > 0);
/// throws UserError "path:line:1: ..." at its header otherwise.
void checkOpCount(const Configuration& config, const std::string& path,
                  int64_t numOps);

/// The process-wide controller behind the llvm_hpvm_* entry points.
class RuntimeController {
public:
  static RuntimeController& get();

  /// Parses \p path, makes its first configuration the one of settings()
  /// with recording on, and binds settings() to the executor for every
  /// later launch (HPVM's protocol: the program launches by itself).
  /// Throws UserError.
  void initialize(const std::string& path);
  /// The settings of the launches of HPVM's protocol (initialize()).
  const LaunchSettings& settings() const { return settings_; }
  /// The file loaded by initialize(), or nullptr.
  const ConfigFile* file() const { return file_.get(); }

  /// Adds one iteration to the profile.
  void recordIteration(ProfileIteration iteration);
  /// Number of iterations recorded since the last writeProfile().
  size_t iterations() const { return iterations_.size(); }
  /// Writes profile_info.txt to \p path if at least one iteration was
  /// recorded (as HPVM), then forgets the iterations. Returns whether a
  /// file was written. Throws UserError if it cannot be written.
  bool writeProfile(const std::string& path);

  /// Forgets the recorded iterations (a failed run writes no profile).
  void discardIterations() { iterations_.clear(); }

  /// llvm_hpvm_invokeRtControl: accuracy of the batch [start, end) of
  /// \p labelsPath against \p result, running mean written to
  /// final_accuracy, iteration closed (with the op records of settings()).
  /// Throws UserError on bad labels.
  void invoke(void* result, const char* labelsPath, int start, int end);

private:
  std::unique_ptr<ConfigFile> file_;
  LaunchSettings settings_;
  std::vector<ProfileIteration> iterations_;
  std::chrono::steady_clock::time_point mark_ =
      std::chrono::steady_clock::now();
  std::string labelsPath_;
  std::vector<int32_t> labels_;
  double accuracySum_ = 0;
  int64_t batches_ = 0;
  bool notedGpu_ = false;
};

} // namespace hpvm::rt

#endif // HPVM_RT_DRIVER_CONTROLLER_H
