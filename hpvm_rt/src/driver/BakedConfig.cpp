// BakedConfig.cpp - the configuration file baked in at export (BakedConfig.h).
#include "driver/BakedConfig.h"

#include "base/Errors.h"

#include <unistd.h>

namespace hpvm::rt {

std::string bakedConfigPath(const hpvm_rt::ModelInfo& info,
                            const std::string& modelDir) {
  const char* baked = info.defaultConfig;
  if (!baked || !*baked)
    return "";
  return baked[0] == '/' ? std::string(baked) : modelDir + baked;
}

bool bakedConfigExists(const std::string& path, const char* needs,
                       const std::string& remedy) {
  if (::access(path.c_str(), F_OK) == 0)
    return true;
  if (needs)
    throw UserError(std::string(needs) + " needs a configuration file: " +
                    path + ", baked in at export, does not exist" + remedy);
  return false;
}

std::string missingBakedConfig(const std::string& path) {
  return path + ", the configuration file baked in at export, does not exist";
}

} // namespace hpvm::rt
