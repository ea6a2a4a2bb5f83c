// BakedConfig.h - the configuration file baked into a program at export
// (HPVM's config_file): where it is, and the rule for one that does not
// exist (yet): the program runs exact FP32 and says so, and whatever needs
// a configuration (a selector, a QoS-loss budget, every configuration) is
// refused. The program's command line and its shared library both follow
// it.
#ifndef HPVM_RT_DRIVER_BAKEDCONFIG_H
#define HPVM_RT_DRIVER_BAKEDCONFIG_H

#include "hpvm_rt/RunModel.h"

#include <string>

namespace hpvm::rt {

/// The configuration file baked in at export, resolved against
/// \p modelDir (ending in '/') when relative; "" if the model has none.
std::string bakedConfigPath(const hpvm_rt::ModelInfo& info,
                            const std::string& modelDir);

/// True if the baked-in configuration file \p path exists. If it does not
/// and \p needs names what needs one ("--config", "qos_loss"; nullptr:
/// nothing), throws UserError "<needs> needs a configuration file: <path>,
/// baked in at export, does not exist<remedy>".
bool bakedConfigExists(const std::string& path, const char* needs,
                       const std::string& remedy = "");

/// How a run without the baked-in file \p path is described: "<path>, the
/// configuration file baked in at export, does not exist".
std::string missingBakedConfig(const std::string& path);

} // namespace hpvm::rt

#endif // HPVM_RT_DRIVER_BAKEDCONFIG_H
