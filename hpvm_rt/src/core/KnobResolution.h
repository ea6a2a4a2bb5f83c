// KnobResolution.h - the knob of every op of a plan under a configuration
// and an int8 calibration.
#ifndef HPVM_RT_CORE_KNOBRESOLUTION_H
#define HPVM_RT_CORE_KNOBRESOLUTION_H

#include "core/Plan.h"

#include <string>
#include <vector>

namespace hpvm::rt {

/// Resolves the knob of every op of \p p from configuration \p conf (read
/// from \p configPath; nullptr: exact FP32), checking that it describes
/// the program's fused nodes, with the input ranges of INT8 knobs from
/// calibration \p cal; \p rootName names the program in notes.
std::vector<KnobSpec> resolveKnobs(const Plan& p, const Configuration* conf,
                                   const std::string& configPath,
                                   const Int8Calibration* cal,
                                   const std::string& rootName);

} // namespace hpvm::rt

#endif // HPVM_RT_CORE_KNOBRESOLUTION_H
