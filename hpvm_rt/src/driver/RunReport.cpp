// RunReport.cpp - time statistics, configuration descriptions and the
// JSON records of the run modes (RunReport.h).
#include "driver/RunReport.h"

#include "base/FileUtil.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace hpvm::rt {

TimeStats timeStats(std::vector<double> seconds) {
  TimeStats s;
  if (seconds.empty())
    return s;
  std::sort(seconds.begin(), seconds.end());
  size_t n = seconds.size();
  for (double t : seconds)
    s.total += t;
  s.mean = s.total / n;
  s.median = n % 2 ? seconds[n / 2] : (seconds[n / 2 - 1] + seconds[n / 2]) / 2;
  s.min = seconds.front();
  s.max = seconds.back();
  double var = 0;
  for (double t : seconds)
    var += (t - s.mean) * (t - s.mean);
  s.std = std::sqrt(var / n);
  for (double* v : {&s.mean, &s.median, &s.min, &s.max, &s.std, &s.total})
    *v *= 1e3;
  return s;
}

nlohmann::json timeJson(const TimeStats& s) {
  return {{"mean", s.mean}, {"median", s.median}, {"min", s.min},
          {"max", s.max},   {"std", s.std},       {"total", s.total}};
}

std::string configDescription(const Configuration* config,
                              const std::string& path) {
  if (!config)
    return "exact FP32 (no configuration)";
  return fmt::format("configuration '{}' of {}", config->name, path);
}

nlohmann::json configJson(const Configuration* config, const ConfigFile* file) {
  if (!config)
    return nullptr;
  return {{"file", file->path},
          {"name", config->name},
          {"index", config - file->configs.data()},
          {"predicted_speedup", config->speedup},
          {"recorded_accuracy", config->accuracy},
          {"recorded_accuracy_loss", config->accuracyLoss}};
}

void writeJson(const std::string& path, const nlohmann::json& j) {
  writeFileAtomic(path, j.dump(2) + "\n");
}

void printTimes(const RunResult& r, int64_t batch, int64_t images) {
  TimeStats s = timeStats(r.batchSeconds);
  std::printf("Execution time summary (%zu batch%s of up to %lld images):\n",
              r.batchSeconds.size(), r.batchSeconds.size() == 1 ? "" : "es",
              static_cast<long long>(batch));
  std::printf(" mean (ms)   median (ms)    max (ms)     min (ms)     std "
              "(ms)\n");
  std::printf("%10.4f   %11.4f   %9.4f   %10.4f   %10.4f\n", s.mean, s.median,
              s.max, s.min, s.std);
  double total = r.totalSeconds();
  std::printf("Throughput: %.1f images/s\n",
              total > 0 ? static_cast<double>(images) / total : 0.0);
}

} // namespace hpvm::rt
