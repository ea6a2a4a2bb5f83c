// ProgramRunner.h - how a command runs the generated program over a data
// set (tune-search, bench-knobs, calibrate): the interface the commands
// call and the driver implements.
#ifndef HPVM_RT_COMMAND_PROGRAMRUNNER_H
#define HPVM_RT_COMMAND_PROGRAMRUNNER_H

#include "config/Configuration.h"
#include "core/Launch.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace hpvm::rt {

/// One pass of the program over the first images of a set.
struct PassRequest {
  const Configuration* config = nullptr; ///< nullptr: exact FP32.
  std::string set = "tune";
  int64_t images = 0;
  bool keepOutputs = true;
  bool nodeTimes = false; ///< Per-fused-node times of every batch.
  bool warmup = false;    ///< Run one untimed batch first.
  /// Images per batch; 0: the program's batch size (batchSize()).
  int64_t batch = 0;
  /// Called with the inputs of the pass's conv, group_conv and mul nodes
  /// (core/Launch.h InputObserver; calibration measurements), or none.
  InputObserver observer = nullptr;
  void* observerContext = nullptr;
};

/// What a pass measured.
struct PassResult {
  std::vector<float> outputs;       ///< images x classes, if kept.
  std::vector<double> batchSeconds; ///< Wall time of each batch.
  /// [batch][fused node] seconds, if requested.
  std::vector<std::vector<double>> nodeSeconds;
  /// The op records (shapes, FLOPs) of the last batch, with nodeTimes.
  std::vector<OpRecord> lastOps;
};

/// How the tuner runs the program (implemented by the driver).
class ProgramRunner {
public:
  virtual ~ProgramRunner() = default;
  virtual PassResult pass(const PassRequest& request) = 0;
  /// The fused nodes of the program's last launch (empty before the first
  /// pass).
  virtual const std::vector<FusedNodeInfo>& programNodes() const = 0;
  /// Labels of the whole set (empty when it has none).
  virtual const std::vector<int32_t>& labels(const std::string& set) = 0;
  /// The model's graph outputs (each image's row holds them in order).
  virtual int outputs() const { return 1; }
  /// Output 0's classes, height and width when it is a segmentation map
  /// (C x H x W per image, C > 1 classes, more than one pixel), else
  /// zeros.
  virtual std::array<int64_t, 3> map() const { return {0, 0, 0}; }
  virtual int64_t setSize(const std::string& set) const = 0;
  virtual int64_t classes() const = 0;
  virtual int64_t batchSize() const = 0;
  virtual int threads() const = 0;
  virtual std::string modelName() const = 0;
  /// What measurements depend on besides the settings (the program, its
  /// weights, the data sets), as text that changes when they do; empty
  /// when the runner cannot tell.
  virtual std::string fingerprint() { return {}; }
};

} // namespace hpvm::rt

#endif // HPVM_RT_COMMAND_PROGRAMRUNNER_H
