// Profiler.cpp - aggregates op records into profiles, Chrome traces and
// call logs.
#include "driver/Profiler.h"

#include "config/Config.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace hpvm::rt {

namespace {

/// Totals of one op (by its position in the launch) or one fused node.
struct Totals {
  int opId = 0, fused = 0;
  std::string op, knob;
  int64_t calls = 0;
  double seconds = 0, flops = 0;
};

nlohmann::json totalsJson(const Totals& t, bool perOp) {
  nlohmann::json j;
  if (perOp)
    j["op_id"] = t.opId;
  j["fused_node"] = t.fused;
  j[perOp ? "op" : "ops"] = t.op;
  j[perOp ? "knob" : "knobs"] = t.knob;
  j["calls"] = t.calls;
  j["total_ms"] = t.seconds * 1e3;
  j["mean_ms"] = t.calls ? t.seconds * 1e3 / t.calls : 0.0;
  j["flops"] = t.flops;
  j["gflops_per_s"] = t.seconds > 0 ? t.flops / t.seconds / 1e9 : 0.0;
  return j;
}

void sortByTime(std::vector<Totals>& list) {
  std::stable_sort(
      list.begin(), list.end(),
      [](const Totals& a, const Totals& b) { return a.seconds > b.seconds; });
}

/// Per-op totals (keyed by the call's position in its launch) and per fused
/// node totals, in first-seen order.
void aggregate(const std::vector<ProfiledCall>& calls, std::vector<Totals>& ops,
               std::vector<Totals>& nodes) {
  std::map<int, size_t> nodeIndex;
  int launch = -1;
  size_t position = 0;
  int lastFusedLaunch = -1, lastFused = -1;
  for (const ProfiledCall& call : calls) {
    if (call.launch != launch) {
      launch = call.launch;
      position = 0;
    }
    const OpRecord& r = call.record;
    if (position == ops.size()) {
      Totals t;
      t.opId = r.opId;
      t.fused = r.fusedOrdinal;
      t.op = opInfo(r.op).confName;
      t.knob = knobText(r.knob.id);
      ops.push_back(t);
    }
    Totals& op = ops[position++];
    ++op.calls;
    op.seconds += r.seconds;
    op.flops += r.flops;

    auto [it, fresh] = nodeIndex.emplace(r.fusedOrdinal, nodes.size());
    if (fresh) {
      Totals t;
      t.fused = r.fusedOrdinal;
      nodes.push_back(t);
    }
    Totals& node = nodes[it->second];
    // The first launch names the node's ops and knobs.
    if (call.launch == calls.front().launch) {
      node.op += (node.op.empty() ? "" : "+") + op.op;
      node.knob += (node.knob.empty() ? "" : ", ") + op.knob;
    }
    if (lastFusedLaunch != call.launch || lastFused != r.fusedOrdinal)
      ++node.calls;
    lastFusedLaunch = call.launch;
    lastFused = r.fusedOrdinal;
    node.seconds += r.seconds;
    node.flops += r.flops;
  }
}

/// What the profile reports: per-op and per-fused-node totals, each
/// sorted by time (longest first), and the total time.
struct Summary {
  std::vector<Totals> ops, nodes;
  double seconds = 0;
};

Summary summarise(const std::vector<ProfiledCall>& calls) {
  Summary s;
  aggregate(calls, s.ops, s.nodes);
  for (const Totals& t : s.ops)
    s.seconds += t.seconds;
  sortByTime(s.ops);
  sortByTime(s.nodes);
  return s;
}

nlohmann::json shapeJson(const std::vector<int64_t>& shape) {
  return nlohmann::json(shape);
}

} // namespace

std::string knobText(int knobId) {
  return fmt::format("{} {}", knobConfName(knobId), knobId);
}

void Profiler::addLaunch(double launchStart,
                         const std::vector<OpRecord>& records) {
  for (const OpRecord& r : records)
    calls_.push_back(ProfiledCall{launches_, launchStart, r});
  ++launches_;
}

nlohmann::json Profiler::profileJson() const {
  const Summary s = summarise(calls_);
  nlohmann::json j;
  j["launches"] = launches_;
  j["total_ms"] = s.seconds * 1e3;
  j["fused_nodes"] = nlohmann::json::array();
  for (const Totals& t : s.nodes)
    j["fused_nodes"].push_back(totalsJson(t, false));
  j["ops"] = nlohmann::json::array();
  for (const Totals& t : s.ops)
    j["ops"].push_back(totalsJson(t, true));
  return j;
}

std::string Profiler::profileTable() const {
  const Summary s = summarise(calls_);
  const double total = s.seconds;
  std::string out = fmt::format("{:>11} {:>7} {:>7} {:>10} {:>9} {:>5} {:>5}  "
                                "{:<13} {}\n",
                                "Time (ms)", "Share", "Calls", "Mean (ms)",
                                "GFLOP/s", "Node", "Op", "Kind", "Knob");
  for (const Totals& t : s.ops)
    out += fmt::format(
        "{:>11.3f} {:>6.1f}% {:>7} {:>10.4f} {:>9.2f} {:>5} {:>5}  {:<13} "
        "{}\n",
        t.seconds * 1e3, total > 0 ? 100 * t.seconds / total : 0.0, t.calls,
        t.calls ? t.seconds * 1e3 / t.calls : 0.0,
        t.seconds > 0 ? t.flops / t.seconds / 1e9 : 0.0, t.fused, t.opId, t.op,
        t.knob);
  out += fmt::format("{:>11.3f} {:>6.1f}%  total over {} launch{}\n",
                     total * 1e3, 100.0, launches_, launches_ == 1 ? "" : "es");
  return out;
}

nlohmann::json Profiler::traceJson() const {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 1},
                    {"args", {{"name", "hpvm_rt"}}}});
  for (const ProfiledCall& call : calls_) {
    const OpRecord& r = call.record;
    nlohmann::json inputs = nlohmann::json::array();
    for (const auto& s : r.inputShapes)
      inputs.push_back(shapeJson(s));
    events.push_back({{"name", opInfo(r.op).confName},
                      {"cat", "op"},
                      {"ph", "X"},
                      {"pid", 1},
                      {"tid", 1},
                      {"ts", (call.launchStart + r.startSeconds) * 1e6},
                      {"dur", r.seconds * 1e6},
                      {"args",
                       {{"op_id", r.opId},
                        {"fused_node", r.fusedOrdinal},
                        {"launch", call.launch},
                        {"knob", knobText(r.knob.id)},
                        {"inputs", inputs},
                        {"output", shapeJson(r.outputShape)},
                        {"flops", r.flops}}}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

nlohmann::json Profiler::callLogJson() const {
  nlohmann::json log = nlohmann::json::array();
  for (const ProfiledCall& call : calls_) {
    const OpRecord& r = call.record;
    nlohmann::json inputs = nlohmann::json::array();
    for (const auto& s : r.inputShapes)
      inputs.push_back(shapeJson(s));
    log.push_back({{"launch", call.launch},
                   {"op", opInfo(r.op).confName},
                   {"op_id", r.opId},
                   {"fused_node", r.fusedOrdinal},
                   {"knob", knobConfName(r.knob.id)},
                   {"knob_id", r.knob.id},
                   {"inputs", inputs},
                   {"output", shapeJson(r.outputShape)},
                   {"flops", r.flops},
                   {"start_ms", (call.launchStart + r.startSeconds) * 1e3},
                   {"time_ms", r.seconds * 1e3}});
  }
  return log;
}

} // namespace hpvm::rt
