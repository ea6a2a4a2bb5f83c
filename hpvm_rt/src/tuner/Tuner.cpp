// Tuner.cpp - tune-search: options, the measurement cache behind --resume,
// profiling, search, calibration, validation and the output files.
#include "tuner/Tuner.h"

#include "base/Errors.h"
#include "base/FileUtil.h"
#include "command/OptionTable.h"
#include "command/Progress.h"
#include "config/Config.h"
#include "tuner/BenchKnobs.h"
#include "tuner/Model.h"
#include "tuner/Search.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace hpvm::rt::tuner {

using json = nlohmann::json;

// --- Options
// ------------------------------------------------------------------

std::vector<std::string_view> splitCommas(std::string_view value) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == value.npos)
      comma = value.size();
    out.push_back(value.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

namespace {

std::vector<double> parseLosses(std::string_view option,
                                std::string_view value) {
  std::vector<double> out;
  for (std::string_view item : splitCommas(value))
    out.push_back(parseNumber(option, item, 0));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

using Opt = OptionSpec<TuneOptions>;
using SV = std::string_view;

const Opt kTuneOptions[] = {
    {nullptr, "--qos-loss", "L[,L...]",
     "QoS losses of interest, in points (default 1.0); the front is kept up "
     "to the largest",
     [](TuneOptions& o, SV n, SV v) { o.qosLoss = parseLosses(n, v); }},
    {nullptr, "--qos", "METRIC",
     "top1 (default), top5, psnr (outputs against the exact ones) or relerr",
     [](TuneOptions& o, SV, SV v) { o.metric = std::string(v); }},
    {nullptr, "--relative", nullptr,
     "losses are percentages of the exact QoS, not points",
     [](TuneOptions& o, SV, SV) { o.relative = true; }},
    {nullptr, "--psnr-threshold", "DB",
     "with --qos psnr: an image violates below this PSNR (default 30)",
     [](TuneOptions& o, SV n, SV v) {
       o.psnrThreshold = parseNumber(n, v, 0);
     }},
    {nullptr, "--budget", "N",
     "configurations the search evaluates (default 2000)",
     [](TuneOptions& o, SV n, SV v) { o.budget = parseCount(n, v, 1); }},
    {nullptr, "--seed", "N", "seed of the search (default 1)",
     [](TuneOptions& o, SV n, SV v) {
       o.seed = uint64_t(parseCount(n, v, 0));
     }},
    {nullptr, "--empirical", nullptr,
     "measure every candidate on the profiling images instead of predicting",
     [](TuneOptions& o, SV, SV) { o.empirical = true; }},
    {nullptr, "--qos-model", "p1|p2",
     "prediction: p1 adds output changes (default), p2 adds losses",
     [](TuneOptions& o, SV, SV v) { o.qosModel = std::string(v); }},
    {nullptr, "--profile-images", "N",
     "tune-set images each (node, knob) is profiled on (default: 1000 or "
     "the set)",
     [](TuneOptions& o, SV n, SV v) { o.profileImages = parseCount(n, v, 1); }},
    {nullptr, "--timing-images", "N",
     "images of each interleaved timing run (default: 8 batches)",
     [](TuneOptions& o, SV n, SV v) { o.timingImages = parseCount(n, v, 1); }},
    {nullptr, "--calibrate", "N",
     "predicted configurations measured to calibrate the model (default 12)",
     [](TuneOptions& o, SV n, SV v) {
       o.calibrate = int(parseCount(n, v, 0));
     }},
    {nullptr, "--validate", "N",
     "front configurations re-measured on the whole tune set (default 24)",
     [](TuneOptions& o, SV n, SV v) { o.validate = int(parseCount(n, v, 1)); }},
    {nullptr, "--repeats", "N",
     "interleaved exact/approximate timing rounds per validation (default 3)",
     [](TuneOptions& o, SV n, SV v) { o.repeats = int(parseCount(n, v, 1)); }},
    {nullptr, "--hpvm-compatible", nullptr,
     "only knobs HPVM's own CPU runtime parses (fp32, perf, samp)",
     [](TuneOptions& o, SV, SV) { o.hpvmCompatible = true; }},
    {nullptr, "--time-every-offset", nullptr,
     "time every perforation/sampling offset (default: one per rate)",
     [](TuneOptions& o, SV, SV) { o.timeEveryOffset = true; }},
    {nullptr, "--costs", "FILE",
     "take the (node, knob) times from this bench-knobs --json record (same "
     "program, batch size and threads) instead of timing them",
     [](TuneOptions& o, SV, SV v) { o.costsFile = std::string(v); }},
    {nullptr, "--no-prune", nullptr,
     "profile and search knobs that save no time on this machine too",
     [](TuneOptions& o, SV, SV) { o.prune = false; }},
    {"-o", "--output", "FILE",
     "configuration file to write (default tuner_confs.txt)",
     [](TuneOptions& o, SV, SV v) { o.output = std::string(v); }},
    {nullptr, "--json", "FILE",
     "JSON record of every evaluated point (default: FILE of -o, .json)",
     [](TuneOptions& o, SV, SV v) { o.jsonFile = std::string(v); }},
    {nullptr, "--plot", "STEM",
     "write the Pareto plot as STEM.png and STEM.svg (default: -o's stem + "
     "_front)",
     [](TuneOptions& o, SV, SV v) { o.plotStem = std::string(v); }},
    {nullptr, "--plot-script", "PATH",
     "plotting script (default: $TORCH2HPVM_PLOT_SCRIPT)",
     [](TuneOptions& o, SV, SV v) { o.plotScript = std::string(v); }},
    {nullptr, "--no-plot", nullptr, "do not draw the plot",
     [](TuneOptions& o, SV, SV) { o.noPlot = true; }},
    {nullptr, "--state", "DIR",
     "measurement cache (default: -o's stem + .state); reused when it "
     "matches",
     [](TuneOptions& o, SV, SV v) { o.stateDir = std::string(v); }},
    {nullptr, "--resume", nullptr,
     "continue an interrupted run (the state must exist and match)",
     [](TuneOptions& o, SV, SV) { o.resume = true; }},
    {nullptr, "--fresh", nullptr, "discard the measurement cache first",
     [](TuneOptions& o, SV, SV) { o.fresh = true; }},
    {"-b", "--batch-size", "N", "images per batch (default: the model's)",
     [](TuneOptions& o, SV n, SV v) { o.batchSize = parseCount(n, v, 1); }},
    {nullptr, "--threads", "N",
     "threads for the kernels; 0 = all cores (default: HPVM_NUM_THREADS or "
     "all cores)",
     [](TuneOptions& o, SV n, SV v) {
       o.threads = int(parseCount(n, v, 0, kMaxThreads));
     }},
    {nullptr, "--model-dir", "DIR",
     "directory holding weights/ and the dataset files",
     [](TuneOptions& o, SV, SV v) { o.modelDir = std::string(v); }},
    {"-q", "--quiet", nullptr, "no progress bar, only the result table",
     [](TuneOptions& o, SV, SV) { o.quiet = true; }},
    {"-h", "--help", nullptr, "print this help and exit",
     [](TuneOptions& o, SV, SV) { o.help = true; }},
};

} // namespace

TuneOptions parseTuneOptions(int argc, const char* const* argv) {
  TuneOptions o;
  parseOptionTable(argc, argv, 0, kTuneOptions, o, [](std::string_view arg) {
    throw UserError(fmt::format("unexpected argument '{}'", arg));
  });
  if (o.metric != "top1" && o.metric != "top5" && o.metric != "psnr" &&
      o.metric != "relerr")
    throw UserError(fmt::format("bad value '{}' for --qos: expected top1, "
                                "top5, psnr or relerr",
                                o.metric));
  if (o.qosModel != "p1" && o.qosModel != "p2")
    throw UserError(fmt::format("bad value '{}' for --qos-model: expected p1 "
                                "or p2",
                                o.qosModel));
  if (o.fresh && o.resume)
    throw UserError("--fresh and --resume exclude each other");
  if (o.jsonFile.empty())
    o.jsonFile = stemOf(o.output) + ".json";
  if (o.plotStem.empty())
    o.plotStem = stemOf(o.output) + "_front";
  if (o.stateDir.empty())
    o.stateDir = stemOf(o.output) + ".state";
  if (o.plotScript.empty())
    if (const char* env = std::getenv("TORCH2HPVM_PLOT_SCRIPT"))
      o.plotScript = env;
  return o;
}

std::string tuneHelp(const std::string& program) {
  return fmt::format(
             "Usage: {} tune-search [options]\n\n"
             "Finds the fastest approximation configurations within QoS-loss "
             "budgets on\nthis machine: profiles every (fused node, knob) on "
             "the tune set, searches\nthe speedup/loss front (NSGA-II over "
             "predictions, or --empirical), validates\nit on the tune set, "
             "measures it on the test set and writes HPVM's\nconfiguration "
             "file (fastest within the smallest --qos-loss first), a JSON\n"
             "record and a plot. Ctrl-C keeps every measurement; run again "
             "with --resume.\n\nOptions:\n",
             program) +
         optionTableHelp(kTuneOptions);
}

// --- Knob choices per fused node
// ------------------------------------------------

bool hpvmParsesCpuLine(const NodeConfig& line) {
  for (const OpChoice& c : line.ops) {
    std::string name = knobConfName(c.knobId);
    if (name != "fp32" && name != "perf" && name != "samp")
      return false;
  }
  return true;
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

namespace {

// --- Interruption
// -----------------------------------------------------------------

std::atomic<bool> gInterrupted{false};

extern "C" void onInterrupt(int sig) {
  gInterrupted = true;
  // A second signal ends the process at once.
  std::signal(sig, SIG_DFL);
}

struct Interrupted {};

void checkInterrupt() {
  if (gInterrupted)
    throw Interrupted{};
}

// --- Progress
// ---------------------------------------------------------------------

// --- Measurement cache
// ------------------------------------------------------------

/// Every measurement of a run, appended to STATE/measurements.jsonl as it
/// is made (outputs of profiling passes in STATE/outputs/), keyed by what
/// was measured and how many times the same thing was measured before. A
/// later run with the same program and settings replays them instead of
/// measuring again: an interrupted run resumes where it stopped and a
/// second run with the same seed and budget writes the same file.
class MeasureCache {
public:
  MeasureCache(const std::string& dir, const json& context, bool fresh,
               bool resume, bool quiet)
      : dir_(dir) {
    std::string jsonl = dir_ + "/measurements.jsonl";
    struct stat st;
    bool exists = ::stat(jsonl.c_str(), &st) == 0;
    if (resume && !exists)
      throw UserError(fmt::format("--resume: {} has no earlier run to resume "
                                  "(no measurements.jsonl)",
                                  dir_));
    if (exists && !fresh) {
      std::ifstream in(jsonl);
      std::string line;
      bool first = true, match = false;
      while (std::getline(in, line)) {
        json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded())
          break; // a line cut short by a kill: everything before it stands
        if (first) {
          first = false;
          match = j == context;
          if (!match)
            break;
          continue;
        }
        records_[j.value("key", "")] = j;
      }
      if (!match) {
        if (resume)
          throw UserError(fmt::format(
              "--resume: {} was made for another program or other settings "
              "(batch size, threads, images, QoS); run without --resume to "
              "start again",
              dir_));
        records_.clear();
        exists = false;
      } else if (!quiet && !records_.empty()) {
        std::printf("reusing %zu measurements from %s\n", records_.size(),
                    dir_.c_str());
      }
    }
    if (::mkdir(dir_.c_str(), 0777) != 0 && errno != EEXIST)
      throw UserError(fmt::format("{}: cannot create the state directory: {}",
                                  dir_, std::strerror(errno)));
    ::mkdir((dir_ + "/outputs").c_str(), 0777);
    if (!exists || fresh) {
      // Start the file anew with the context line.
      std::string text = context.dump() + "\n";
      for (auto& [key, rec] : records_)
        text += rec.dump() + "\n";
      writeFileAtomic(jsonl, text);
    }
    file_ = std::fopen(jsonl.c_str(), "ab");
    if (!file_)
      throw UserError(
          fmt::format("{}: cannot append: {}", jsonl, std::strerror(errno)));
  }
  ~MeasureCache() {
    if (file_)
      std::fclose(file_);
  }

  /// The unique key of the next measurement described by \p desc.
  std::string key(const std::string& desc) {
    int n = occurrences_[desc]++;
    return fmt::format("{}#{}", desc, n);
  }
  const json* find(const std::string& key) const {
    auto it = records_.find(key);
    return it == records_.end() ? nullptr : &it->second;
  }
  void add(const std::string& key, json record,
           const std::vector<float>* outputs = nullptr) {
    record["key"] = key;
    if (outputs) {
      std::string name = fmt::format("outputs/{}.f32", records_.size());
      writeFileAtomic(
          dir_ + "/" + name,
          std::string_view(reinterpret_cast<const char*>(outputs->data()),
                           outputs->size() * sizeof(float)));
      record["outputs"] = name;
    }
    std::string line = record.dump() + "\n";
    if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() ||
        std::fflush(file_) != 0)
      throw UserError(fmt::format("{}/measurements.jsonl: cannot write: {}",
                                  dir_, std::strerror(errno)));
    records_[key] = std::move(record);
    ++added_;
  }
  std::vector<float> outputs(const json& record, size_t count) const {
    std::vector<float> out(count);
    std::string path = dir_ + "/" + record.value("outputs", "");
    std::ifstream in(path, std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(out.data()),
                 std::streamsize(count * sizeof(float))))
      throw UserError(fmt::format("{}: cannot read cached outputs (remove the "
                                  "state directory or pass --fresh)",
                                  path));
    return out;
  }
  size_t added() const { return added_; }
  size_t reused() const { return reused_; }
  void noteReuse() { ++reused_; }

private:
  std::string dir_;
  std::map<std::string, json> records_;
  std::map<std::string, int> occurrences_;
  std::FILE* file_ = nullptr;
  size_t added_ = 0, reused_ = 0;
};

// --- The tuning session
// ------------------------------------------------------------

/// A measured configuration.
struct Measured {
  double qos = 0, loss = 0;
  double speedup = 1;
  std::vector<double> ratios; ///< Speedup of each timing round.
  double ms = 0;              ///< Median batch time, ms.
  bool noisy = false;
};

/// True if timing rounds disagree: their range is over 15% of their
/// median, or (with four or more) their interquartile range over 10%.
bool disagree(const std::vector<double>& ratios) {
  if (ratios.size() < 2)
    return false;
  auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
  return (*hi - *lo) > 0.15 * median(ratios) || spread(ratios) > 0.1;
}

/// Median over full batches (a final partial batch is left out).
double medianBatchMs(const PassResult& r, int64_t images, int64_t batch) {
  std::vector<double> v = r.batchSeconds;
  if (v.size() > 1 && images % batch != 0)
    v.pop_back();
  return median(v) * 1e3;
}

class Session {
public:
  Session(const TuneOptions& opts, ProgramRunner& runner)
      : opts_(opts), runner_(runner) {
    using M = QosSpec::Metric;
    spec_.metric = opts.metric == "top5"     ? M::Top5
                   : opts.metric == "psnr"   ? M::Psnr
                   : opts.metric == "relerr" ? M::RelErr
                                             : M::Top1;
    spec_.relative = opts.relative;
    spec_.psnrThreshold = opts.psnrThreshold;
    maxLoss_ = opts.qosLoss.back();
    qosModel_ = opts.qosModel;
    batch_ = runner.batchSize();
    tuneCount_ = runner.setSize("tune");
    testCount_ = runner.setSize("test");
    if (tuneCount_ <= 0)
      throw UserError("the model has no tune set (it was exported without "
                      "one); tune-search needs it");
    profileImages_ = std::min(opts.profileImages.value_or(1000), tuneCount_);
    timingImages_ =
        std::min(opts.timingImages.value_or(8 * batch_), tuneCount_);
    classes_ = runner.classes();
    // Timing probes: four batches after a warm one.
    probeImages_ = std::min({4 * batch_, timingImages_, profileImages_});
  }

  int run();

private:
  // --- Configurations ---
  Configuration configOf(const Genome& g, const std::string& name) const {
    Configuration c;
    c.name = name;
    for (size_t f = 0; f < nodes_.size(); ++f)
      c.nodes.push_back(nodeLine(nodes_[f], knobs_[f][g[f]]));
    return c;
  }
  std::string describe(const Genome& g) const {
    std::string s;
    for (size_t f = 0; f < nodes_.size(); ++f)
      if (g[f] != 0)
        s += fmt::format("{}{}:{}", s.empty() ? "" : " ", nodes_[f].ordinal,
                         knobConfName(knobs_[f][g[f]]) + "_" +
                             std::to_string(knobs_[f][g[f]]));
    return s.empty() ? "exact" : s;
  }

  // --- Measurement ---
  PassResult runPass(const Genome* g, const std::string& set, int64_t images,
                     bool keepOutputs, bool nodeTimes) {
    checkInterrupt();
    Configuration config;
    PassRequest req;
    if (g) {
      config = configOf(*g, "tuning");
      req.config = &config;
    }
    std::string key = g ? genomeKey(*g) : "exact";
    req.set = set;
    req.images = images;
    req.keepOutputs = keepOutputs;
    req.nodeTimes = nodeTimes;
    req.warmup = key != lastKey_;
    lastKey_ = key;
    ++passes_;
    return runner_.pass(req);
  }

  /// A node-timed pass of \p g over \p images tune images (cached).
  json profilePass(const Genome& g, int64_t images, const std::string& kind,
                   bool keepOutputs, std::vector<float>* outputs) {
    std::string key =
        cache_->key(fmt::format("{}|tune|{}|{}", kind, images, genomeKey(g)));
    if (const json* rec = cache_->find(key)) {
      cache_->noteReuse();
      if (outputs)
        *outputs = cache_->outputs(*rec, size_t(images * classes_));
      return *rec;
    }
    bool exact = std::all_of(g.begin(), g.end(), [](auto v) { return !v; });
    PassResult r =
        runPass(exact ? nullptr : &g, "tune", images, keepOutputs, true);
    NodeTimes t = nodeTimesOf(r, images, batch_);
    json rec;
    rec["node_ms"] = t.nodeMs;
    rec["batch_ms"] = t.batchMs;
    rec["node_spread"] = t.nodeSpread;
    if (keepOutputs) {
      const std::vector<int32_t>& labels = runner_.labels("tune");
      rec["qos"] = qosValue(spec_, r.outputs.data(), exactTune_.data(),
                            labels.data(), images, classes_);
    }
    // Outputs are kept on disk only where the predictor needs them.
    cache_->add(key, rec, outputs ? &r.outputs : nullptr);
    if (outputs)
      *outputs = std::move(r.outputs);
    return rec;
  }

  /// A timing probe of the KnobTimer: a node-timed pass (cached) of the
  /// exact program or of \p p's knob alone.
  NodeTimes timingProbe(ProbeKind kind, const KnobPair& p) {
    static const char* const kKinds[] = {"exact-timing", "timing",
                                         "timing-again"};
    Genome g(nodes_.size(), 0);
    if (kind != ProbeKind::Exact) {
      const std::vector<int>& ids = knobs_[p.node];
      g[p.node] =
          uint16_t(std::find(ids.begin(), ids.end(), p.knobId) - ids.begin());
    }
    json r = profilePass(g, probeImages_, kKinds[int(kind)], false, nullptr);
    NodeTimes t;
    t.nodeMs = r["node_ms"].get<std::vector<double>>();
    t.nodeSpread = r["node_spread"].get<std::vector<double>>();
    t.batchMs = r["batch_ms"].get<double>();
    return t;
  }

  /// Accuracy pass of \p g over \p images of \p set, then timing rounds
  /// interleaved with the exact program (cached).
  Measured measure(const Genome& g, const std::string& set, int64_t images,
                   int rounds) {
    std::string key = cache_->key(
        fmt::format("measure|{}|{}|{}|{}", set, images, rounds, genomeKey(g)));
    const json* rec = cache_->find(key);
    json fresh;
    if (rec) {
      cache_->noteReuse();
    } else {
      const std::vector<float>& exactOut =
          set == "tune" ? exactTune_ : exactTest_;
      PassResult acc = runPass(&g, set, images, true, false);
      fresh["qos"] = qosValue(spec_, acc.outputs.data(), exactOut.data(),
                              runner_.labels(set).data(), images, classes_);
      std::vector<double> ratios;
      int64_t timing = std::min(timingImages_, runner_.setSize(set));
      double before = medianBatchMs(runPass(nullptr, set, timing, false, false),
                                    timing, batch_);
      // Rounds of the configuration between two exact runs; rounds that
      // disagree by more than 10% get as many again.
      int total = rounds;
      for (int r = 0; r < total; ++r) {
        double ms = medianBatchMs(runPass(&g, set, timing, false, false),
                                  timing, batch_);
        double after = medianBatchMs(
            runPass(nullptr, set, timing, false, false), timing, batch_);
        ratios.push_back((before + after) / 2 / ms);
        before = after;
        if (r + 1 == rounds && rounds >= 2 && disagree(ratios))
          total = 2 * rounds;
      }
      fresh["ratios"] = ratios;
      fresh["ms"] = medianBatchMs(acc, images, batch_);
      cache_->add(key, fresh);
      rec = &fresh;
    }
    Measured m;
    m.qos = (*rec)["qos"].get<double>();
    m.loss =
        qosLoss(spec_, set == "tune" ? exactTuneQos_ : exactTestQos_, m.qos);
    m.ratios = (*rec)["ratios"].get<std::vector<double>>();
    m.speedup = median(m.ratios);
    m.ms = (*rec)["ms"].get<double>();
    m.noisy = disagree(m.ratios);
    return m;
  }

  // --- Phases ---
  void discover();
  void referenceRuns();
  void profile();
  void chainCosts();
  std::vector<Evaluated> search();
  void calibrateAndValidate(const std::vector<Evaluated>& archive);
  void writeOutputs(double seconds);

  const TuneOptions& opts_;
  ProgramRunner& runner_;
  QosSpec spec_;
  double maxLoss_ = 1;
  std::string qosModel_; ///< --qos-model, or p2 when p1 would not fit.
  int64_t batch_ = 1, tuneCount_ = 0, testCount_ = 0, profileImages_ = 0,
          timingImages_ = 0, probeImages_ = 0, classes_ = 0;
  std::unique_ptr<MeasureCache> cache_;
  std::unique_ptr<KnobTimer> timer_;
  std::optional<KnobCosts> costs_; ///< --costs.
  std::string lastKey_;
  int64_t passes_ = 0;

  std::vector<FusedNodeInfo> nodes_;
  std::vector<std::vector<int>> knobs_; ///< Per node: choice -> knob id.
  std::vector<float> exactTune_, exactTest_, exactProfile_;
  double exactTuneQos_ = 0, exactTestQos_ = 0;
  double exactBatchMs_ = 0;
  std::vector<double> exactNodeMs_;

  struct PairInfo {
    size_t node;
    int choice;
    double deltaMs = 0, loss = 0;
    bool pruned = false, noisy = false, profiled = false;
    bool chained = false; ///< deltaMs is its cost in a chain (chainCosts).
    std::string error{};  ///< Why the knob failed to run, if it did.
  };
  std::vector<PairInfo> pairs_;
  std::unique_ptr<Predictor> predictor_;
  std::vector<GeneSpace> genes_;
  std::vector<std::vector<uint16_t>> allowed_; ///< Per node: kept choices.
  std::vector<Genome> uniform_; ///< One knob on every node that kept it.

  // Results.
  struct Candidate {
    Genome genome;
    Point predicted, calibrated;
    std::optional<Measured> tune, test, calibration;
  };
  std::vector<Evaluated> archive_;
  std::vector<Candidate> candidates_;
  Calibration calibration_;
  double searchSeconds_ = 0, profileSeconds_ = 0, validateSeconds_ = 0;
  double exactTestMs_ = 0;
  std::vector<size_t> finalFront_;
};

void Session::discover() {
  // One exact batch makes the program record its fused nodes.
  runPass(nullptr, "tune", std::min(batch_, tuneCount_), false, false);
  nodes_ = programNodes();
  if (nodes_.empty())
    throw UserError("the program ran no tensor operations; nothing to tune");
  for (const FusedNodeInfo& node : nodes_)
    knobs_.push_back(nodeKnobs(node, opts_.hpvmCompatible));
  if (!opts_.costsFile.empty())
    costs_ = readKnobCosts(opts_.costsFile, nodes_, runner_);
  timer_ = std::make_unique<KnobTimer>(
      nodes_.size(), [this](ProbeKind kind, const KnobPair& p) {
        return timingProbe(kind, p);
      });
}

void Session::referenceRuns() {
  ProgressBar bar("exact", 3, !opts_.quiet);
  // The exact outputs of both sets: the reference of every QoS value.
  auto exactOutputs = [&](const std::string& set, int64_t images) {
    std::string key = cache_->key(fmt::format("exact|{}|{}", set, images));
    std::vector<float> out;
    if (const json* rec = cache_->find(key)) {
      cache_->noteReuse();
      out = cache_->outputs(*rec, size_t(images * classes_));
      return std::make_pair(out, (*rec)["total_ms"].get<double>());
    }
    PassResult r = runPass(nullptr, set, images, true, false);
    json rec;
    rec["ms"] = medianBatchMs(r, images, batch_);
    double total = 0;
    for (double t : r.batchSeconds)
      total += t;
    rec["total_ms"] = total * 1e3;
    cache_->add(key, rec, &r.outputs);
    return std::make_pair(std::move(r.outputs), rec["total_ms"].get<double>());
  };
  exactTune_ = exactOutputs("tune", tuneCount_).first;
  bar.update(1);
  const std::vector<int32_t>& tuneLabels = runner_.labels("tune");
  exactTuneQos_ = qosValue(spec_, exactTune_.data(), exactTune_.data(),
                           tuneLabels.data(), tuneCount_, classes_);
  if (testCount_ > 0) {
    auto [out, ms] = exactOutputs("test", testCount_);
    exactTest_ = std::move(out);
    exactTestMs_ = ms;
    exactTestQos_ =
        qosValue(spec_, exactTest_.data(), exactTest_.data(),
                 runner_.labels("test").data(), testCount_, classes_);
  }
  bar.update(2);
  exactProfile_.assign(exactTune_.begin(),
                       exactTune_.begin() + profileImages_ * classes_);
  // Node times of the exact program: median of three node-timed passes,
  // or what the bench-knobs record of --costs measured.
  if (costs_) {
    exactNodeMs_ = costs_->exactNodeMs;
    exactBatchMs_ = costs_->exactBatchMs;
  } else {
    timer_->measureExact();
    exactNodeMs_ = timer_->exactNodeMs();
    exactBatchMs_ = timer_->exactBatchMs();
  }
  bar.update(3);
}

void Session::chainCosts() {
  // Knobs whose layers hand each other low-precision activations (bf16,
  // int8: the exact variants) cost less next to each other than alone:
  // one pass with the knob on every node that takes it measures each
  // node's cost in a chain (the node and the nodes after it up to the next
  // chained one, which share its execution group). A node takes the
  // cheaper of its two costs, so that chains can be predicted at all.
  std::map<int, std::vector<size_t>> byKnob; // knob id -> pair indices
  for (size_t i = 0; i < pairs_.size(); ++i) {
    const PairInfo& p = pairs_[i];
    const int id = knobs_[p.node][size_t(p.choice)];
    const KnobSpec k = knobById(id)->spec;
    if (p.error.empty() && k.variant == Variant::Exact &&
        (k.precision == Precision::BF16 || k.precision == Precision::INT8))
      byKnob[id].push_back(i);
  }
  for (const auto& [id, members] : byKnob) {
    if (members.size() < 2)
      continue;
    Genome g(nodes_.size(), 0);
    for (size_t i : members)
      g[pairs_[i].node] = uint16_t(pairs_[i].choice);
    json r = profilePass(g, probeImages_, fmt::format("chain-timing-{}", id),
                         false, nullptr);
    const std::vector<double> node = r["node_ms"].get<std::vector<double>>();
    for (size_t m = 0; m < members.size(); ++m) {
      PairInfo& p = pairs_[members[m]];
      const size_t end =
          m + 1 < members.size() ? pairs_[members[m + 1]].node : nodes_.size();
      double delta = 0;
      for (size_t n = p.node; n < end; ++n)
        delta += node[n] - exactNodeMs_[n];
      if (delta < p.deltaMs) {
        p.deltaMs = delta;
        p.chained = true;
      }
    }
  }
}

void Session::profile() {
  auto start = Clock::now();
  for (size_t f = 0; f < nodes_.size(); ++f)
    for (size_t c = 1; c < knobs_[f].size(); ++c)
      pairs_.push_back({f, int(c)});
  // Time of every single-node change (KnobTimer), or the bench-knobs
  // record's.
  std::vector<KnobPair> timing;
  for (const PairInfo& p : pairs_)
    timing.push_back({p.node, knobs_[p.node][size_t(p.choice)]});
  std::vector<KnobCost> costs;
  if (costs_)
    for (const KnobPair& k : timing)
      costs.push_back(costs_->at(k.node, k.knobId));
  else
    costs = timer_->time(timing, opts_.timeEveryOffset, !opts_.quiet);
  for (size_t i = 0; i < pairs_.size(); ++i) {
    pairs_[i].deltaMs = costs[i].deltaMs;
    pairs_[i].noisy = costs[i].noisy;
    pairs_[i].error = costs[i].error;
  }
  chainCosts();
  for (PairInfo& p : pairs_) {
    // A knob pays here if it saves at least 0.5% of a batch and 3% of its
    // node's time (twice that when its timing stayed noisy); one that
    // failed to run is left out.
    double needed =
        std::max(0.005 * exactBatchMs_, 0.03 * exactNodeMs_[p.node]) *
        (p.noisy ? 2 : 1);
    // A chained knob stays wherever it saves anything: leaving it out
    // would break the chain its neighbours save through.
    p.pruned = !p.error.empty() ||
               (opts_.prune && p.deltaMs > (p.chained ? 0.0 : -needed));
  }
  Genome exact(nodes_.size(), 0);
  // Accuracy (and output) profile of every knob that pays.
  std::vector<int> choices;
  for (const auto& k : knobs_)
    choices.push_back(int(k.size()));
  predictor_ = std::make_unique<Predictor>(
      spec_, choices, exactProfile_,
      std::vector<int32_t>(runner_.labels("tune").begin(),
                           runner_.labels("tune").begin() + profileImages_),
      classes_, exactBatchMs_);
  size_t toProfile =
      size_t(std::count_if(pairs_.begin(), pairs_.end(),
                           [](const PairInfo& p) { return !p.pruned; }));
  ProgressBar bar("profile", int64_t(toProfile), !opts_.quiet);
  size_t done = 0;
  // P1 keeps every profiled output; past 1 GiB it falls back to P2.
  const double p1Bytes = double(toProfile) * double(profileImages_) *
                         double(classes_) * sizeof(float);
  if (qosModel_ == "p1" && p1Bytes > double(int64_t(1) << 30)) {
    std::printf("note: the output changes of %zu profiled knobs on %lld "
                "images would take %.1f GiB; predicting with p2 (losses "
                "add up) instead\n",
                toProfile, (long long)profileImages_, p1Bytes / (1 << 30));
    qosModel_ = "p2";
  }
  const bool keepOutputs = qosModel_ == "p1";
  for (PairInfo& p : pairs_) {
    if (p.pruned)
      continue;
    Genome g = exact;
    g[p.node] = uint16_t(p.choice);
    std::vector<float> out;
    json r = profilePass(g, profileImages_, "profile", true,
                         keepOutputs ? &out : nullptr);
    p.loss = qosLoss(spec_, predictor_->exactQos(), r["qos"].get<double>());
    p.profiled = true;
    predictor_->setChoice(p.node, p.choice,
                          keepOutputs ? out : std::vector<float>{}, p.loss,
                          p.deltaMs);
    bar.update(int64_t(++done),
               fmt::format("node {} {} loss {:.2f}", nodes_[p.node].ordinal,
                           knobConfName(knobs_[p.node][size_t(p.choice)]),
                           p.loss));
  }
  profileSeconds_ = secondsSince(start);
}

std::vector<Evaluated> Session::search() {
  auto start = Clock::now();
  // Genes over the kept choices only; the genome the search sees indexes
  // allowed_[f], and is mapped back to knob choices for evaluation.
  allowed_.assign(nodes_.size(), {0});
  for (const PairInfo& p : pairs_)
    if (!p.pruned)
      allowed_[p.node].push_back(uint16_t(p.choice));
  genes_.clear();
  for (size_t f = 0; f < nodes_.size(); ++f) {
    GeneSpace gene;
    gene.choices = int(allowed_[f].size());
    gene.neighbours.resize(allowed_[f].size());
    double bestSaving = 0;
    for (size_t a = 0; a < allowed_[f].size(); ++a) {
      const KnobSpec ka = knobById(knobs_[f][allowed_[f][a]])->spec;
      if (a > 0)
        bestSaving =
            std::max(bestSaving, -predictor_->deltaMs(f, allowed_[f][a]));
      for (size_t b = 0; b < allowed_[f].size(); ++b) {
        if (a == b)
          continue;
        const KnobSpec kb = knobById(knobs_[f][allowed_[f][b]])->spec;
        bool sameFamily =
            ka.variant == kb.variant && ka.precision == kb.precision;
        bool nearRate = std::abs(ka.rate - kb.rate) == 1 &&
                        (kb.offset == 0 || kb.offset == ka.offset);
        bool nearOffset =
            ka.rate == kb.rate && std::abs(ka.offset - kb.offset) == 1;
        bool otherPrecision = ka.variant == kb.variant && ka.rate == kb.rate &&
                              ka.offset == kb.offset &&
                              ka.precision != kb.precision;
        bool mildest = (a == 0 || b == 0) &&
                       (ka.variant == Variant::Exact || ka.rate == 4 ||
                        kb.variant == Variant::Exact || kb.rate == 4);
        if ((sameFamily && (nearRate || nearOffset)) || otherPrecision ||
            mildest)
          gene.neighbours[a].push_back(uint16_t(b));
      }
    }
    // Sensitivity: nodes that can save more are mutated more often.
    gene.weight = 0.2 + bestSaving / std::max(exactBatchMs_, 1e-9);
    genes_.push_back(gene);
  }
  auto toChoices = [&](const Genome& g) {
    Genome c(g.size());
    for (size_t f = 0; f < g.size(); ++f)
      c[f] = allowed_[f][g[f]];
    return c;
  };
  // Seeds: every single profiled knob, and the greedy path that adds the
  // knob with the best time saved per loss point, one node at a time.
  std::vector<Genome> seeds;
  std::vector<std::pair<double, std::pair<size_t, uint16_t>>> gains;
  for (size_t f = 0; f < nodes_.size(); ++f)
    for (size_t a = 1; a < allowed_[f].size(); ++a) {
      Genome g(nodes_.size(), 0);
      g[f] = uint16_t(a);
      seeds.push_back(g);
      double saving = -predictor_->deltaMs(f, allowed_[f][a]);
      double loss = std::max(predictor_->loss(f, allowed_[f][a]), 0.0);
      gains.push_back({saving / (loss + 0.05), {f, uint16_t(a)}});
    }
  std::stable_sort(
      gains.begin(), gains.end(),
      [](const auto& a, const auto& b) { return a.first > b.first; });
  Genome path(nodes_.size(), 0);
  std::vector<char> used(nodes_.size(), 0);
  for (const auto& [gain, fa] : gains) {
    if (used[fa.first] || gain <= 0)
      continue;
    used[fa.first] = 1;
    path[fa.first] = fa.second;
    seeds.push_back(path);
  }
  // And one knob on every node that kept it (chains: bf16, int8 ...).
  std::map<int, Genome> uniform;
  for (size_t f = 0; f < nodes_.size(); ++f)
    for (size_t a = 1; a < allowed_[f].size(); ++a) {
      const int id = knobs_[f][allowed_[f][a]];
      auto it = uniform.try_emplace(id, Genome(nodes_.size(), 0)).first;
      it->second[f] = uint16_t(a);
    }
  for (const auto& [id, g] : uniform)
    if (std::count_if(g.begin(), g.end(), [](uint16_t v) { return v; }) > 1) {
      seeds.push_back(g);
      uniform_.push_back(toChoices(g));
    }

  const auto kind =
      qosModel_ == "p2" ? Predictor::Kind::P2 : Predictor::Kind::P1;
  SearchOptions so;
  so.seed = opts_.seed;
  so.budget = opts_.budget;
  // Leave room for prediction error: candidates a little past the largest
  // loss of interest are kept for calibration and validation.
  so.maxLoss = maxLoss_ * 1.5 + 0.5;
  Genome exact(nodes_.size(), 0);
  double exactEmpiricalMs = 0;
  int64_t sinceExact = 0;
  auto evaluate = [&](const Genome& g) -> Point {
    Genome c = toChoices(g);
    if (!opts_.empirical)
      return predictor_->predict(c, kind);
    // Empirical: the candidate measured on the profiling images, against
    // the exact program re-timed every 16 candidates.
    if (sinceExact++ % 16 == 0)
      exactEmpiricalMs = profilePass(exact, profileImages_, "empirical-exact",
                                     false, nullptr)["batch_ms"]
                             .get<double>();
    json r = profilePass(c, profileImages_, "empirical", true, nullptr);
    Point p;
    p.loss = qosLoss(spec_, predictor_->exactQos(), r["qos"].get<double>());
    p.speedup = exactEmpiricalMs / r["batch_ms"].get<double>();
    return p;
  };
  ProgressBar bar(opts_.empirical ? "search*" : "search", opts_.budget,
                  !opts_.quiet);
  std::vector<Evaluated> archive =
      nsga2(genes_, seeds, so, evaluate, [&](const SearchProgress& s) {
        bar.update(s.evaluated,
                   fmt::format("gen {} best {:.2f}x at {:.2f} loss",
                               s.generation, s.best.speedup, s.best.loss));
      });
  for (Evaluated& e : archive)
    e.genome = toChoices(e.genome);
  searchSeconds_ = secondsSince(start);
  return archive;
}

/// Picks up to \p n indices of \p front spread evenly along it (both ends
/// included).
std::vector<size_t> spreadPick(const std::vector<size_t>& front, size_t n) {
  if (front.size() <= n)
    return front;
  std::vector<size_t> out;
  for (size_t k = 0; k < n; ++k) {
    size_t i = n == 1 ? 0 : (k * (front.size() - 1) + (n - 1) / 2) / (n - 1);
    if (out.empty() || out.back() != front[i])
      out.push_back(front[i]);
  }
  return out;
}

void Session::calibrateAndValidate(const std::vector<Evaluated>& archive) {
  auto start = Clock::now();
  archive_ = archive;
  std::vector<Point> predicted;
  for (const Evaluated& e : archive)
    predicted.push_back(e.point);
  const double searchMax = maxLoss_ * 1.5 + 0.5;

  // Calibration (predictive mode): measure configurations spread along the
  // predicted front on the profiling images, fit measured against predicted.
  if (!opts_.empirical && opts_.calibrate > 0) {
    // Half along the predicted front, half among the other feasible
    // points (spread by predicted loss), so that the fit sees both.
    std::vector<size_t> front = paretoFront(predicted, searchMax);
    std::vector<size_t> picks =
        spreadPick(front, size_t(opts_.calibrate + 1) / 2);
    std::vector<size_t> others;
    for (size_t i = 0; i < predicted.size(); ++i)
      if (predicted[i].loss <= searchMax &&
          std::find(picks.begin(), picks.end(), i) == picks.end())
        others.push_back(i);
    std::stable_sort(others.begin(), others.end(), [&](size_t a, size_t b) {
      return predicted[a].loss < predicted[b].loss;
    });
    for (size_t i : spreadPick(
             others, size_t(opts_.calibrate) -
                         std::min(picks.size(), size_t(opts_.calibrate))))
      picks.push_back(i);
    std::vector<Point> pred, meas;
    ProgressBar bar("calibrate", int64_t(picks.size()), !opts_.quiet);
    for (size_t i : picks) {
      Measured m = measure(archive[i].genome, "tune", profileImages_, 1);
      m.loss = qosLoss(spec_, predictor_->exactQos(), m.qos);
      pred.push_back(archive[i].point);
      meas.push_back({m.loss, m.speedup});
      bar.update(int64_t(pred.size()));
    }
    calibration_ = calibrate(pred, meas);
  }
  std::vector<Point> calibrated;
  for (const Point& p : predicted)
    calibrated.push_back(calibration_.apply(p));

  // Validation: the calibrated front within the largest loss (plus a
  // margin), spread, re-measured on the whole tune set.
  const double reach = maxLoss_ + std::max(0.5, 0.25 * maxLoss_);
  std::vector<size_t> front = paretoFront(calibrated, reach);
  std::vector<size_t> picks = spreadPick(front, size_t(opts_.validate));
  // One knob on every node that kept it is validated too when its loss is
  // within reach: the additive prediction undervalues whole chains of
  // bf16 or int8 layers.
  for (const Genome& u : uniform_)
    for (size_t i = 0; i < archive.size(); ++i)
      if (archive[i].genome == u && calibrated[i].loss <= reach &&
          std::find(picks.begin(), picks.end(), i) == picks.end())
        picks.push_back(i);
  std::vector<Point> measured;
  auto validate = [&](const std::vector<size_t>& which) {
    ProgressBar bar("validate", int64_t(which.size()), !opts_.quiet);
    size_t done = 0;
    for (size_t i : which) {
      Candidate c;
      c.genome = archive[i].genome;
      c.predicted = predicted[i];
      c.calibrated = calibrated[i];
      c.tune = measure(c.genome, "tune", tuneCount_, opts_.repeats);
      measured.push_back({c.tune->loss, c.tune->speedup});
      candidates_.push_back(std::move(c));
      bar.update(int64_t(++done));
    }
  };
  validate(picks);
  // Refill: when fewer than half the validated points survive on the
  // measured front, validate as many again from the rest of the calibrated
  // front (predictions that failed are replaced, not just dropped).
  if (paretoFront(measured, maxLoss_).size() * 2 < picks.size()) {
    std::vector<size_t> rest;
    for (size_t i : front)
      if (std::find(picks.begin(), picks.end(), i) == picks.end())
        rest.push_back(i);
    validate(spreadPick(rest, picks.size()));
  }
  // The measured front, then the survivors on the test set.
  std::vector<size_t> kept = paretoFront(measured, maxLoss_);
  // Drop points that are no faster than exact: the exact program is always
  // available without a configuration.
  kept.erase(
      std::remove_if(kept.begin(), kept.end(),
                     [&](size_t i) { return measured[i].speedup <= 1.0; }),
      kept.end());
  if (testCount_ > 0) {
    ProgressBar bar("test", int64_t(kept.size()), !opts_.quiet);
    size_t done = 0;
    for (size_t i : kept) {
      candidates_[i].test =
          measure(candidates_[i].genome, "test", testCount_, 1);
      bar.update(int64_t(++done));
    }
  }
  finalFront_ = kept;
  validateSeconds_ = secondsSince(start);
}

json pointJson(const Point& p) {
  return {{"loss", p.loss}, {"speedup", p.speedup}};
}

json measuredJson(const Measured& m) {
  return {{"qos", m.qos},       {"loss", m.loss},   {"speedup", m.speedup},
          {"ratios", m.ratios}, {"batch_ms", m.ms}, {"noisy", m.noisy}};
}

void Session::writeOutputs(double seconds) {
  // Order: the fastest configuration within the smallest loss of interest
  // first (HPVM's runtime runs the first block), then by loss.
  std::vector<size_t> order = finalFront_;
  auto recLoss = [&](size_t i) {
    const Candidate& c = candidates_[i];
    return c.test ? c.test->loss : c.tune->loss;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return recLoss(a) < recLoss(b); });
  size_t first = order.size();
  for (size_t k = 0; k < order.size(); ++k)
    if (recLoss(order[k]) <= opts_.qosLoss.front() &&
        (first == order.size() || candidates_[order[k]].tune->speedup >
                                      candidates_[order[first]].tune->speedup))
      first = k;
  if (first < order.size())
    std::rotate(order.begin(), order.begin() + long(first),
                order.begin() + long(first) + 1);

  ConfigFile file;
  file.path = opts_.output;
  file.baselineTime = exactTestMs_ > 0 ? exactTestMs_ : exactBatchMs_;
  int n = 0;
  for (size_t i : order) {
    const Candidate& c = candidates_[i];
    Configuration conf = configOf(c.genome, fmt::format("conf{}", ++n));
    conf.speedup = c.tune->speedup;
    conf.energy = 1.0;
    const Measured& rec = c.test ? *c.test : *c.tune;
    conf.accuracy = rec.qos;
    conf.accuracyLoss = rec.loss;
    file.configs.push_back(std::move(conf));
  }
  if (file.configs.empty()) {
    // Nothing beat exact within the budget: the file holds the exact
    // configuration, so that it is still a valid configuration file.
    Configuration conf = configOf(Genome(nodes_.size(), 0), "conf1");
    conf.accuracy = testCount_ > 0 ? exactTestQos_ : exactTuneQos_;
    file.configs.push_back(std::move(conf));
  }
  std::string text = formatConfigFile(file);
  // Every file we write parses in HPVM's grammar (checked, not assumed).
  parseConfigText(text, opts_.output);
  writeFileAtomic(opts_.output, text);

  // JSON record.
  json j;
  j["model"] = runner_.modelName();
  j["settings"] = {{"qos_loss", opts_.qosLoss},
                   {"metric", opts_.metric},
                   {"relative", opts_.relative},
                   {"budget", opts_.budget},
                   {"seed", opts_.seed},
                   {"mode", opts_.empirical ? "empirical" : "predictive"},
                   {"qos_model", qosModel_},
                   {"batch_size", batch_},
                   {"threads", runner_.threads()},
                   {"profile_images", profileImages_},
                   {"timing_images", timingImages_},
                   {"costs", opts_.costsFile.empty() ? json(nullptr)
                                                     : json(opts_.costsFile)},
                   {"tune_images", tuneCount_},
                   {"test_images", testCount_}};
  j["exact"] = {{"tune_qos", exactTuneQos_},
                {"test_qos", exactTestQos_},
                {"batch_ms", exactBatchMs_},
                {"test_ms", exactTestMs_},
                {"node_ms", exactNodeMs_}};
  json nodes = json::array();
  for (size_t f = 0; f < nodes_.size(); ++f) {
    json ops = json::array();
    for (HpvmOp op : nodes_[f].ops)
      ops.push_back(opInfo(op).confName);
    nodes.push_back({{"ordinal", nodes_[f].ordinal},
                     {"first_op_id", nodes_[f].firstOpId},
                     {"ops", ops},
                     {"knobs", knobs_[f]}});
  }
  j["nodes"] = nodes;
  json pairs = json::array();
  size_t pruned = 0, noisy = 0, failed = 0;
  for (const PairInfo& p : pairs_) {
    pruned += p.pruned;
    noisy += p.noisy;
    failed += !p.error.empty();
    json pj = {{"node", nodes_[p.node].ordinal},
               {"knob", knobs_[p.node][size_t(p.choice)]},
               {"delta_ms", p.deltaMs},
               {"pruned", p.pruned},
               {"noisy", p.noisy},
               {"chained", p.chained}};
    if (p.profiled)
      pj["loss"] = p.loss;
    if (!p.error.empty())
      pj["error"] = p.error;
    pairs.push_back(pj);
  }
  j["profile"] = {{"pairs", pairs},
                  {"pruned", pruned},
                  {"noisy", noisy},
                  {"failed", failed},
                  {"seconds", profileSeconds_}};
  json points = json::array();
  for (const Evaluated& e : archive_)
    points.push_back({{"knobs", describe(e.genome)},
                      {"loss", e.point.loss},
                      {"speedup", e.point.speedup},
                      {"calibrated", pointJson(calibration_.apply(e.point))}});
  j["search"] = {{"evaluated", archive_.size()},
                 {"seconds", searchSeconds_},
                 {"points", points}};
  j["calibration"] = {{"samples", calibration_.samples},
                      {"loss_spearman", calibration_.lossSpearman},
                      {"speedup_spearman", calibration_.speedupSpearman},
                      {"loss_mae", calibration_.lossMae},
                      {"speedup_mae", calibration_.speedupMae},
                      {"loss_mae_calibrated", calibration_.lossMaeCal},
                      {"speedup_mae_calibrated", calibration_.speedupMaeCal},
                      {"loss_fit", {calibration_.loss.a, calibration_.loss.b}},
                      {"time_fit", {calibration_.time.a, calibration_.time.b}}};
  json cands = json::array();
  for (size_t i = 0; i < candidates_.size(); ++i) {
    const Candidate& c = candidates_[i];
    json cj = {{"knobs", describe(c.genome)},
               {"predicted", pointJson(c.predicted)},
               {"calibrated", pointJson(c.calibrated)},
               {"tune", measuredJson(*c.tune)},
               {"on_front", std::find(finalFront_.begin(), finalFront_.end(),
                                      i) != finalFront_.end()}};
    if (c.test) {
      cj["test"] = measuredJson(*c.test);
      cj["test_worse_than_tune"] = c.test->loss > c.tune->loss + 0.5;
    }
    cands.push_back(cj);
  }
  j["validated"] = cands;
  json written = json::array();
  size_t hpvmParses = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const std::vector<NodeConfig>& lines = file.configs[k].nodes;
    bool parses = std::all_of(lines.begin(), lines.end(), hpvmParsesCpuLine);
    hpvmParses += parses;
    written.push_back({{"name", file.configs[k].name},
                       {"candidate", order[k]},
                       {"speedup", file.configs[k].speedup},
                       {"loss", file.configs[k].accuracyLoss},
                       {"hpvm_parses", parses}});
  }
  j["written"] = written;
  j["measurements"] = {{"passes", passes_},
                       {"new", cache_->added()},
                       {"reused", cache_->reused()}};
  j["seconds"] = {{"total", seconds},
                  {"profile", profileSeconds_},
                  {"search", searchSeconds_},
                  {"validate", validateSeconds_}};
  j["output"] = opts_.output;
  writeFileAtomic(opts_.jsonFile, j.dump(1) + "\n");

  // Summary.
  std::printf("\n%s: %zu fused nodes, %zu (node, knob) pairs: %zu pruned "
              "(no time saved here), %zu noisy; profile %.1f s, search %lld "
              "%s configurations %.1f s, validation %.1f s\n",
              runner_.modelName().c_str(), nodes_.size(), pairs_.size(), pruned,
              noisy, profileSeconds_, (long long)archive_.size(),
              opts_.empirical ? "measured" : "predicted", searchSeconds_,
              validateSeconds_);
  if (failed > 0)
    std::printf("%zu knobs failed to run and were left out (%s lists "
                "why)\n",
                failed, opts_.jsonFile.c_str());
  if (calibration_.samples > 0)
    std::printf("prediction (%zu measured): loss rank correlation %.2f, mean "
                "error %.2f -> %.2f calibrated; speedup rank correlation "
                "%.2f, mean error %.3f -> %.3f calibrated\n",
                calibration_.samples, calibration_.lossSpearman,
                calibration_.lossMae, calibration_.lossMaeCal,
                calibration_.speedupSpearman, calibration_.speedupMae,
                calibration_.speedupMaeCal);
  std::printf("%-8s %9s %9s %9s %9s  %s\n", "config", "speedup", "tune loss",
              "test qos", "test loss", "knobs");
  std::printf("%-8s %8.2fx %9.2f %9.2f %9.2f  %s\n", "exact", 1.0, 0.0,
              testCount_ > 0 ? exactTestQos_ : exactTuneQos_, 0.0, "-");
  for (size_t k = 0; k < order.size(); ++k) {
    const Candidate& c = candidates_[order[k]];
    bool flag = c.test && c.test->loss > c.tune->loss + 0.5;
    std::printf("%-8s %8.2fx%s %9.2f %9.2f %9.2f%s  %s\n",
                file.configs[k].name.c_str(), c.tune->speedup,
                c.tune->noisy ? "~" : " ", c.tune->loss,
                c.test ? c.test->qos : NAN, c.test ? c.test->loss : NAN,
                flag ? "!" : " ", describe(c.genome).c_str());
  }
  std::printf("fastest within each QoS loss (test set):");
  for (double l : opts_.qosLoss) {
    size_t best = order.size();
    for (size_t k = 0; k < order.size(); ++k)
      if (file.configs[k].accuracyLoss <= l &&
          (best == order.size() ||
           file.configs[k].speedup > file.configs[best].speedup))
        best = k;
    if (best < order.size())
      std::printf("  <=%g: %s %.2fx", l, file.configs[best].name.c_str(),
                  file.configs[best].speedup);
    else
      std::printf("  <=%g: exact", l);
  }
  std::printf("\n(~ noisy timing, ! test loss over 0.5 points above tune "
              "loss)\n");
  if (hpvmParses < order.size())
    std::printf("%zu of %zu configurations use knobs HPVM's own CPU runtime "
                "cannot parse (fp16, bf16 on cpu lines: hpvm_rt only; "
                "--hpvm-compatible avoids them)\n",
                order.size() - hpvmParses, order.size());
  std::printf("wrote %s, %s\n", opts_.output.c_str(), opts_.jsonFile.c_str());
  std::fflush(stdout);
}

/// Runs the plotting script on the JSON record; a failure is reported, not
/// fatal (the configuration file is what matters).
void drawPlot(const TuneOptions& opts) {
  if (opts.noPlot)
    return;
  if (opts.plotScript.empty()) {
    std::printf("no plot: give --plot-script (torch2hpvm-tune passes it) or "
                "set TORCH2HPVM_PLOT_SCRIPT\n");
    return;
  }
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    std::printf("no plot: cannot start the plotting script: %s\n",
                std::strerror(errno));
    return;
  }
  if (pid == 0) {
    std::string png = opts.plotStem + ".png", svg = opts.plotStem + ".svg";
    execl("/usr/bin/python3", "python3", opts.plotScript.c_str(),
          opts.jsonFile.c_str(), png.c_str(), svg.c_str(), (char*)nullptr);
    std::fprintf(stderr, "cannot run /usr/bin/python3: %s\n",
                 std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    std::printf("plot: %s.png, %s.svg\n", opts.plotStem.c_str(),
                opts.plotStem.c_str());
  else
    std::printf("no plot: %s failed (see above)\n", opts.plotScript.c_str());
}

int Session::run() {
  auto start = Clock::now();
  discover();
  json context = {{"tool", "torch2hpvm tune-search 2"},
                  {"model", runner_.modelName()},
                  {"batch_size", batch_},
                  {"threads", runner_.threads()},
                  {"tune_images", tuneCount_},
                  {"test_images", testCount_},
                  {"classes", classes_},
                  {"metric", opts_.metric},
                  {"relative", opts_.relative},
                  {"psnr_threshold", opts_.psnrThreshold},
                  {"profile_images", profileImages_},
                  {"timing_images", timingImages_},
                  {"time_every_offset", opts_.timeEveryOffset},
                  {"hpvm_compatible", opts_.hpvmCompatible}};
  json nodes = json::array();
  for (size_t f = 0; f < nodes_.size(); ++f)
    nodes.push_back({nodes_[f].firstOpId, knobs_[f]});
  context["nodes"] = nodes;
  cache_ = std::make_unique<MeasureCache>(opts_.stateDir, context, opts_.fresh,
                                          opts_.resume, opts_.quiet);
  if (!opts_.quiet) {
    std::printf("%s: tuning %zu fused nodes on this machine (%lld tune "
                "images, profile on %lld, batch %lld, %d threads, %s loss <= "
                "%g, %s, seed %llu, budget %lld)\n",
                runner_.modelName().c_str(), nodes_.size(),
                (long long)tuneCount_, (long long)profileImages_,
                (long long)batch_, runner_.threads(), opts_.metric.c_str(),
                maxLoss_, opts_.empirical ? "empirical" : "predictive",
                (unsigned long long)opts_.seed, (long long)opts_.budget);
    std::fflush(stdout);
  }
  referenceRuns();
  profile();
  std::vector<Evaluated> archive = search();
  calibrateAndValidate(archive);
  writeOutputs(secondsSince(start));
  return 0;
}

} // namespace

int tuneSearch(const TuneOptions& opts, ProgramRunner& runner) {
  gInterrupted = false;
  struct sigaction sa {};
  sa.sa_handler = onInterrupt;
  struct sigaction oldInt {
  }, oldTerm{};
  sigaction(SIGINT, &sa, &oldInt);
  sigaction(SIGTERM, &sa, &oldTerm);
  struct Restore {
    struct sigaction i, t;
    ~Restore() {
      sigaction(SIGINT, &i, nullptr);
      sigaction(SIGTERM, &t, nullptr);
    }
  } restore{oldInt, oldTerm};
  Session session(opts, runner);
  try {
    int rc = session.run();
    drawPlot(opts);
    return rc;
  } catch (const json::exception& e) {
    throw UserError(fmt::format("{}: a cached measurement is not what this "
                                "version records ({}); run again with --fresh",
                                opts.stateDir, e.what()));
  } catch (const Interrupted&) {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "\ninterrupted: every finished measurement is kept in %s; "
                 "run the same command with --resume to continue\n",
                 opts.stateDir.c_str());
    return 130;
  }
}

} // namespace hpvm::rt::tuner
