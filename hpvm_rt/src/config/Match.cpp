// Match.cpp - matches a configuration's lines to a program's fused nodes
// (by node id or ordinal) and checks their ops and knobs.
#include "config/Match.h"

#include "base/Errors.h"

#include <unordered_map>

namespace hpvm::rt {

namespace {

/// True for the pooling ops (Ops.def Fuse column Pool).
bool isPool(HpvmOp op) { return opInfo(op).facts->fuse == FuseRole::Pool; }

std::string opsText(const std::vector<HpvmOp>& ops) {
  std::string s;
  for (HpvmOp op : ops)
    s += (s.empty() ? "" : " ") + std::string(opInfo(op).confName);
  return s;
}

std::string namesText(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names)
    s += (s.empty() ? "" : ", ") + n;
  return s;
}

} // namespace

std::vector<const NodeConfig*>
matchConfiguration(const Configuration& conf, const std::string& path,
                   const std::vector<FusedNodeInfo>& nodes,
                   const std::vector<char>& configurable, bool byId) {
  auto where = [&](int line, int col) {
    return path + ":" + std::to_string(line) + ":" + std::to_string(col) + ": ";
  };
  std::unordered_map<int, const NodeConfig*> byKey;
  std::unordered_map<std::string, const NodeConfig*> byName;
  for (const NodeConfig& line : conf.nodes) {
    byKey[line.key] = &line;
    byName[line.name] = &line;
  }
  std::vector<const NodeConfig*> lines(nodes.size(), nullptr);
  std::vector<char> used(conf.nodes.size(), 0);
  for (size_t f = 0; f < nodes.size(); ++f) {
    if (!configurable[f])
      continue;
    const FusedNodeInfo& node = nodes[f];
    std::string desc = "fused node " + std::to_string(node.ordinal) + " (" +
                       (byId ? "node id " + std::to_string(node.firstOpId)
                             : "name '" + std::to_string(node.ordinal) + "'") +
                       ": " + opsText(node.ops) + "; node functions " +
                       namesText(node.leafNames) + ")";
    const NodeConfig* line = nullptr;
    if (byId) {
      auto it = byKey.find(node.firstOpId);
      line = it == byKey.end() ? nullptr : it->second;
    } else {
      auto it = byName.find(std::to_string(node.ordinal));
      line = it == byName.end() ? nullptr : it->second;
    }
    if (!line)
      throw UserError(where(conf.line, 1) + "configuration '" + conf.name +
                      "' has no line for " + desc);
    used[line - conf.nodes.data()] = 1;
    bool match = line->ops.size() == node.ops.size();
    for (size_t k = 0; match && k < node.ops.size(); ++k) {
      HpvmOp a = line->ops[k].op, b = node.ops[k];
      // HPVM's pooling singleton takes the pool kind from the program.
      match = a == b || (isPool(a) && isPool(b) && node.ops.size() == 1);
    }
    if (!match) {
      std::vector<HpvmOp> listed;
      for (const OpChoice& c : line->ops)
        listed.push_back(c.op);
      int col = line->ops.empty() ? 1 : line->ops[0].column;
      throw UserError(where(line->line, col) + "line '" + line->name +
                      "' of configuration '" + conf.name + "' lists '" +
                      opsText(listed) + "' but the program's " + desc +
                      " has '" + opsText(node.ops) + "'");
    }
    for (size_t k = 0; k < node.ops.size(); ++k) {
      const OpChoice& c = line->ops[k];
      const KnobInfo* knob = knobById(c.knobId);
      if (!knob || !knobAppliesTo(*knob, node.ops[k]))
        throw UserError(where(c.line, c.column) + "knob " +
                        std::to_string(c.knobId) + " cannot be applied to " +
                        opInfo(node.ops[k]).confName + " of " + desc);
    }
    lines[f] = line;
  }
  for (size_t i = 0; i < conf.nodes.size(); ++i) {
    if (used[i])
      continue;
    const NodeConfig& line = conf.nodes[i];
    std::string keys;
    if (nodes.empty())
      keys = "none";
    else if (byId)
      keys = "node ids " + std::to_string(nodes.front().firstOpId) + ".." +
             std::to_string(nodes.back().firstOpId);
    else
      keys = "names 1.." + std::to_string(nodes.size());
    throw UserError(where(line.line, 1) + "line '" + line.name + "' (key " +
                    std::to_string(line.key) + ") of configuration '" +
                    conf.name + "' matches no fused node of the program (" +
                    std::to_string(nodes.size()) + " fused nodes, " + keys +
                    ")");
  }
  return lines;
}

} // namespace hpvm::rt
