// Model.cpp - QoS metrics, the additive predictors and calibration.
#include "tuner/Model.h"

#include "core/Top1.h"

#include <algorithm>
#include <cmath>

namespace hpvm::rt::tuner {

const char* metricName(QosSpec::Metric m) {
  switch (m) {
  case QosSpec::Metric::Top1:
    return "top1";
  case QosSpec::Metric::Top5:
    return "top5";
  case QosSpec::Metric::Psnr:
    return "psnr";
  case QosSpec::Metric::RelErr:
    return "relerr";
  case QosSpec::Metric::MIoU:
    return "miou";
  }
  return "?";
}

namespace {

/// The class of pixel \p p of a map of \p C classes x \p P pixels: the
/// first of the largest scores (HPVM's first-maximum rule).
int64_t pixelClass(const float* map, int64_t C, int64_t P, int64_t p) {
  int64_t best = 0;
  for (int64_t c = 1; c < C; ++c)
    if (map[c * P + p] > map[best * P + p])
      best = c;
  return best;
}

/// MIoU over \p n rows (QosSpec::Metric::MIoU).
double meanIoU(const QosSpec& spec, const float* out, const float* exact,
               int64_t n, int64_t rowElems) {
  const int64_t C = spec.mapChannels, P = spec.mapPixels;
  std::vector<int64_t> both(size_t(C), 0), either(size_t(C), 0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < P; ++p) {
      const int64_t a = pixelClass(out + i * rowElems, C, P, p);
      const int64_t b = pixelClass(exact + i * rowElems, C, P, p);
      if (a == b) {
        ++both[size_t(a)];
        ++either[size_t(a)];
      } else {
        ++either[size_t(a)];
        ++either[size_t(b)];
      }
    }
  double sum = 0;
  int64_t present = 0;
  for (int64_t c = 0; c < C; ++c)
    if (either[size_t(c)] > 0) {
      sum += double(both[size_t(c)]) / double(either[size_t(c)]);
      ++present;
    }
  return present > 0 ? 100.0 * sum / double(present) : 100.0;
}

} // namespace

double qosValue(const QosSpec& spec, const float* out, const float* exact,
                const int32_t* labels, int64_t n, int64_t classes) {
  if (n <= 0)
    return 0;
  if (spec.metric == QosSpec::Metric::MIoU)
    return meanIoU(spec, out, exact, n, classes);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = out + i * classes;
    const float* ref = exact + i * classes;
    switch (spec.metric) {
    case QosSpec::Metric::Top1:
      sum += top1(row, classes) == labels[i];
      break;
    case QosSpec::Metric::Top5: {
      // The label is in the top 5 if fewer than 5 scores beat it (a tie
      // with an earlier index beats it, as in HPVM's first-maximum rule).
      const int32_t label = labels[i];
      int64_t better = 0;
      for (int64_t c = 0; c < classes; ++c)
        better += row[c] > row[label] || (row[c] == row[label] && c < label);
      sum += better < 5;
      break;
    }
    case QosSpec::Metric::MIoU: // meanIoU(), above
      break;
    case QosSpec::Metric::Psnr:
    case QosSpec::Metric::RelErr: {
      double err = 0, ref2 = 0, peak = 0;
      for (int64_t c = 0; c < classes; ++c) {
        double d = double(row[c]) - double(ref[c]);
        err += d * d;
        ref2 += double(ref[c]) * double(ref[c]);
        peak = std::max(peak, std::fabs(double(ref[c])));
      }
      if (spec.metric == QosSpec::Metric::RelErr) {
        sum += ref2 > 0 ? 1 - std::min(1.0, std::sqrt(err / ref2))
                        : (err > 0 ? 0 : 1);
      } else {
        double mse = err / double(classes);
        double psnr = mse > 0 && peak > 0
                          ? 20 * std::log10(peak / std::sqrt(mse))
                          : (mse > 0 ? 0 : INFINITY);
        sum += psnr >= spec.psnrThreshold;
      }
      break;
    }
    }
  }
  return 100.0 * sum / double(n);
}

double qosLoss(const QosSpec& spec, double exactQos, double qos) {
  double loss = exactQos - qos;
  if (spec.relative)
    loss = exactQos > 0 ? 100.0 * loss / exactQos : 0;
  return loss;
}

Predictor::Predictor(QosSpec spec, std::vector<int> choices,
                     std::vector<float> exactOutputs,
                     std::vector<int32_t> labels, int64_t classes,
                     double exactMs)
    : spec_(spec), exact_(std::move(exactOutputs)), labels_(std::move(labels)),
      classes_(classes), rows_(classes ? int64_t(exact_.size()) / classes : 0),
      exactMs_(exactMs) {
  exactQos_ = qosValue(spec_, exact_.data(), exact_.data(), labels_.data(),
                       rows_, classes_);
  for (int c : choices) {
    delta_.emplace_back(size_t(c));
    loss_.emplace_back(size_t(c), 0.0);
    deltaMs_.emplace_back(size_t(c), 0.0);
  }
}

void Predictor::setChoice(size_t g, int c, const std::vector<float>& outputs,
                          double loss, double deltaMs) {
  loss_[g][size_t(c)] = loss;
  deltaMs_[g][size_t(c)] = deltaMs;
  std::vector<float>& d = delta_[g][size_t(c)];
  d.clear();
  if (outputs.size() == exact_.size()) {
    d.resize(outputs.size());
    for (size_t i = 0; i < d.size(); ++i)
      d[i] = outputs[i] - exact_[i];
  }
}

Point Predictor::predict(const Genome& genome, Kind kind) const {
  Point p;
  double ms = exactMs_;
  for (size_t g = 0; g < genome.size(); ++g)
    ms += deltaMs_[g][genome[g]];
  // A prediction below a tenth of the exact time is not credible.
  p.speedup = exactMs_ / std::max(ms, exactMs_ * 0.1);
  if (kind == Kind::P2) {
    for (size_t g = 0; g < genome.size(); ++g)
      p.loss += loss_[g][genome[g]];
    return p;
  }
  scratch_ = exact_;
  for (size_t g = 0; g < genome.size(); ++g) {
    if (genome[g] == 0)
      continue;
    const std::vector<float>& d = delta_[g][genome[g]];
    if (d.empty()) { // no outputs recorded: fall back to the loss sum
      p.loss += loss_[g][genome[g]];
      continue;
    }
    for (size_t i = 0; i < d.size(); ++i)
      scratch_[i] += d[i];
  }
  p.loss += qosLoss(spec_, exactQos_,
                    qosValue(spec_, scratch_.data(), exact_.data(),
                             labels_.data(), rows_, classes_));
  return p;
}

Point Calibration::apply(const Point& predicted) const {
  Point p;
  p.loss = loss(predicted.loss);
  double ratio = time(1.0 / predicted.speedup);
  p.speedup = 1.0 / std::max(ratio, 0.05);
  return p;
}

Calibration calibrate(const std::vector<Point>& predicted,
                      const std::vector<Point>& measured) {
  Calibration cal;
  size_t n = std::min(predicted.size(), measured.size());
  cal.samples = n;
  if (n == 0)
    return cal;
  std::vector<double> pl, ml, pr, mr, ps, ms;
  for (size_t i = 0; i < n; ++i) {
    pl.push_back(predicted[i].loss);
    ml.push_back(measured[i].loss);
    pr.push_back(1.0 / predicted[i].speedup);
    mr.push_back(1.0 / measured[i].speedup);
    ps.push_back(predicted[i].speedup);
    ms.push_back(measured[i].speedup);
  }
  cal.lossSpearman = spearman(pl, ml);
  cal.speedupSpearman = spearman(ps, ms);
  if (n >= 3) {
    cal.loss = fitLine(pl, ml);
    cal.time = fitLine(pr, mr);
    // A line that inverts or flattens the order is noise, not a correction:
    // keep the identity slope and correct the offset only.
    for (auto [fit, x, y] :
         {std::tuple{&cal.loss, &pl, &ml}, std::tuple{&cal.time, &pr, &mr}})
      if (fit->b < 0.2) {
        Moments m = moments(*x, *y);
        fit->b = 1;
        fit->a = m.my - m.mx;
      }
  }
  for (size_t i = 0; i < n; ++i) {
    Point c = cal.apply(predicted[i]);
    cal.lossMae += std::fabs(pl[i] - ml[i]);
    cal.speedupMae += std::fabs(ps[i] - ms[i]);
    cal.lossMaeCal += std::fabs(c.loss - ml[i]);
    cal.speedupMaeCal += std::fabs(c.speedup - ms[i]);
  }
  for (double* v :
       {&cal.lossMae, &cal.speedupMae, &cal.lossMaeCal, &cal.speedupMaeCal})
    *v /= double(n);
  return cal;
}

} // namespace hpvm::rt::tuner
