// BenchKnobsTest.cpp - the (node, knob) timing shared by bench-knobs and
// tune-search against a scripted probe, the bench-knobs options and their
// errors, and the checks of a bench-knobs record read as tune-search costs.
#include "tuner/BenchKnobs.h"
#include "base/Errors.h"
#include "tuner/KnobTimer.h"
#include "tuner/NodeKnobs.h"

#include "base/FileUtil.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <tuple>
#include <unistd.h>
#include <vector>

using namespace hpvm::rt;
using namespace hpvm::rt::tuner;

namespace {

std::string benchError(std::vector<const char*> words) {
  try {
    parseBenchOptions(int(words.size()), words.data());
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

/// A convolution node and a dense node after it.
std::vector<FusedNodeInfo> twoNodes() {
  FusedNodeInfo conv;
  conv.ordinal = 1;
  conv.firstOpId = 1;
  conv.ops = {HpvmOp::Conv, HpvmOp::Add, HpvmOp::Tanh};
  FusedNodeInfo dense;
  dense.ordinal = 2;
  dense.firstOpId = 4;
  dense.ops = {HpvmOp::Mul, HpvmOp::Add};
  return {conv, dense};
}

/// Every non-exact knob of every node, in nodeKnobs() order.
std::vector<KnobPair> allPairs(const std::vector<FusedNodeInfo>& nodes) {
  std::vector<KnobPair> pairs;
  for (size_t f = 0; f < nodes.size(); ++f) {
    std::vector<int> ids = nodeKnobs(nodes[f]);
    for (size_t k = 1; k < ids.size(); ++k)
      pairs.push_back({f, ids[k]});
  }
  return pairs;
}

/// A program the costs are checked against.
class FakeRunner : public ProgramRunner {
public:
  PassResult pass(const PassRequest&) override { return {}; }
  const std::vector<FusedNodeInfo>& programNodes() const override {
    return nodes_;
  }
  const std::vector<int32_t>& labels(const std::string&) override {
    return labels_;
  }
  int64_t setSize(const std::string&) const override { return 100; }
  int64_t classes() const override { return 10; }
  int64_t batchSize() const override { return 50; }
  int threads() const override { return 1; }
  std::string modelName() const override { return "net"; }

private:
  std::vector<FusedNodeInfo> nodes_;
  std::vector<int32_t> labels_;
};

} // namespace

TEST_CASE("bench-knobs options and their errors") {
  std::vector<const char*> words = {
      "--json",         "out.json",     "--batch",   "50",
      "--knobs",        "121,12",       "--repeats", "3",
      "--every-offset", "--images=200", "-q"};
  BenchOptions o = parseBenchOptions(int(words.size()), words.data());
  CHECK(o.jsonFile == "out.json");
  CHECK(o.batchSize == 50);
  CHECK(o.knobs == std::vector<int>{121, 12});
  CHECK(o.repeats == 3);
  CHECK(o.everyOffset);
  CHECK(o.images == 200);
  CHECK(o.quiet);
  CHECK(benchError({"--repeats", "0"}) ==
        "bad value '0' for --repeats: expected an integer >= 1");
  CHECK(benchError({"--images", "0"}) ==
        "bad value '0' for --images: expected an integer >= 1");
  CHECK(benchError({"--knobs", "121,x"}) ==
        "bad value 'x' for --knobs: expected an integer >= 1");
  CHECK(benchError({"--knobs", "121,99999"}) ==
        "bad value '121,99999' for --knobs: no knob has id 99999");
  CHECK(benchError({"--json"}) == "option '--json' needs a value (FILE)");
  CHECK(benchError({"test"}) == "unexpected argument 'test'");
}

TEST_CASE("KnobTimer: one probe per (node, variant, precision, rate), "
          "exact re-timed every 16 probes") {
  std::vector<FusedNodeInfo> nodes = twoNodes();
  std::vector<KnobPair> pairs = allPairs(nodes);
  int exactProbes = 0;
  std::vector<std::pair<size_t, int>> knobProbes;
  // Exact: 2 ms and 1 ms. A knob of rate r takes 2 / r ms on its node
  // and adds 0.1 ms to the next one.
  auto probe = [&](ProbeKind kind, const KnobPair& p) {
    NodeTimes t;
    t.nodeMs = {2.0, 1.0};
    t.nodeSpread = {0.01, 0.01};
    t.batchMs = 3.0;
    if (kind == ProbeKind::Exact) {
      ++exactProbes;
      return t;
    }
    knobProbes.push_back({p.node, p.knobId});
    t.nodeMs[p.node] /= knobById(p.knobId)->spec.rate;
    if (p.node + 1 < t.nodeMs.size())
      t.nodeMs[p.node + 1] += 0.1;
    return t;
  };
  KnobTimer timer(nodes.size(), probe);
  timer.measureExact();
  CHECK(exactProbes == 3);
  CHECK(timer.exactNodeMs() == std::vector<double>{2.0, 1.0});
  CHECK(timer.exactBatchMs() == 3.0);
  std::vector<KnobCost> costs = timer.time(pairs, false, false);
  REQUIRE(costs.size() == pairs.size());

  std::set<std::tuple<size_t, int, int, int>> works;
  for (const KnobPair& p : pairs) {
    const KnobSpec& k = knobById(p.knobId)->spec;
    works.insert({p.node, int(k.variant), int(k.precision), k.rate});
  }
  CHECK(knobProbes.size() == works.size());
  CHECK(exactProbes == 3 + int(works.size() / 16));
  for (size_t i = 0; i < pairs.size(); ++i) {
    CAPTURE(pairs[i].knobId);
    const KnobSpec& k = knobById(pairs[i].knobId)->spec;
    bool timed =
        std::count(knobProbes.begin(), knobProbes.end(),
                   std::make_pair(pairs[i].node, pairs[i].knobId)) == 1;
    CHECK(timed == (costs[i].timedAs == 0));
    if (!timed)
      CHECK(knobById(costs[i].timedAs)->spec.rate == k.rate);
    double node = 2.0 / (pairs[i].node == 0 ? 1 : 2) / k.rate;
    double next = pairs[i].node == 0 ? 0.1 : 0.0;
    CHECK(costs[i].nodeMs == doctest::Approx(node));
    CHECK(costs[i].nextMs == doctest::Approx(next));
    CHECK(costs[i].deltaMs ==
          doctest::Approx(node - timer.exactNodeMs()[pairs[i].node] + next));
    CHECK(costs[i].error.empty());
  }

  // --every-offset: every pair has its own probe.
  knobProbes.clear();
  costs = timer.time(pairs, true, false);
  CHECK(knobProbes.size() == pairs.size());
  for (const KnobCost& c : costs)
    CHECK(c.timedAs == 0);
}

TEST_CASE("KnobTimer: a knob that fails is recorded and the others go on "
          "and a noisy one is measured again") {
  std::vector<FusedNodeInfo> nodes = twoNodes();
  std::vector<KnobPair> pairs = allPairs(nodes);
  const int failing = pairs.front().knobId;
  const int noisy = pairs.back().knobId;
  int again = 0;
  auto probe = [&](ProbeKind kind, const KnobPair& p) {
    NodeTimes t;
    t.nodeMs = {2.0, 1.0};
    t.nodeSpread = {0.0, 0.0};
    if (kind != ProbeKind::Exact && p.knobId == failing && p.node == 0)
      throw UserError("knob needs a calibration");
    if (kind != ProbeKind::Exact && p.knobId == noisy && p.node == 1) {
      again += kind == ProbeKind::Again;
      t.nodeSpread[1] = kind == ProbeKind::Again ? 0.5 : 0.3;
      t.nodeMs[1] = kind == ProbeKind::Again ? 7 : 0.5;
    }
    return t;
  };
  KnobTimer timer(nodes.size(), probe);
  timer.measureExact();
  std::vector<KnobCost> costs = timer.time(pairs, false, false);
  CHECK(costs.front().error == "knob needs a calibration");
  CHECK(costs.back().noisy);
  CHECK(again == 1);
  // The steadier first measurement is kept.
  CHECK(costs.back().nodeMs == 0.5);
  CHECK(costs.back().spread == 0.3);
  for (size_t i = 1; i + 1 < costs.size(); ++i) {
    CHECK(costs[i].error.empty());
    CHECK_FALSE(costs[i].noisy);
  }
}

TEST_CASE("tune-search --costs: the record must match the program") {
  std::vector<FusedNodeInfo> nodes = twoNodes();
  FakeRunner runner;
  std::string path =
      "/tmp/hpvm_bench_knobs_test_" + std::to_string(getpid()) + ".json";
  nlohmann::json knob = {{"id", 11},        {"ms", 2.0},     {"next_ms", 0.0},
                         {"delta_ms", 0.0}, {"spread", 0.0}, {"noisy", false}};
  nlohmann::json failed = {{"id", 12}, {"error", "no calibration"}};
  nlohmann::json record = {{"tool", "torch2hpvm bench-knobs 1"},
                           {"model", "net"},
                           {"batch_size", 50},
                           {"threads", 1},
                           {"exact_batch_ms", 3.0},
                           {"nodes",
                            {{{"node_id", 1},
                              {"ops", {"conv", "add", "tanh"}},
                              {"exact_ms", 2.0},
                              {"knobs", {knob, failed}}},
                             {{"node_id", 4},
                              {"ops", {"mul", "add"}},
                              {"exact_ms", 1.0},
                              {"knobs", {knob}}}}}};
  auto error = [&](const nlohmann::json& j) {
    writeFileAtomic(path, j.dump());
    try {
      readKnobCosts(path, nodes, runner);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(error(record) == "(no error)");
  KnobCosts costs = readKnobCosts(path, nodes, runner);
  CHECK(costs.exactBatchMs == 3.0);
  CHECK(costs.exactNodeMs == std::vector<double>{2.0, 1.0});
  CHECK(costs.at(0, 11).nodeMs == 2.0);
  CHECK(costs.at(0, 12).error == "no calibration");
  CHECK_THROWS_WITH(costs.at(1, 12),
                    (path + ": no time for knob fp16_12 on fused node 2 (the "
                            "record was made with --knobs; tune-search needs "
                            "every knob it searches)")
                        .c_str());

  nlohmann::json j = record;
  j["batch_size"] = 64;
  CHECK(error(j) == path + ": the record was made with batch size 64, but "
                           "this run uses batch size 50");
  j = record;
  j["threads"] = 2;
  CHECK(error(j) == path + ": the record was made with 2 threads, but this "
                           "run uses 1 thread");
  j = record;
  j["model"] = "other";
  CHECK(error(j) == path + ": the record was made with model 'other', but "
                           "this run uses model 'net'");
  j = record;
  j["nodes"][1]["ops"] = {"mul"};
  CHECK(error(j) == path + ": fused node 2 is 'mul' (node id 4) there but "
                           "'mul add' (node id 4) in this program");
  j = record;
  j["nodes"].erase(1);
  CHECK(error(j) == path + ": the record has 1 fused nodes, but this "
                           "program has 2");
  j = record;
  j.erase("tool");
  CHECK(error(j) == path + ": not a JSON record of bench-knobs --json");
  std::remove(path.c_str());
  CHECK(error(record) == "(no error)");
  std::remove(path.c_str());
  CHECK_THROWS_WITH(readKnobCosts(path, nodes, runner),
                    (path + ": cannot open the bench-knobs record: No such "
                            "file or directory")
                        .c_str());
}
