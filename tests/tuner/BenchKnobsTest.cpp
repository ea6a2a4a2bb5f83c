// BenchKnobsTest.cpp - the (node, knob) timing shared by bench-knobs and
// tune-search against a scripted probe, and the bench-knobs options and
// their errors.
#include "tuner/BenchKnobs.h"

#include "driver/FileUtil.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using namespace hpvm::rt;
using namespace hpvm::rt::tuner;

namespace {

std::string benchError(std::vector<const char*> words) {
  try {
    parseBenchOptions(int(words.size()), words.data());
  } catch (const RunError& e) {
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
      throw ConfigError("knob needs a calibration");
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
