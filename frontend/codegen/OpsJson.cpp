// OpsJson.cpp - fusion groups, ops.json and the --list-ops operator table.
#include "codegen/OpsJson.h"

#include "ir/OpTable.h"
#include "support/Diagnostics.h"

#include "hpvm_rt/Fusion.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace hpvm::fe {

namespace {

/// An op's part in HPVM's fusion rule (hpvm_rt/Fusion.h; Ops.def Fuse
/// column).
hpvm::rt::FuseRole fuseRole(OpKind k) { return hpvmOpDesc(k).facts->fuse; }

/// "11-12, 121-138": sorted ids with consecutive runs collapsed.
std::string idRanges(std::vector<int> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1)
      ++j;
    if (!out.empty())
      out += ", ";
    out += j == i ? std::to_string(ids[i])
                  : std::to_string(ids[i]) + "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return out.empty() ? "-" : out;
}

/// The HPVM ops an ONNX row produces (its Produces column names them by
/// config name; a parenthesised note means none).
std::vector<const HpvmOpDesc*> producedOps(const OnnxOpDesc& row) {
  std::vector<const HpvmOpDesc*> ops;
  std::string produces = row.produces;
  if (produces.empty() || produces.front() == '(')
    return ops;
  std::string word;
  auto flush = [&] {
    const HpvmOpDesc* d = hpvm::rt::opByConfName(word);
    if (d && std::find(ops.begin(), ops.end(), d) == ops.end())
      ops.push_back(d);
    word.clear();
  };
  for (char c : produces) {
    if ((c >= 'a' && c <= 'z') || c == '_')
      word += c;
    else
      flush();
  }
  flush();
  return ops;
}

/// Baseline priority of a knob for the tuner, as in HPVM's approxknobs.json:
/// exact fp32 is the preferred baseline (1), exact fp16 the next (0); other
/// knobs are never baselines.
int baselinePriority(const KnobDesc& k) {
  if (k.spec.variant != hpvm::rt::Variant::Exact)
    return -1;
  if (k.spec.precision == hpvm::rt::Precision::FP32)
    return 1;
  if (k.spec.precision == hpvm::rt::Precision::FP16)
    return 0;
  return -1;
}

} // namespace

std::vector<FusedNode> fuseLikeHpvm(const ProgramLayout& layout) {
  size_t n = layout.nodes.size();
  // Users of each node's output, one entry per operand reference.
  std::vector<std::vector<int>> users(n);
  for (size_t i = 0; i < n; ++i)
    for (const OperandLayout& op : layout.nodes[i].operands)
      if (op.producerNode >= 0)
        users[op.producerNode].push_back(static_cast<int>(i));
  std::vector<bool> taken(n, false);
  // The node that may join node a's group, or -1.
  auto next = [&](int a) {
    if (users[a].size() != 1)
      return -1;
    int b = users[a].front();
    if (taken[b])
      return -1;
    for (const OperandLayout& op : layout.nodes[b].operands)
      if (op.producerNode >= 0 && op.producerNode != a)
        return -1;
    return b;
  };
  auto roleOf = [&](int i) { return fuseRole(layout.nodes[i].node->kind); };

  std::vector<FusedNode> groups;
  for (size_t i = 0; i < n; ++i) {
    if (taken[i])
      continue;
    FusedNode g;
    g.firstId = layout.nodes[i].id;
    g.opIndices.push_back(static_cast<int>(i));
    for (int op : hpvm::rt::hpvmFusedAfter(static_cast<int>(i), next, roleOf))
      g.opIndices.push_back(op);
    for (int op : g.opIndices)
      taken[op] = true;
    groups.push_back(std::move(g));
  }
  return groups;
}

nlohmann::ordered_json makeOpsJson(const ProgramLayout& layout,
                                   const OpsJsonPaths& paths) {
  nlohmann::ordered_json j;
  nlohmann::ordered_json cost = nlohmann::ordered_json::object();
  nlohmann::ordered_json opKnobs = nlohmann::ordered_json::object();
  std::set<int> usedKnobs;
  for (const NodeLayout& nl : layout.nodes) {
    cost[nl.jsonName] = opFlops(*nl.node);
    nlohmann::ordered_json ids = nlohmann::ordered_json::array();
    for (int id : knobsFor(nl.node->kind)) {
      ids.push_back(std::to_string(id));
      usedKnobs.insert(id);
    }
    opKnobs[nl.jsonName] = ids;
  }
  j["op_cost"] = cost;
  j["op_knobs"] = opKnobs;
  nlohmann::ordered_json knobs = nlohmann::ordered_json::object();
  for (const KnobDesc& k : knobTable()) {
    if (!usedKnobs.count(k.id))
      continue;
    nlohmann::ordered_json entry;
    entry["speedup"] = k.speedup;
    // hpvm_rt runs every knob on the CPU and accepts HPVM's gpu lines.
    entry["devices"] = {"cpu", "gpu"};
    if (int p = baselinePriority(k); p >= 0)
      entry["baseline_priority"] = p;
    knobs[std::to_string(k.id)] = entry;
  }
  j["knobs"] = knobs;
  if (!paths.configFile.empty())
    j["config_file"] = paths.configFile;
  if (!paths.confPath.empty()) {
    j["tune_labels_path"] = paths.tuneLabelsPath;
    j["conf_path"] = paths.confPath;
    j["fifo_path_r"] = paths.fifoPathR;
    j["fifo_path_w"] = paths.fifoPathW;
  }
  nlohmann::ordered_json fused = nlohmann::ordered_json::array();
  for (const FusedNode& g : fuseLikeHpvm(layout)) {
    nlohmann::ordered_json ops = nlohmann::ordered_json::array();
    for (int i : g.opIndices)
      ops.push_back(layout.nodes[i].jsonName);
    fused.push_back({{"id", g.firstId}, {"ops", ops}});
  }
  j["fused_nodes"] = fused;
  return j;
}

std::string opsTableRst() {
  std::ostringstream out;
  out << ".. list-table:: Supported ONNX operators\n"
         "   :header-rows: 1\n"
         "\n"
         "   * - ONNX op\n"
         "     - Min opset\n"
         "     - HPVM op(s)\n"
         "     - Intrinsic(s)\n"
         "     - Config name(s)\n"
         "     - Knobs\n";
  for (const OnnxOpDesc& row : onnxOps()) {
    std::vector<const HpvmOpDesc*> ops = producedOps(row);
    std::string intrinsics, confNames;
    std::vector<int> knobs;
    for (const HpvmOpDesc* d : ops) {
      // An hpvm_rt extension: real HPVM (--toolchain hpvm) refuses it.
      intrinsics += (intrinsics.empty() ? "" : ", ") + std::string("``") +
                    d->intrinsic + "``" +
                    (d->facts->hpvm ? "" : " (hpvm_rt only)");
      confNames += (confNames.empty() ? "" : ", ") + std::string("``") +
                   d->confName + "``";
      for (int id : knobsFor(opKindOf(d->op)))
        knobs.push_back(id);
    }
    out << "   * - ``" << row.onnxName << "``\n"
        << "     - " << row.minOpset << "\n"
        << "     - " << row.produces << "\n"
        << "     - " << (intrinsics.empty() ? "-" : intrinsics) << "\n"
        << "     - " << (confNames.empty() ? "-" : confNames) << "\n"
        << "     - " << idRanges(knobs) << "\n";
  }
  return out.str();
}

nlohmann::ordered_json opsTableJson() {
  nlohmann::ordered_json j;
  nlohmann::ordered_json onnx = nlohmann::ordered_json::array();
  for (const OnnxOpDesc& row : onnxOps()) {
    nlohmann::ordered_json hpvm = nlohmann::ordered_json::array();
    for (const HpvmOpDesc* d : producedOps(row))
      hpvm.push_back(d->confName);
    onnx.push_back({{"onnx_op", row.onnxName},
                    {"min_opset", row.minOpset},
                    {"produces", row.produces},
                    {"hpvm_ops", hpvm},
                    {"ignored_attributes", row.ignoredAttrs}});
  }
  nlohmann::ordered_json hpvm = nlohmann::ordered_json::array();
  for (const HpvmOpDesc& d : hpvmOps())
    hpvm.push_back({{"kind", d.kindName},
                    {"config_name", d.confName},
                    {"json_type", d.jsonType},
                    {"intrinsic", d.intrinsic},
                    {"in_hpvm", d.facts->hpvm},
                    {"runtime_call", d.rtCall},
                    {"tensor_args", d.facts->tensorArgs},
                    {"variadic", d.facts->variadic},
                    {"scalar_args", d.facts->scalarArgs},
                    {"scalar_names", d.facts->scalarNames},
                    {"knobs", knobsFor(opKindOf(d.op))}});
  nlohmann::ordered_json knobs = nlohmann::ordered_json::array();
  for (const KnobDesc& k : knobTable())
    knobs.push_back({{"id", k.id},
                     {"config_name", k.confName},
                     {"variant", hpvm::rt::variantName(k.spec.variant)},
                     {"precision", hpvm::rt::precisionName(k.spec.precision)},
                     {"speedup", k.speedup},
                     {"rate", k.spec.rate},
                     {"offset", k.spec.offset}});
  j["onnx_ops"] = onnx;
  j["hpvm_ops"] = hpvm;
  j["knobs"] = knobs;
  return j;
}

} // namespace hpvm::fe
