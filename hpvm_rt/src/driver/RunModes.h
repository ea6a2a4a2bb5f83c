// RunModes.h - the run modes beside a plain run: HPVM's tuner protocol
// (inspect programs) and --all-configs.
#ifndef HPVM_RT_DRIVER_RUNMODES_H
#define HPVM_RT_DRIVER_RUNMODES_H

#include "config/Configuration.h"
#include "driver/Runner.h"

namespace hpvm::rt {

/// HPVM's tuner protocol (reference section 8.5): serve test/tune/stop
/// requests from the FIFOs in the model directory.
int runInspect(Runner& runner, const RunOptions& opts,
               const hpvm_rt::ModelInfo& info);

/// --all-configs: the exact program, then every configuration of \p file.
int runAllConfigs(Runner& runner, const RunOptions& opts,
                  const hpvm_rt::ModelInfo& info, const ConfigFile& file,
                  const Dataset& ds);

} // namespace hpvm::rt

#endif // HPVM_RT_DRIVER_RUNMODES_H
