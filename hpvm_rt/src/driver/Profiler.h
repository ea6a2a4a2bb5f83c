// Profiler.h - collects the executor's per-op records (core/Launch.h OpRecord)
// over a run and turns them into the --profile summary (per fused node and
// per op), the --trace Chrome trace-event file and the --log-calls list.
#ifndef HPVM_RT_DRIVER_PROFILER_H
#define HPVM_RT_DRIVER_PROFILER_H

#include "core/Launch.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace hpvm::rt {

/// One recorded tensor-op call with the launch it belongs to.
struct ProfiledCall {
  int launch = 0;         ///< 0-based launch (batch) index of the run.
  double launchStart = 0; ///< Seconds from the run start to the launch.
  OpRecord record;
};

/// Accumulates op records launch by launch and reports them.
class Profiler {
public:
  /// Adds the records of one launch that started \p launchStart seconds
  /// after the run began.
  void addLaunch(double launchStart, const std::vector<OpRecord>& records);

  /// Number of launches added.
  int launches() const { return launches_; }
  /// Every call, in order.
  const std::vector<ProfiledCall>& calls() const { return calls_; }

  /// --profile: {"launches", "total_ms", "fused_nodes": [...], "ops": [...]}
  /// with calls, total and mean time, FLOPs, GFLOP/s and knob per entry,
  /// each list sorted by total time, largest first.
  nlohmann::json profileJson() const;
  /// The per-op part of profileJson() as an aligned text table.
  std::string profileTable() const;
  /// --trace: Chrome trace-event JSON (loadable in Perfetto), one complete
  /// ("X") event per op call with node id, op, shapes and knob.
  nlohmann::json traceJson() const;
  /// --log-calls: one record per op call.
  nlohmann::json callLogJson() const;

private:
  std::vector<ProfiledCall> calls_;
  int launches_ = 0;
};

/// "perf_fp16 151" - a knob as configuration files write it.
std::string knobText(int knobId);

} // namespace hpvm::rt

#endif // HPVM_RT_DRIVER_PROFILER_H
