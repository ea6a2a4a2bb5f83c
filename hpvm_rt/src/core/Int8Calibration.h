// Int8Calibration.h - an int8 calibration in memory: the measured input
// range of every fused node whose int8 knob needs one (driver/Calibration.h
// reads, measures and writes them; the executor applies them).
#ifndef HPVM_RT_CORE_INT8CALIBRATION_H
#define HPVM_RT_CORE_INT8CALIBRATION_H

#include "hpvm_rt/OpTable.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hpvm::rt {

/// The measured input range of one fused node whose first op is a conv,
/// group_conv or mul: what its int8 knob quantizes with.
struct Int8Range {
  int ordinal = 0; ///< FusedNodeInfo::ordinal.
  HpvmOp op = HpvmOp::Conv;
  float lo = 0.f, hi = 0.f;
  int line = 0; ///< Line in the calibration file.
};

/// An int8 calibration (driver/Calibration.h reads, measures and writes
/// them).
struct Int8Calibration {
  std::string path; ///< For messages.
  std::string model, method;
  int64_t images = 0;
  std::vector<Int8Range> nodes;
};

} // namespace hpvm::rt

#endif // HPVM_RT_CORE_INT8CALIBRATION_H
