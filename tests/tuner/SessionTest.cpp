// SessionTest.cpp - whole tune-search sessions against a scripted program
// exported with one batch for the whole set: timing runs on bounded
// sub-batches, --keep-exact nodes stay exact in the written file, an unknown
// node is an error naming the range, --time-limit stops and still writes a
// front, and the record holds the sensitivity report and the QoS goal.
#include "base/Errors.h"
#include "config/Config.h"
#include "tuner/TuneInterrupt.h"
#include "tuner/TuneSession.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace hpvm::rt;
using namespace hpvm::rt::tuner;
using json = nlohmann::json;

namespace {

constexpr int64_t kImages = 1000, kClasses = 10;

/// Three convolution nodes and a dense one, exported with one batch for the
/// whole 1,000-image set. A node takes 10 us per image exactly, less with
/// int8 (0.3x), bf16 (0.5x) or a perforation/sampling knob (0.8x), more with
/// fp16 (1.2x); a knob flips an image's class with a fixed probability
/// (int8 0.2%, bf16 0.1%, perforation/sampling 5%; every knob 30% with
/// \c lossy). Times are reported, not slept, except \c sleepMs per pass.
class ScriptedProgram : public ProgramRunner {
public:
  explicit ScriptedProgram(int sleepMs = 0, bool lossy = false)
      : sleepMs_(sleepMs), lossy_(lossy) {
    for (int k = 0; k < 4; ++k) {
      FusedNodeInfo n;
      n.ordinal = k + 1;
      n.firstOpId = 1 + 3 * k;
      n.ops = k < 3
                  ? std::vector<HpvmOp>{HpvmOp::Conv, HpvmOp::Add, HpvmOp::Relu}
                  : std::vector<HpvmOp>{HpvmOp::Mul, HpvmOp::Add};
      nodes_.push_back(n);
    }
    for (int64_t i = 0; i < kImages; ++i)
      labels_.push_back(int32_t(i % kClasses));
  }

  PassResult pass(const PassRequest& req) override {
    if (sleepMs_ > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(sleepMs_));
    const int64_t batch = req.batch > 0 ? req.batch : batchSize();
    (req.keepOutputs ? accuracyBatches : timingBatches).push_back(batch);
    std::vector<double> factor(nodes_.size(), 1.0), flip(nodes_.size(), 0);
    if (req.config)
      for (size_t f = 0; f < nodes_.size(); ++f) {
        const KnobSpec k = knobById(req.config->nodes[f].ops[0].knobId)->spec;
        bool approx = k.variant != Variant::Exact;
        factor[f] = k.precision == Precision::INT8   ? 0.3
                    : k.precision == Precision::BF16 ? 0.5
                    : k.precision == Precision::FP16 ? 1.2
                    : approx                         ? 0.8
                                                     : 1.0;
        flip[f] = k.precision == Precision::INT8   ? 0.002
                  : k.precision == Precision::BF16 ? 0.001
                  : approx                         ? 0.05
                                                   : 0;
        if (lossy_ && req.config->nodes[f].ops[0].knobId != kKnobFp32)
          flip[f] = 0.3;
      }
    PassResult r;
    for (int64_t start = 0; start < req.images; start += batch) {
      const double n = double(std::min(batch, req.images - start));
      std::vector<double> node;
      double total = 0;
      for (double x : factor) {
        node.push_back(n * 1e-5 * x);
        total += node.back();
      }
      r.batchSeconds.push_back(total);
      if (req.nodeTimes)
        r.nodeSeconds.push_back(node);
    }
    if (req.keepOutputs)
      for (int64_t i = 0; i < req.images; ++i) {
        int32_t cls = labels_[size_t(i)];
        for (size_t f = 0; f < nodes_.size(); ++f)
          if (hash(i, f) < flip[f])
            cls = (cls + 1) % int32_t(kClasses);
        for (int64_t c = 0; c < kClasses; ++c)
          r.outputs.push_back(c == cls ? 5.0f : 0.0f);
      }
    return r;
  }
  const std::vector<FusedNodeInfo>& programNodes() const override {
    return nodes_;
  }
  const std::vector<int32_t>& labels(const std::string&) override {
    return labels_;
  }
  int64_t setSize(const std::string&) const override { return kImages; }
  int64_t classes() const override { return kClasses; }
  int64_t batchSize() const override { return kImages; }
  int threads() const override { return 1; }
  std::string modelName() const override { return "scripted"; }

  /// The batch of every pass that kept its outputs (accuracy), and of
  /// every other one (timing).
  std::vector<int64_t> accuracyBatches, timingBatches;

private:
  /// A fixed pseudo-random number in [0, 1) for image \p i at node \p f.
  static double hash(int64_t i, size_t f) {
    uint64_t x =
        uint64_t(i) * 0x9E3779B97F4A7C15ull + f * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    return double(x >> 11) / double(uint64_t(1) << 53);
  }

  int sleepMs_;
  bool lossy_;
  std::vector<FusedNodeInfo> nodes_;
  std::vector<int32_t> labels_;
};

/// A fresh directory for one session's files.
std::string tempDir() {
  char dir[] = "/tmp/hpvm_session_XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  return dir;
}

TuneOptions optionsIn(const std::string& dir) {
  TuneOptions o;
  o.output = dir + "/confs.txt";
  o.jsonFile = dir + "/confs.json";
  o.stateDir = dir + "/confs.state";
  o.noPlot = o.quiet = true;
  o.budget = 300;
  o.qosLoss = {1, 2};
  o.profileImages = 500;
  o.calibrate = 4;
  o.validate = 6;
  o.repeats = 1;
  return o;
}

json readJson(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return json::parse(in);
}

/// Runs a whole session as tune-search does, signals caught (which also
/// clears a signal an earlier test case left noted).
int runSession(const TuneOptions& o, ProgramRunner& program) {
  InterruptGuard interrupts;
  return TuneSession(o, program).run();
}

void removeDir(const std::string& dir) {
  // Test scratch under /tmp; the names are ours.
  CHECK(std::system(("rm -rf '" + dir + "'").c_str()) == 0);
}

} // namespace

TEST_CASE("timing runs on 64-image batches when one batch is the whole set") {
  const std::string dir = tempDir();
  ScriptedProgram program;
  TuneOptions o = optionsIn(dir);
  o.timeLimit = 0;
  runSession(o, program);
  json j = readJson(o.jsonFile);
  CHECK(j["settings"]["batch_size"] == kImages);
  CHECK(j["settings"]["timing_batch"] == 64);
  // 10 us per image: 8 batches within a second, probes of 4.
  CHECK(j["settings"]["timing_images"] == 512);
  CHECK(j["settings"]["probe_images"] == 256);
  // Every timing pass ran 64-image batches, every accuracy pass the
  // export's.
  REQUIRE(!program.timingBatches.empty());
  REQUIRE(!program.accuracyBatches.empty());
  CHECK(std::count(program.timingBatches.begin(), program.timingBatches.end(),
                   64) == long(program.timingBatches.size()));
  CHECK(std::count(program.accuracyBatches.begin(),
                   program.accuracyBatches.end(),
                   kImages) == long(program.accuracyBatches.size()));
  CHECK(j["time_limit"]["reached"] == false);
  CHECK(j["time_limit"]["stopped_in"].is_null());
  CHECK(j["qos_goal"]["met"] == true);
  // int8 everywhere: 0.3x the time at about 0.8 points.
  double fastest = 0;
  for (const json& w : j["written"])
    fastest = std::max(fastest, w["speedup"].get<double>());
  CHECK(fastest > 3.0);
  // Sensitivity: every node's best knob is an int8 one saving 70% of its
  // exact time per timing batch (0.64 ms of 0.64 ms x 4 nodes).
  REQUIRE(j["sensitivity"].size() == 4);
  for (const json& row : j["sensitivity"]) {
    CHECK(row["knob_name"].get<std::string>().find("int8") !=
          std::string::npos);
    CHECK(row["saving_ms"].get<double>() ==
          doctest::Approx(0.448).epsilon(0.01));
    CHECK(row["saving_share"].get<double>() ==
          doctest::Approx(0.175).epsilon(0.01));
    CHECK(row["loss"].get<double>() < 0.5);
    CHECK(row["keep_exact"] == false);
  }
  removeDir(dir);
}

TEST_CASE("--keep-exact nodes stay exact in every written configuration") {
  const std::string dir = tempDir();
  ScriptedProgram program;
  TuneOptions o = optionsIn(dir);
  o.keepExact = {1, 3};
  runSession(o, program);
  ConfigFile file = parseConfigFile(o.output);
  REQUIRE(!file.configs.empty());
  bool approximated = false;
  for (const Configuration& c : file.configs)
    for (const NodeConfig& line : c.nodes)
      for (const OpChoice& op : line.ops) {
        if (line.name == "1" || line.name == "3")
          CHECK(op.knobId == kKnobFp32);
        else
          approximated |= op.knobId != kKnobFp32;
      }
  CHECK(approximated); // the other nodes did take knobs
  json j = readJson(o.jsonFile);
  CHECK(j["settings"]["keep_exact"] == json::array({1, 3}));
  CHECK(j["sensitivity"][0]["keep_exact"] == true);
  CHECK(j["sensitivity"][0]["knob"].is_null());
  CHECK(j["sensitivity"][1]["keep_exact"] == false);
  for (const json& p : j["profile"]["pairs"])
    CHECK((p["node"] == 2 || p["node"] == 4));
  removeDir(dir);
}

TEST_CASE("--keep-exact names an unknown node and the valid range") {
  const std::string dir = tempDir();
  ScriptedProgram program;
  TuneOptions o = optionsIn(dir);
  o.keepExact = {2, 5};
  std::string message;
  try {
    runSession(o, program);
  } catch (const UserError& e) {
    message = e.what();
  }
  CHECK(message == "--keep-exact: the program has no fused node 5; its nodes "
                   "are numbered 1 to 4");
  removeDir(dir);
}

TEST_CASE("--time-limit stops the run and writes the front found so far") {
  const std::string dir = tempDir();
  // 15 ms per pass: timing alone (hundreds of probes) would take seconds.
  ScriptedProgram program(15);
  TuneOptions o = optionsIn(dir);
  o.timeLimit = 1.0;
  const auto start = std::chrono::steady_clock::now();
  CHECK(runSession(o, program) == 0);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  CHECK(seconds < 1.5);
  json j = readJson(o.jsonFile);
  CHECK(j["time_limit"]["reached"] == true);
  CHECK(j["time_limit"]["seconds"] == 1.0);
  CHECK(j["time_limit"]["stopped_in"] == "timing");
  CHECK(j["time_limit"]["skipped_pairs"].get<int>() > 0);
  CHECK(j["profile"]["skipped"] == j["time_limit"]["skipped_pairs"]);
  // The file is written and parses, with what was found in time.
  ConfigFile file = parseConfigFile(o.output);
  CHECK(!file.configs.empty());
  removeDir(dir);
}

TEST_CASE("a run where no configuration meets the QoS goal says so") {
  const std::string dir = tempDir();
  ScriptedProgram program(0, true); // every knob flips 30% of the images
  TuneOptions o = optionsIn(dir);
  o.qosLoss = {0.5};
  runSession(o, program);
  json j = readJson(o.jsonFile);
  CHECK(j["qos_goal"]["met"] == false);
  CHECK(j["qos_goal"]["loss"] == 0.5);
  CHECK(j["written"].empty());
  // The file still holds one valid block: the exact configuration.
  ConfigFile file = parseConfigFile(o.output);
  REQUIRE(file.configs.size() == 1);
  for (const NodeConfig& line : file.configs[0].nodes)
    for (const OpChoice& op : line.ops)
      CHECK(op.knobId == kKnobFp32);
  removeDir(dir);
}
