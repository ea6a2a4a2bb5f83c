// Launch.h - what the driver tells the executor about the following
// launches (the configuration, the int8 calibration, per-op recording, an
// input observer) and what it reads back from the last one (the program's
// fused nodes, the op records).
#ifndef HPVM_RT_CORE_LAUNCH_H
#define HPVM_RT_CORE_LAUNCH_H

#include "config/Match.h"
#include "core/Int8Calibration.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hpvm::rt {

/// One executed tensor op of the last launch, for profiles and call logs.
struct OpRecord {
  int opId = 0;         ///< __hpvm__node_id of the op's leaf (0 if none).
  int fusedOrdinal = 0; ///< FusedNodeInfo::ordinal it belongs to.
  HpvmOp op;
  KnobSpec knob;
  std::vector<std::vector<int64_t>> inputShapes;
  std::vector<int64_t> outputShape;
  double flops = 0;
  double startSeconds = 0; ///< Since the launch started.
  double seconds = 0;      ///< Wall time; fused ops share their group's time,
                           ///< split in proportion to FLOPs.
};

/// Applies \p config (nullptr: exact FP32 everywhere) to the following
/// launches. The executor checks it against the program at the next launch
/// and throws UserError naming the line and the fused node on mismatch.
void setActiveConfiguration(const Configuration* config,
                            const std::string& path);
/// The fused nodes of the most recently launched program (empty before the
/// first launch).
const std::vector<FusedNodeInfo>& programNodes();
/// Turns per-op timing records on or off (off: no timing overhead).
void setRecording(bool on);
/// Records of the most recent launch (when recording is on).
const std::vector<OpRecord>& lastLaunchRecords();

/// Uses \p cal (nullptr: none) for the INT8 knobs of the following
/// launches; a configuration using one on a node the calibration lacks is
/// a UserError at the next launch.
void setActiveInt8Calibration(const Int8Calibration* cal);
/// The calibration in use (nullptr: none).
const Int8Calibration* activeInt8Calibration();

/// Called with the fp32 NCHW input of every conv, group_conv and mul that
/// starts a fused node, before it runs (calibration measurements).
using InputObserver = void (*)(void* context, int ordinal, HpvmOp op,
                               const float* data, int64_t n);
/// Installs (or, with nullptr, removes) the input observer.
void setInputObserver(InputObserver observer, void* context);

} // namespace hpvm::rt

#endif // HPVM_RT_CORE_LAUNCH_H
