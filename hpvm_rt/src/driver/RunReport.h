// RunReport.h - what the run modes print and write about a run: time
// statistics, the configuration's description, JSON records.
#ifndef HPVM_RT_DRIVER_RUNREPORT_H
#define HPVM_RT_DRIVER_RUNREPORT_H

#include "config/Configuration.h"
#include "driver/Runner.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace hpvm::rt {

/// Per-batch time statistics in milliseconds.
struct TimeStats {
  double mean = 0, median = 0, min = 0, max = 0, std = 0, total = 0;
};

/// The statistics of batch times \p seconds.
TimeStats timeStats(std::vector<double> seconds);
/// \p s as a JSON object.
nlohmann::json timeJson(const TimeStats& s);
/// "configuration 'name' of path", or exact FP32 without \p config.
std::string configDescription(const Configuration* config,
                              const std::string& path);
/// \p config (of \p file) as a JSON object; null without one.
nlohmann::json configJson(const Configuration* config, const ConfigFile* file);
/// Writes \p j to \p path atomically.
void writeJson(const std::string& path, const nlohmann::json& j);
/// Prints --print-time's summary of \p r (\p images in batches of
/// \p batch).
void printTimes(const RunResult& r, int64_t batch, int64_t images);

} // namespace hpvm::rt

#endif // HPVM_RT_DRIVER_RUNREPORT_H
