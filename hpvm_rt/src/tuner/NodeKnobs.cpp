// NodeKnobs.cpp - the knob choices of one fused node: which knobs it may
// take, its configuration line for a knob, and which lines HPVM's own CPU
// runtime parses.
#include "tuner/NodeKnobs.h"

#include "config/Config.h"

#include <algorithm>
#include <set>
#include <string>

namespace hpvm::rt::tuner {

namespace {

bool hpvmCpuKnob(const std::string& name) {
  return name == "fp32" || name == "perf" || name == "samp";
}

} // namespace

bool hpvmParsesCpuLine(const NodeConfig& line) {
  return std::all_of(line.ops.begin(), line.ops.end(), [](const OpChoice& c) {
    return hpvmCpuKnob(knobConfName(c.knobId));
  });
}

std::vector<std::string>
hpvmUnparsedKnobs(const std::vector<NodeConfig>& lines) {
  std::set<std::string> names;
  for (const NodeConfig& line : lines)
    for (const OpChoice& c : line.ops)
      if (std::string name = knobConfName(c.knobId); !hpvmCpuKnob(name))
        names.insert(name);
  return {names.begin(), names.end()};
}

std::vector<int> nodeKnobs(const FusedNodeInfo& node, bool hpvmCpu) {
  std::vector<int> ids;
  for (const KnobInfo& k : allKnobs())
    if (knobAppliesTo(k, node.ops.front()) &&
        (!hpvmCpu || hpvmParsesCpuLine(nodeLine(node, k.id))))
      ids.push_back(k.id);
  // The exact knob first: choice 0 of every gene.
  auto exact = std::find(ids.begin(), ids.end(), kKnobFp32);
  if (exact != ids.end())
    std::rotate(ids.begin(), exact, exact + 1);
  return ids;
}

NodeConfig nodeLine(const FusedNodeInfo& node, int knobId) {
  NodeConfig line;
  line.name = std::to_string(node.ordinal);
  line.key = node.firstOpId ? node.firstOpId : node.ordinal;
  line.gpu = false;
  const KnobInfo* knob = knobById(knobId);
  int companion =
      knob && knob->spec.precision == Precision::FP16 ? kKnobFp16 : kKnobFp32;
  for (size_t k = 0; k < node.ops.size(); ++k) {
    OpChoice c;
    c.op = node.ops[k];
    c.knobId = k == 0 ? knobId : companion;
    line.ops.push_back(c);
  }
  return line;
}

} // namespace hpvm::rt::tuner
