// TunerRunner.h - the driver's ProgramRunner: the program's passes over
// the first images of a set under a configuration, for the commands that
// run it (tune-search, bench-knobs, calibrate).
#ifndef HPVM_RT_DRIVER_TUNERRUNNER_H
#define HPVM_RT_DRIVER_TUNERRUNNER_H

#include "command/ProgramRunner.h"
#include "driver/Runner.h"

#include <map>
#include <memory>
#include <string>
#include <utility>

namespace hpvm::rt {

/// The tuner's view of the program: passes over the first images of a set
/// under a configuration, with per-fused-node times on request.
class TunerRunner : public ProgramRunner {
public:
  TunerRunner(Runner& runner, const hpvm_rt::ModelInfo& info,
              const RunOptions& opts)
      : runner_(runner), info_(info), opts_(opts) {}

  PassResult pass(const PassRequest& req) override;
  const std::vector<FusedNodeInfo>& programNodes() const override {
    return runner_.settings().results().nodes;
  }
  const std::vector<int32_t>& labels(const std::string& set) override {
    return dataset(set).labels;
  }
  int outputs() const override { return runner_.numOutputs(); }
  std::array<int64_t, 3> map() const override;
  int64_t setSize(const std::string& set) const override {
    return set == "tune" ? info_.tuneCount : info_.testCount;
  }
  int64_t classes() const override { return info_.numClasses; }
  int64_t batchSize() const override {
    int64_t batch = opts_.batchSize ? *opts_.batchSize : info_.defaultBatch;
    int64_t count = std::max(info_.tuneCount, int64_t(1));
    return batch <= 0 || batch > count ? count : batch;
  }
  int threads() const override;
  std::string modelName() const override { return info_.name; }
  /// The program binary, every file of weights/ and the two data sets'
  /// files, each by path, size and time of last change.
  std::string fingerprint() override;

  /// The calibration of the passes (Runner::calibration()).
  const Int8Calibration* calibration() const { return runner_.calibration(); }
  /// Keeps \p cal and uses it for the following passes
  /// (Runner::useCalibration()).
  void useCalibration(std::unique_ptr<Int8Calibration> cal) {
    runner_.useCalibration(std::move(cal));
  }

private:
  /// The whole set, opened and checked once.
  Dataset& dataset(const std::string& set) {
    auto it = sets_.find(set);
    if (it == sets_.end())
      it = sets_.emplace(set, runner_.openDataset(set, std::nullopt)).first;
    return it->second;
  }

  Runner& runner_;
  const hpvm_rt::ModelInfo& info_;
  const RunOptions& opts_;
  std::map<std::string, Dataset> sets_;
};

} // namespace hpvm::rt

#endif // HPVM_RT_DRIVER_TUNERRUNNER_H
