// Match.h - a program's fused nodes as a configuration sees them, and the
// check that matches a configuration's lines to them (the executor applies
// the match at a launch; the exporter checks --config with it).
#ifndef HPVM_RT_CONFIG_MATCH_H
#define HPVM_RT_CONFIG_MATCH_H

#include "config/Configuration.h"

#include <string>
#include <vector>

namespace hpvm::rt {

/// One HPVM fused node of the launched program (HPVM's FuseHPVMTensorNodes
/// rules, reference section 7.1), in execution order.
struct FusedNodeInfo {
  int ordinal = 0;   ///< 1-based position (HPVM's string id).
  int firstOpId = 0; ///< Node id of the first op (integer key); 0 if
                     ///< the program sets no node ids.
  std::vector<HpvmOp> ops;
  std::vector<std::string> leafNames; ///< Node functions, for messages.
};

/// The line of configuration \p conf (read from \p path) that configures
/// each of \p nodes, found by node id (\p byId: the program sets node ids)
/// or else by ordinal, and checked: every node marked \p configurable has a
/// line listing its ops, each knob applies to its op, and every line
/// configures a node. nullptr for the nodes not configurable. Throws
/// UserError ("path:line:col: ..."). The executor applies it at a launch;
/// the exporter checks --config with it.
std::vector<const NodeConfig*>
matchConfiguration(const Configuration& conf, const std::string& path,
                   const std::vector<FusedNodeInfo>& nodes,
                   const std::vector<char>& configurable, bool byId);

} // namespace hpvm::rt

#endif // HPVM_RT_CONFIG_MATCH_H
