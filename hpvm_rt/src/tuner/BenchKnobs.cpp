// BenchKnobs.cpp - bench-knobs: the mode (table and JSON record) and the
// reading of its record as tune-search's costs.
#include "tuner/BenchKnobs.h"

#include "base/Errors.h"
#include "base/FileUtil.h"
#include "command/OptionTable.h"
#include "command/Progress.h"
#include "tuner/NodeKnobs.h"
#include "tuner/TuneOptions.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <unistd.h>

namespace hpvm::rt::tuner {

using json = nlohmann::json;

// --- bench-knobs options -----------------------------------------------------

namespace {

using Opt = OptionSpec<BenchOptions>;
using SV = std::string_view;

std::vector<int> parseKnobIds(SV option, SV value) {
  std::vector<int> ids;
  for (SV word : splitCommas(value)) {
    int id = int(parseCount(option, word, 1));
    if (!knobById(id))
      throw UserError(fmt::format("bad value '{}' for {}: no knob has id {}",
                                  value, option, id));
    ids.push_back(id);
  }
  return ids;
}

const Opt kBenchOptions[] = {
    {nullptr, "--json", "FILE", "write the JSON record to FILE (atomically)",
     [](BenchOptions& o, SV, SV v) { o.jsonFile = std::string(v); }},
    {"-b", "--batch", "N", "images per batch (default: the model's)",
     [](BenchOptions& o, SV n, SV v) { o.batchSize = parseCount(n, v, 1); }},
    {nullptr, "--threads", "T",
     "threads for the kernels; 0 = all cores (default: HPVM_NUM_THREADS or "
     "all cores)",
     [](BenchOptions& o, SV n, SV v) {
       o.threads = int(parseCount(n, v, 0, kMaxThreads));
     }},
    {nullptr, "--images", "N",
     "tune-set images each probe runs (default: 4 batches, as tune-search)",
     [](BenchOptions& o, SV n, SV v) { o.images = parseCount(n, v, 1); }},
    {nullptr, "--knobs", "ID,ID,...",
     "time only these knobs (the exact one is always the reference)",
     [](BenchOptions& o, SV n, SV v) { o.knobs = parseKnobIds(n, v); }},
    {nullptr, "--every-offset", nullptr,
     "time every perforation/sampling offset (default: one per rate)",
     [](BenchOptions& o, SV, SV) { o.everyOffset = true; }},
    {nullptr, "--repeats", "R",
     "probes per measurement, their medians taken (default 1, as "
     "tune-search)",
     [](BenchOptions& o, SV n, SV v) { o.repeats = int(parseCount(n, v, 1)); }},
    {nullptr, "--model-dir", "DIR",
     "directory holding weights/ and the dataset files",
     [](BenchOptions& o, SV, SV v) { o.modelDir = std::string(v); }},
    {"-q", "--quiet", nullptr, "no progress bar, only the table",
     [](BenchOptions& o, SV, SV) { o.quiet = true; }},
    {"-h", "--help", nullptr, "print this help and exit",
     [](BenchOptions& o, SV, SV) { o.help = true; }},
};

} // namespace

BenchOptions parseBenchOptions(int argc, const char* const* argv) {
  BenchOptions o;
  parseOptionTable(argc, argv, 0, kBenchOptions, o, [](SV arg) {
    throw UserError(fmt::format("unexpected argument '{}'", arg));
  });
  return o;
}

std::string benchHelp(const std::string& program) {
  return fmt::format(
             "Usage: {} bench-knobs [options]\n\n"
             "Times every (HPVM fused node, applicable knob) of the program "
             "on this\nmachine, as tune-search does: each knob alone on its "
             "node, on the first\ntune-set images, against exact timings "
             "taken between the probes. Prints a\ntable per node (time, "
             "change of the next node, speedup over exact) and\nwrites a "
             "JSON record with --json, which `tune-search --costs FILE` "
             "takes\ninstead of timing again.\n\nOptions:\n",
             program) +
         optionTableHelp(kBenchOptions);
}

// --- bench-knobs -------------------------------------------------------------

namespace {

/// The Variant and Precision tokens of every knob, as Ops.def spells them.
const char* knobToken(int id, bool precision) {
  struct Tokens {
    int id;
    const char *variant, *precision;
  };
  static const Tokens kTokens[] = {
#define HPVM_KNOB(Id, ConfName, Var, Prec, Speedup, Rate, Offset, Applies)     \
  {Id, #Var, #Prec},
#include "hpvm_rt/Ops.def"
  };
  for (const Tokens& t : kTokens)
    if (t.id == id)
      return precision ? t.precision : t.variant;
  return "?";
}

/// oneDNN's name of the instruction set it uses on this CPU (a hex value
/// for one this oneDNN names but we do not).
std::string dnnlIsa() {
  using I = dnnl::cpu_isa;
  static const std::pair<I, const char*> kNames[] = {
      {I::all, "all"},
      {I::sse41, "sse41"},
      {I::avx, "avx"},
      {I::avx2, "avx2"},
      {I::avx2_vnni, "avx2_vnni"},
      {I::avx512_mic, "avx512_mic"},
      {I::avx512_mic_4ops, "avx512_mic_4ops"},
      {I::avx512_core, "avx512_core"},
      {I::avx512_core_vnni, "avx512_core_vnni"},
      {I::avx512_core_bf16, "avx512_core_bf16"},
      {I::avx512_core_amx, "avx512_core_amx"},
  };
  I isa = dnnl::get_effective_cpu_isa();
  for (const auto& [value, name] : kNames)
    if (value == isa)
      return name;
  return fmt::format("{:#x}", unsigned(isa));
}

/// The CPU model /proc/cpuinfo names ("" if it names none).
std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0 && line.find(':') != line.npos) {
      std::string v = line.substr(line.find(':') + 1);
      return v.substr(std::min(v.size(), v.find_first_not_of(' ')));
    }
  return "";
}

json machineJson() {
  const dnnl_version_t* v = dnnl_version();
  return {
      {"cpu", cpuModel()},
      {"logical_cpus", sysconf(_SC_NPROCESSORS_ONLN)},
      {"dnnl_version", fmt::format("{}.{}.{}", v->major, v->minor, v->patch)},
      {"dnnl_isa", dnnlIsa()}};
}

std::string shapeText(const std::vector<int64_t>& shape) {
  return fmt::format("{}", fmt::join(shape, "x"));
}

std::string knobLabel(int id) {
  return fmt::format("{}_{}", knobById(id)->confName, id);
}

/// What one fused node is and what its knobs cost.
struct NodeBench {
  const FusedNodeInfo* node;
  std::vector<int> knobs; ///< The exact knob first.
  std::vector<KnobCost> costs;
  std::vector<std::vector<int64_t>> inputShapes;
  std::vector<int64_t> outputShape;
  double flops = 0;
};

/// exact / (exact + delta): the node's speedup, counting what the next
/// node pays; nullopt when that is not a time.
std::optional<double> speedupOf(double exactMs, const KnobCost& c) {
  double ms = exactMs + c.deltaMs;
  if (!c.error.empty() || ms <= 0)
    return std::nullopt;
  return exactMs / ms;
}

std::string table(const std::vector<NodeBench>& benches,
                  const KnobTimer& timer) {
  std::string out;
  for (size_t f = 0; f < benches.size(); ++f) {
    const NodeBench& b = benches[f];
    std::vector<std::string> ops;
    for (HpvmOp op : b.node->ops)
      ops.push_back(opInfo(op).confName);
    double exact = timer.exactNodeMs()[f];
    out += fmt::format("\nnode {} (id {}): {}", b.node->ordinal,
                       b.node->firstOpId, fmt::join(ops, " "));
    if (!b.outputShape.empty())
      out += fmt::format(" -> {}, {:.3g} MFLOP", shapeText(b.outputShape),
                         b.flops / 1e6);
    out += fmt::format("; exact {:.4f} ms\n", exact);
    out += fmt::format("  {:<18} {:>9} {:>9} {:>8}\n", "knob", "ms", "next",
                       "speedup");
    for (size_t k = 0; k < b.knobs.size(); ++k) {
      const KnobCost& c = b.costs[k];
      if (!c.error.empty()) {
        out += fmt::format("  {:<18} failed: {}\n", knobLabel(b.knobs[k]),
                           c.error);
        continue;
      }
      std::optional<double> s = speedupOf(exact, c);
      out += fmt::format(
          "  {:<18} {:>9.4f} {:>9} {:>7}{}{}\n", knobLabel(b.knobs[k]),
          c.nodeMs, k == 0 ? "-" : fmt::format("{:+.4f}", c.nextMs),
          s ? fmt::format("{:.2f}x", *s) : "-", c.noisy ? "~" : " ",
          c.timedAs ? fmt::format(" (as {})", c.timedAs) : "");
    }
  }
  out += "\n(ms: the node's median time per batch; next: the change of the "
         "next node's\ntime; speedup: exact over exact + the change of both, "
         "against exact timings\ntaken between the probes; ~ noisy; (as N): "
         "the time of knob N, which differs\nonly in its offset)\n";
  return out;
}

/// The JSON record, keys in the order a reader wants them.
nlohmann::ordered_json
recordJson(const BenchOptions& opts, ProgramRunner& runner,
           const std::vector<NodeBench>& benches, const KnobTimer& timer,
           const NodeTimes& after, int64_t images, double seconds) {
  using ojson = nlohmann::ordered_json;
  ojson nodes = ojson::array();
  for (size_t f = 0; f < benches.size(); ++f) {
    const NodeBench& b = benches[f];
    double exact = timer.exactNodeMs()[f];
    ojson ops = ojson::array();
    for (HpvmOp op : b.node->ops)
      ops.push_back(opInfo(op).confName);
    ojson knobs = ojson::array();
    for (size_t k = 0; k < b.knobs.size(); ++k) {
      const KnobInfo& info = *knobById(b.knobs[k]);
      const KnobCost& c = b.costs[k];
      ojson kj = {{"id", info.id},
                  {"conf_name", info.confName},
                  {"variant", knobToken(info.id, false)},
                  {"precision", knobToken(info.id, true)},
                  {"rate", info.spec.rate},
                  {"offset", info.spec.offset}};
      if (!c.error.empty()) {
        kj["error"] = c.error;
      } else {
        std::optional<double> s = speedupOf(exact, c);
        kj["ms"] = c.nodeMs;
        kj["next_ms"] = c.nextMs;
        kj["delta_ms"] = c.deltaMs;
        kj["spread"] = c.spread;
        kj["speedup"] = s ? ojson(*s) : ojson(nullptr);
        kj["noisy"] = c.noisy;
        if (c.timedAs)
          kj["timed_as"] = c.timedAs;
      }
      knobs.push_back(kj);
    }
    ojson nj = {{"ordinal", b.node->ordinal},
                {"node_id", b.node->firstOpId},
                {"ops", ops}};
    if (!b.outputShape.empty()) {
      nj["input_shapes"] = b.inputShapes;
      nj["output_shape"] = b.outputShape;
    }
    nj["flops"] = b.flops;
    nj["exact_ms"] = exact;
    nj["exact_spread"] = timer.exactSpread()[f];
    nj["exact_ms_after"] = after.nodeMs[f];
    nj["knobs"] = knobs;
    nodes.push_back(nj);
  }
  return ojson{{"tool", "torch2hpvm bench-knobs 1"},
               {"model", runner.modelName()},
               {"batch_size", runner.batchSize()},
               {"threads", runner.threads()},
               {"set", "tune"},
               {"images", images},
               {"repeats", opts.repeats},
               {"every_offset", opts.everyOffset},
               {"machine", ojson(machineJson())},
               {"exact_batch_ms", timer.exactBatchMs()},
               {"exact_batch_ms_after", after.batchMs},
               {"nodes", nodes},
               {"seconds", seconds}};
}

} // namespace

int benchKnobs(const BenchOptions& opts, ProgramRunner& runner) {
  auto start = Clock::now();
  const int64_t batch = runner.batchSize();
  const int64_t tuneCount = runner.setSize("tune");
  if (tuneCount <= 0)
    throw UserError("the model has no tune set (it was exported without "
                    "one); bench-knobs times on it");
  if (opts.images && *opts.images > tuneCount)
    throw UserError(fmt::format("--images {} exceeds the {} images of the "
                                "tune set",
                                *opts.images, tuneCount));
  const int64_t images = opts.images.value_or(std::min(4 * batch, tuneCount));

  // One exact batch: the fused nodes, their shapes and FLOPs.
  PassRequest first;
  first.images = std::min(batch, tuneCount);
  first.keepOutputs = false;
  first.nodeTimes = true;
  PassResult firstRun = runner.pass(first);
  const std::vector<FusedNodeInfo> nodes = runner.programNodes();
  if (nodes.empty())
    throw UserError("the program ran no tensor operations; nothing to time");
  std::vector<NodeBench> benches;
  std::vector<KnobPair> pairs;
  for (size_t f = 0; f < nodes.size(); ++f) {
    NodeBench b{&nodes[f], {}, {}, {}, {}, 0};
    for (int id : nodeKnobs(nodes[f]))
      if (b.knobs.empty() || opts.knobs.empty() ||
          std::count(opts.knobs.begin(), opts.knobs.end(), id)) {
        if (!b.knobs.empty())
          pairs.push_back({f, id});
        b.knobs.push_back(id);
      }
    for (const OpRecord& r : firstRun.lastOps) {
      if (r.fusedOrdinal != nodes[f].ordinal)
        continue;
      if (b.outputShape.empty())
        b.inputShapes = r.inputShapes;
      b.outputShape = r.outputShape;
      b.flops += r.flops;
    }
    benches.push_back(std::move(b));
  }

  // The probes: passes over the first tune images, one untimed batch
  // first whenever the configuration changes.
  std::string lastKey;
  auto probe = [&](ProbeKind kind, const KnobPair& p) {
    Configuration config;
    PassRequest req;
    std::string key = "exact";
    if (kind != ProbeKind::Exact) {
      config.name = "bench-knobs";
      for (size_t f = 0; f < nodes.size(); ++f)
        config.nodes.push_back(nodeLine(
            nodes[f], f == p.node ? p.knobId : benches[f].knobs.front()));
      req.config = &config;
      key = fmt::format("{}:{}", p.node, p.knobId);
    }
    req.images = images;
    req.keepOutputs = false;
    req.nodeTimes = true;
    req.warmup = key != lastKey;
    lastKey = key;
    return nodeTimesOf(runner.pass(req), images, batch);
  };
  KnobTimer timer(nodes.size(), probe, opts.repeats);
  if (!opts.quiet) {
    std::printf("%s: timing %zu (fused node, knob) pairs on %zu fused nodes "
                "(%lld tune images per probe, batch %lld, %d thread%s)\n",
                runner.modelName().c_str(), pairs.size(), nodes.size(),
                (long long)images, (long long)batch, runner.threads(),
                runner.threads() == 1 ? "" : "s");
    std::fflush(stdout);
  }
  timer.measureExact();
  std::vector<KnobCost> costs =
      timer.time(pairs, opts.everyOffset, !opts.quiet);
  const NodeTimes after = timer.measureExactAgain();
  // The exact knob is the reference itself.
  size_t next = 0;
  for (size_t f = 0; f < benches.size(); ++f) {
    KnobCost exact;
    exact.nodeMs = timer.exactNodeMs()[f];
    exact.spread = timer.exactSpread()[f];
    benches[f].costs.push_back(exact);
    for (size_t k = 1; k < benches[f].knobs.size(); ++k)
      benches[f].costs.push_back(costs[next++]);
  }

  std::string machine;
  {
    json m = machineJson();
    machine = fmt::format(
        "{}, {} logical CPUs, oneDNN {} ({})", m["cpu"].get<std::string>(),
        m["logical_cpus"].get<long>(), m["dnnl_version"].get<std::string>(),
        m["dnnl_isa"].get<std::string>());
  }
  std::printf("%s: batch %lld, %d thread%s, %lld tune images per probe; "
              "exact batch %.4f ms\nmachine: %s\n%s",
              runner.modelName().c_str(), (long long)batch, runner.threads(),
              runner.threads() == 1 ? "" : "s", (long long)images,
              timer.exactBatchMs(), machine.c_str(),
              table(benches, timer).c_str());
  size_t failed = 0;
  for (const KnobCost& c : costs)
    failed += !c.error.empty();
  if (failed)
    std::printf("%zu knob%s failed to run (see above); the others are "
                "timed\n",
                failed, failed == 1 ? "" : "s");
  // Exact node times that moved by over 20% (and 1% of a batch) between
  // the start and the end: the machine was busier at one of them.
  std::string moved;
  for (size_t f = 0; f < nodes.size(); ++f) {
    double was = timer.exactNodeMs()[f], now = after.nodeMs[f];
    if (std::abs(now - was) > std::max(0.2 * was, 0.01 * timer.exactBatchMs()))
      moved +=
          fmt::format("{}node {} {:.4f} -> {:.4f} ms",
                      moved.empty() ? "" : ", ", nodes[f].ordinal, was, now);
  }
  if (!moved.empty())
    reportWarning("bench-knobs",
                  "exact times moved during the run (" + moved +
                      "): the machine was busy, and times against the moved "
                      "reference are off; run again, or with --repeats");
  if (!opts.jsonFile.empty()) {
    nlohmann::ordered_json record = recordJson(
        opts, runner, benches, timer, after, images, secondsSince(start));
    writeFileAtomic(opts.jsonFile, record.dump(1) + "\n");
    std::printf("wrote %s\n", opts.jsonFile.c_str());
  }
  std::fflush(stdout);
  return 0;
}

// --- A bench-knobs record as tune-search's costs -----------------------------

const KnobCost& KnobCosts::at(size_t node, int knobId) const {
  auto it = knobs[node].find(knobId);
  if (it == knobs[node].end())
    throw UserError(fmt::format("{}: no time for knob {} on fused node {} "
                                "(the record was made with --knobs; "
                                "tune-search needs every knob it searches)",
                                path, knobLabel(knobId), node + 1));
  return it->second;
}

KnobCosts readKnobCosts(const std::string& path,
                        const std::vector<FusedNodeInfo>& nodes,
                        const ProgramRunner& runner) {
  std::ifstream in(path);
  if (!in)
    throw UserError(fmt::format("{}: cannot open the bench-knobs record: {}",
                                path, std::strerror(errno)));
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() ||
      j.value("tool", "").rfind("torch2hpvm bench-knobs ", 0) != 0)
    throw UserError(
        fmt::format("{}: not a JSON record of bench-knobs --json", path));
  KnobCosts costs;
  costs.path = path;
  try {
    auto mismatch = [&](const std::string& there, const std::string& here) {
      if (there != here)
        throw UserError(fmt::format("{}: the record was made with {}, but this "
                                    "run uses {}",
                                    path, there, here));
    };
    auto threads = [](int n) {
      return fmt::format("{} thread{}", n, n == 1 ? "" : "s");
    };
    mismatch(fmt::format("model '{}'", j.at("model").get<std::string>()),
             fmt::format("model '{}'", runner.modelName()));
    mismatch(fmt::format("batch size {}", j.at("batch_size").get<int64_t>()),
             fmt::format("batch size {}", runner.batchSize()));
    mismatch(threads(j.at("threads").get<int>()), threads(runner.threads()));
    const json& jn = j.at("nodes");
    if (jn.size() != nodes.size())
      throw UserError(fmt::format("{}: the record has {} fused nodes, but this "
                                  "program has {}",
                                  path, jn.size(), nodes.size()));
    costs.exactBatchMs = j.at("exact_batch_ms").get<double>();
    for (size_t f = 0; f < nodes.size(); ++f) {
      std::vector<std::string> ops;
      for (HpvmOp op : nodes[f].ops)
        ops.push_back(opInfo(op).confName);
      if (jn[f].at("node_id").get<int>() != nodes[f].firstOpId ||
          jn[f].at("ops").get<std::vector<std::string>>() != ops)
        throw UserError(fmt::format(
            "{}: fused node {} is '{}' (node id {}) there but '{}' (node id "
            "{}) in this program",
            path, nodes[f].ordinal,
            fmt::join(jn[f].at("ops").get<std::vector<std::string>>(), " "),
            jn[f].at("node_id").get<int>(), fmt::join(ops, " "),
            nodes[f].firstOpId));
      costs.exactNodeMs.push_back(jn[f].at("exact_ms").get<double>());
      std::map<int, KnobCost> knobs;
      for (const json& k : jn[f].at("knobs")) {
        KnobCost c;
        if (k.contains("error")) {
          c.error = k.at("error").get<std::string>();
        } else {
          c.nodeMs = k.at("ms").get<double>();
          c.nextMs = k.at("next_ms").get<double>();
          c.deltaMs = k.at("delta_ms").get<double>();
          c.spread = k.at("spread").get<double>();
          c.noisy = k.at("noisy").get<bool>();
          c.timedAs = k.value("timed_as", 0);
        }
        knobs[k.at("id").get<int>()] = c;
      }
      costs.knobs.push_back(std::move(knobs));
    }
  } catch (const json::exception& e) {
    throw UserError(fmt::format("{}: not a JSON record of bench-knobs --json "
                                "({})",
                                path, e.what()));
  }
  return costs;
}

} // namespace hpvm::rt::tuner
