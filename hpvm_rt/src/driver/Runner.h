// Runner.h - runs the generated program over a data set in batches: the
// set's files and labels, the settings its launches run under, the
// batches' timing, accuracy and outputs, and where the program's weights
// and data sets are.
#ifndef HPVM_RT_DRIVER_RUNNER_H
#define HPVM_RT_DRIVER_RUNNER_H

#include "core/Int8Calibration.h"
#include "core/Launch.h"
#include "driver/Options.h"
#include "driver/Profiler.h"
#include "hpvm_rt/RunModel.h"
#include "tensor.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hpvm::rt {

/// The directory holding weights/ and the datasets, ending in '/': --model-dir
/// \p given (relative to the working directory) when set, else the baked-in
/// \p baked: absolute, or relative to the directory holding this program
/// (torch2hpvm's programs say "../": they are built as OUT/build/<model>);
/// "" is the working directory.
std::string resolveModelDir(const std::string& given, const char* baked);

/// Sets the kernels' thread count from --threads, else HPVM_NUM_THREADS.
/// Throws UserError for a bad HPVM_NUM_THREADS.
void applyThreads(const RunOptions& opts);

/// Where hpvm_rt's own parallel loops run on LLVM's libomp while oneDNN's
/// run on another runtime (a clang-built runtime; programs link the OpenMP
/// library hpvm_rt was compiled for, hpvm_rt/CMakeLists.txt), libomp's
/// threads would spin 200 ms after each loop on the cores oneDNN's team
/// needs next (EfficientNet-B0, int8, batch 1, 2 threads on 2 cores: 15
/// images/s, 36 without the spin). Puts the calling thread's libomp team to
/// sleep at once after each loop, unless KMP_BLOCKTIME is set; nothing
/// where libomp is not loaded. (The shared library does the same per run
/// and gives the caller's setting back: library/Library.cpp.)
void quietOwnOpenMPThreads();

/// The images and labels of one set (first `count` images).
struct Dataset {
  std::string name; ///< "test" or "tune".
  std::string inputPath, labelsPath;
  int64_t count = 0;
  /// False when the set has no labels file (a segmentation or detection
  /// model's): no accuracy then.
  bool labeled = false;
  std::vector<int32_t> labels;
  /// Images per batch when over 0 (the tuner's timing passes); else
  /// --batch-size or the model's default.
  int64_t batch = 0;
};

/// What one pass (or --repeat passes) over a dataset measured.
struct RunResult {
  int64_t images = 0, correct = 0;
  bool labeled = false; ///< The set had labels: correct counts.
  std::vector<double> batchSeconds;
  std::vector<float> outputs; ///< images x numClasses, if kept.
  double accuracy() const {
    return images ? 100.0 * static_cast<double>(correct) / images : 0.0;
  }
  double totalSeconds() const {
    double s = 0;
    for (double b : batchSeconds)
      s += b;
    return s;
  }
};

/// Values per image of graph output \p o (its dims' product).
int64_t outputValues(const hpvm_rt::OutputInfo& o);
/// The graph outputs of the program \p info describes (1 for programs of
/// older exporters, which list none).
int graphOutputs(const hpvm_rt::ModelInfo& info);
/// Values per image of its output \p k (numClasses when it has one).
int64_t outputValues(const hpvm_rt::ModelInfo& info, int k);
/// Output 0's classes, height and width when it is a segmentation map
/// (C x H x W per image, C > 1 classes, more than one pixel), else zeros.
std::array<int64_t, 3> segmentationMap(const hpvm_rt::ModelInfo& info);

/// Called with each batch's output tensor (host data valid) and its size.
using BatchSink = std::function<void(Tensor* out, int64_t images)>;

/// Runs the program's batches over data sets (RunModel's modes and the
/// tuner's passes).
class Runner {
public:
  Runner(const RunOptions& opts, const hpvm_rt::ModelInfo& info,
         const hpvm_rt::RunBatchFn& runBatch, std::string modelDir)
      : opts_(opts), info_(info), runBatch_(runBatch),
        modelDir_(std::move(modelDir)) {}

  const std::string& modelDir() const { return modelDir_; }

  /// The settings the program's launches run under (configuration,
  /// calibration, recording, input observer) and what they report back;
  /// run() binds them to the executor for its batches (core/Launch.h).
  LaunchSettings& settings() { return settings_; }
  const LaunchSettings& settings() const { return settings_; }

  /// Keeps \p cal and uses it (nullptr: none) for the INT8 knobs of the
  /// following runs.
  void useCalibration(std::unique_ptr<Int8Calibration> cal);
  /// The calibration in use (nullptr: none).
  const Int8Calibration* calibration() const { return calibration_.get(); }

  /// The model's graph outputs (1 for programs of older exporters).
  int numOutputs() const;
  /// Values per image of output \p k.
  int64_t outputElems(int k) const;

  /// Checks the files of \p set and reads its labels (first \p limit),
  /// if it has a labels file.
  Dataset openDataset(const std::string& set,
                      std::optional<int64_t> limit) const;

  /// The batch size to use for \p ds.
  int64_t batchSize(const Dataset& ds) const;

  /// Runs \p ds \p repeat times in batches under settings(). Accuracy and
  /// kept outputs come from the first pass; every pass is timed.
  RunResult run(const Dataset& ds, int64_t repeat, bool keepOutputs,
                Profiler* profiler, const BatchSink& sink);

private:
  uint64_t imageElems() const;
  void checkOutput(const Tensor* out, int k, int64_t n, int64_t start) const;
  /// The batch's outputs \p outs as rows of numClasses values, one per
  /// image (output 0's own data when it is the only one, else assembled
  /// in \p rows).
  const float* batchRows(const std::vector<Tensor*>& outs, int64_t n,
                         std::vector<float>& rows) const;
  /// Images among \p n whose output 0's top-1 is their label.
  int64_t countCorrect(const float* rows, const Dataset& ds, int64_t start,
                       int64_t n) const;

  const RunOptions& opts_;
  const hpvm_rt::ModelInfo& info_;
  const hpvm_rt::RunBatchFn& runBatch_;
  std::string modelDir_;
  std::unique_ptr<Int8Calibration> calibration_;
  LaunchSettings settings_;
};

/// Keeps \p settings from holding a pointer to a configuration that is
/// about to be destroyed.
struct DeactivateOnExit {
  LaunchSettings& settings;
  ~DeactivateOnExit() { settings.setConfiguration(nullptr, ""); }
};

} // namespace hpvm::rt

#endif // HPVM_RT_DRIVER_RUNNER_H
