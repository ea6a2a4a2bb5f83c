// Model.h - the tuner's quality-of-service metrics and its predictive model:
// a configuration's QoS loss predicted from the single-node output deltas
// (HPVM's "P1": outputs add up) or from the single-node losses ("P2": losses
// add up), and its time from the measured single-node time deltas.
#ifndef HPVM_RT_TUNER_MODEL_H
#define HPVM_RT_TUNER_MODEL_H

#include "tuner/Search.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hpvm::rt::tuner {

/// How quality of service is measured. Every metric is a "higher is better"
/// value in [0, 100]; the loss of a run is the exact run's value minus the
/// run's (in points), or that difference in percent of the exact value when
/// \c relative is set.
struct QosSpec {
  enum class Metric {
    Top1,   ///< Top-1 accuracy against the labels, % (HPVM's default).
    Top5,   ///< Top-5 accuracy against the labels, %.
    Psnr,   ///< 100 - % of images whose output PSNR against the exact
            ///< output is below psnrThreshold dB (HPVM's PSNR violation).
    RelErr, ///< 100 - mean relative L2 error against the exact output, %.
    MIoU,   ///< Mean intersection over union, %, of the per-pixel argmax
            ///< of output 0 (a segmentation map of mapChannels classes and
            ///< mapPixels pixels, at the start of each row) against the
            ///< exact output's, over the whole set: each class's pixels in
            ///< both / in either, averaged over the classes present.
  };
  Metric metric = Metric::Top1;
  bool relative = false;
  double psnrThreshold = 30;
  int64_t mapChannels = 0, mapPixels = 0; ///< For MIoU.
};

/// The metric's name as the command line spells it ("top1").
const char* metricName(QosSpec::Metric m);

/// The QoS value of \p n output rows of \p classes scores against the
/// labels (top-1/top-5) or the exact outputs (PSNR, relative error).
double qosValue(const QosSpec& spec, const float* out, const float* exact,
                const int32_t* labels, int64_t n, int64_t classes);

/// The QoS loss of a run whose value is \p qos, against the exact run's
/// \p exactQos.
double qosLoss(const QosSpec& spec, double exactQos, double qos);

/// Predicts loss and speedup of a genome from single-node measurements.
class Predictor {
public:
  enum class Kind { P1, P2 };

  /// \p choices: the choice count of each gene. \p exactOutputs: n x
  /// classes outputs of the exact program on the profiling images.
  /// \p exactMs: the exact program's time (any unit; speedups are ratios).
  Predictor(QosSpec spec, std::vector<int> choices,
            std::vector<float> exactOutputs, std::vector<int32_t> labels,
            int64_t classes, double exactMs);

  /// Records the single-node measurement of choice \p c of gene \p g: its
  /// outputs on the profiling images (may be empty under P2), its QoS loss
  /// and its time change against the exact program (negative: faster).
  void setChoice(size_t g, int c, const std::vector<float>& outputs,
                 double loss, double deltaMs);

  /// The predicted point of \p genome under \p kind (no calibration).
  Point predict(const Genome& genome, Kind kind) const;

  double exactQos() const { return exactQos_; }
  double exactMs() const { return exactMs_; }
  /// Single-node loss and time change of choice \p c of gene \p g.
  double loss(size_t g, int c) const { return loss_[g][size_t(c)]; }
  double deltaMs(size_t g, int c) const { return deltaMs_[g][size_t(c)]; }

private:
  QosSpec spec_;
  std::vector<float> exact_;
  std::vector<int32_t> labels_;
  int64_t classes_, rows_;
  double exactMs_, exactQos_;
  std::vector<std::vector<std::vector<float>>> delta_; ///< [g][c] outputs.
  std::vector<std::vector<double>> loss_, deltaMs_;
  mutable std::vector<float> scratch_;
};

/// A calibration of predictions against measured points: measured loss
/// ~ a + b * predicted loss, measured time ratio (1 / speedup) ~ c + d *
/// predicted time ratio, with the quality of the raw predictions.
struct Calibration {
  LineFit loss, time;
  size_t samples = 0;
  double lossSpearman = 0, speedupSpearman = 0;
  double lossMae = 0, speedupMae = 0;       ///< Raw predictions.
  double lossMaeCal = 0, speedupMaeCal = 0; ///< After calibration.
  Point apply(const Point& predicted) const;
};

/// Fits a calibration of \p predicted against \p measured (same order).
Calibration calibrate(const std::vector<Point>& predicted,
                      const std::vector<Point>& measured);

} // namespace hpvm::rt::tuner

#endif // HPVM_RT_TUNER_MODEL_H
