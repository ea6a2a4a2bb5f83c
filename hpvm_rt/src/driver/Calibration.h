// Calibration.h - int8 calibrations: measuring the input range of every
// conv, group_conv and mul node on exact fp32 runs of the tune set (min/max
// or a percentile of the magnitudes), and the text file that stores them
// next to a configuration, so that the two reproduce a run exactly.
//
// File format (one node a line; '#' starts a comment line):
//   torch2hpvm-int8-calibration 1
//   model lenet_fashion
//   method percentile 99.99
//   images 1000
//   node 1 conv -1 1
//   node 2 conv 0 4.25
// A node line is: ordinal, first op, the range lo hi (floats printed with
// enough digits to read back exactly). lo >= 0 means unsigned quantization.
#ifndef HPVM_RT_DRIVER_CALIBRATION_H
#define HPVM_RT_DRIVER_CALIBRATION_H

#include "command/ProgramRunner.h"
#include "core/Int8Calibration.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hpvm::rt {

/// Reads a calibration file; throws UserError naming the file, line and
/// what is wrong.
Int8Calibration readCalibration(const std::string& path);
/// Parses the text of a calibration file read from \p path (for messages).
Int8Calibration parseCalibrationText(std::string_view text,
                                     const std::string& path);

/// The file's text for \p cal.
std::string calibrationText(const Int8Calibration& cal);

/// How a calibration turns the observed values into a range.
struct CalibrationMethod {
  bool percentile = true; ///< Else min/max.
  double percent = 99.99; ///< Of the magnitudes, for the percentile method.
  std::string describe() const;
};

/// Parses "minmax", "percentile" or "percentile:P" (0 < P <= 100); throws
/// UserError.
CalibrationMethod parseCalibrationMethod(const std::string& text);

/// Measures a calibration over exact runs: install it as the passes' input
/// observer (observe() with the recorder as context), run the images once
/// (pass 1: ranges), call nextPass(), run the same images again (pass 2,
/// percentile only: histograms of the magnitudes), then take result().
class CalibrationRecorder {
public:
  explicit CalibrationRecorder(CalibrationMethod method);
  CalibrationRecorder(const CalibrationRecorder&) = delete;
  CalibrationRecorder& operator=(const CalibrationRecorder&) = delete;

  /// True if the method needs the second pass.
  bool needsSecondPass() const { return method_.percentile; }
  /// Adds \p n input values of fused node \p ordinal (what the executor's
  /// observer calls).
  void add(int ordinal, HpvmOp op, const float* data, int64_t n);
  void nextPass();
  Int8Calibration result(const std::string& model, int64_t images) const;
  /// The executor's InputObserver for the recorder \p self: add().
  static void observe(void* self, int ordinal, HpvmOp op, const float* data,
                      int64_t n);

private:
  static constexpr int kBins = 4096;
  struct Node {
    HpvmOp op = HpvmOp::Conv;
    float lo = INFINITY, hi = -INFINITY;
    std::vector<uint64_t> histogram; ///< Of |x| over [0, max |x|].
    uint64_t count = 0;
  };
  CalibrationMethod method_;
  int pass_ = 1;
  std::map<int, Node> nodes_;
};

/// Measures a calibration of \p runner's program over the first \p images
/// tune images (exact fp32 passes, one more for the percentile method).
Int8Calibration measureCalibration(ProgramRunner& runner,
                                   const CalibrationMethod& method,
                                   int64_t images, bool progress);

/// The `<program> calibrate` command line.
struct CalibrateOptions {
  std::string output = "int8_calibration.txt";
  CalibrationMethod method;
  std::optional<int64_t> images; ///< Default: min(1000, tune set).
  std::optional<int64_t> batchSize;
  std::optional<int> threads;
  std::string modelDir;
  bool quiet = false, help = false;
};
CalibrateOptions parseCalibrateOptions(int argc, const char* const* argv);
std::string calibrateHelp(const std::string& program);
/// Runs `calibrate`: measures and writes the file; returns the exit code.
int calibrateMode(const CalibrateOptions& opts, ProgramRunner& runner);

/// "<stem>.calib.txt" next to configuration file \p configPath.
std::string companionCalibration(const std::string& configPath);

} // namespace hpvm::rt

#endif // HPVM_RT_DRIVER_CALIBRATION_H
