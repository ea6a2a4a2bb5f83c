// Configuration.h - an approximation configuration in memory: the knob of
// every op of every fused node (config/Config.h reads and writes them).
#ifndef HPVM_RT_CONFIG_CONFIGURATION_H
#define HPVM_RT_CONFIG_CONFIGURATION_H

#include "hpvm_rt/OpTable.h"

#include <string>
#include <vector>

namespace hpvm::rt {

/// One op of a configuration line with its knob.
struct OpChoice {
  HpvmOp op;
  int knobId = kKnobFp32;
  int line = 0, column = 0; ///< Of the op token, for messages.
};

/// One configuration line: a fused HPVM node.
struct NodeConfig {
  std::string name; ///< First token (string key, HPVM's ordinal).
  int key = 0;      ///< 1 + ops on earlier lines (integer key).
  bool gpu = true;  ///< Device token: gpu (run on CPU, same knobs) / cpu.
  std::vector<OpChoice> ops;
  int line = 0;
};

/// One +++++ ... ----- block.
struct Configuration {
  std::string name;
  double speedup = 1, energy = 1, accuracy = 0, accuracyLoss = 0;
  std::vector<NodeConfig> nodes;
  int line = 0; ///< Line of the header.
};

/// A whole configuration file.
struct ConfigFile {
  std::string path;
  double baselineTime = 0;
  std::vector<Configuration> configs;
};

} // namespace hpvm::rt

#endif // HPVM_RT_CONFIG_CONFIGURATION_H
