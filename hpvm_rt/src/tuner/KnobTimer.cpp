// KnobTimer.cpp - the time of one (fused node, knob) on this machine:
// per-node medians of node-timed probes, the exact reference refreshed
// between them, noisy probes taken again.
#include "tuner/KnobTimer.h"

#include "base/Errors.h"
#include "command/Progress.h"
#include "tuner/Search.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace hpvm::rt::tuner {

double spread(std::vector<double> v) {
  if (v.size() < 4)
    return 0;
  std::sort(v.begin(), v.end());
  double q1 = v[v.size() / 4], q3 = v[(3 * v.size()) / 4];
  double m = median(v);
  return m > 0 ? (q3 - q1) / m : 0;
}

NodeTimes nodeTimesOf(const PassResult& r, int64_t images, int64_t batch) {
  size_t batches = r.nodeSeconds.size();
  if (batches > 1 && images % batch != 0)
    --batches;
  size_t nodes = batches ? r.nodeSeconds.front().size() : 0;
  NodeTimes t;
  for (size_t f = 0; f < nodes; ++f) {
    std::vector<double> v;
    for (size_t b = 0; b < batches; ++b)
      v.push_back(r.nodeSeconds[b][f] * 1e3);
    t.nodeMs.push_back(median(v));
    t.nodeSpread.push_back(spread(v));
  }
  std::vector<double> whole = r.batchSeconds;
  if (whole.size() > 1 && images % batch != 0)
    whole.pop_back();
  t.batchMs = median(whole) * 1e3;
  return t;
}

namespace {

/// Per-node medians of several measurements of the same thing.
NodeTimes medianOf(const std::vector<NodeTimes>& runs) {
  if (runs.size() == 1)
    return runs.front();
  NodeTimes t;
  std::vector<double> batch;
  for (const NodeTimes& r : runs)
    batch.push_back(r.batchMs);
  t.batchMs = median(batch);
  for (size_t f = 0; f < runs.front().nodeMs.size(); ++f) {
    std::vector<double> ms, sp;
    for (const NodeTimes& r : runs) {
      ms.push_back(r.nodeMs[f]);
      sp.push_back(r.nodeSpread[f]);
    }
    t.nodeMs.push_back(median(ms));
    t.nodeSpread.push_back(median(sp));
  }
  return t;
}

/// Knobs that do the same work: same node, variant, precision and rate.
std::tuple<size_t, int, int, int> workOf(const KnobPair& p) {
  const KnobSpec& k = knobById(p.knobId)->spec;
  return {p.node, int(k.variant), int(k.precision), k.rate};
}

} // namespace

KnobTimer::KnobTimer(size_t nodes, ProbeFn probe, int repeats)
    : nodes_(nodes), probe_(std::move(probe)), repeats_(repeats) {}

NodeTimes KnobTimer::measure(ProbeKind kind, const KnobPair& pair) {
  std::vector<NodeTimes> runs;
  for (int r = 0; r < repeats_; ++r) {
    runs.push_back(probe_(kind, pair));
    HPVM_ASSERT(runs.back().nodeMs.size() == nodes_,
                fmt::format("a probe timed {} fused nodes; the program has {}",
                            runs.back().nodeMs.size(), nodes_));
  }
  return medianOf(runs);
}

void KnobTimer::measureExact() {
  std::vector<NodeTimes> runs;
  for (int rep = 0; rep < 3; ++rep)
    runs.push_back(measure(ProbeKind::Exact, {}));
  NodeTimes t = medianOf(runs);
  exactNodeMs_ = t.nodeMs;
  exactSpread_ = t.nodeSpread;
  exactBatchMs_ = t.batchMs;
}

std::vector<KnobCost> KnobTimer::time(const std::vector<KnobPair>& pairs,
                                      bool everyOffset, bool progress,
                                      const std::function<bool()>& stop) {
  std::vector<KnobCost> costs(pairs.size());
  // The exact reference next to the probes, refreshed every 16 of them.
  std::vector<double> ref = exactNodeMs_;
  auto setCost = [&](KnobCost& c, const NodeTimes& t, size_t f) {
    c.nodeMs = t.nodeMs[f];
    c.spread = t.nodeSpread[f];
    c.nextMs = f + 1 < nodes_ ? t.nodeMs[f + 1] - ref[f + 1] : 0;
    c.deltaMs = (t.nodeMs[f] - ref[f]) + c.nextMs;
  };
  std::map<std::tuple<size_t, int, int, int>, size_t> timed;
  size_t total = 0;
  {
    std::set<std::tuple<size_t, int, int, int>> works;
    for (const KnobPair& p : pairs)
      total += everyOffset || works.insert(workOf(p)).second;
  }
  std::optional<ProgressBar> bar; // redrawn when an error adds a probe
  size_t done = 0, barTotal = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const KnobPair& p = pairs[i];
    auto same = everyOffset ? timed.end() : timed.find(workOf(p));
    if (same != timed.end()) {
      costs[i] = costs[same->second];
      costs[i].timedAs = pairs[same->second].knobId;
      continue;
    }
    if (stop && stop()) {
      costs[i].skipped = true;
      continue;
    }
    if (done % 16 == 15) {
      NodeTimes now = measure(ProbeKind::Exact, {});
      for (size_t f = 0; f < nodes_; ++f)
        ref[f] = (ref[f] + now.nodeMs[f]) / 2;
    }
    KnobCost& c = costs[i];
    try {
      setCost(c, measure(ProbeKind::Knob, p), p.node);
      if (c.spread > 0.2) { // noisy: measure again, keep the steadier run
        NodeTimes again = measure(ProbeKind::Again, p);
        if (again.nodeSpread[p.node] < c.spread)
          setCost(c, again, p.node);
        c.noisy = c.spread > 0.2;
      }
      timed.emplace(workOf(p), i);
    } catch (const UserError& e) {
      c = KnobCost{};
      c.error = e.what();
      // A knob of the same work after this one is timed in its place.
      for (size_t j = i + 1; j < pairs.size(); ++j)
        if (!everyOffset && workOf(pairs[j]) == workOf(p)) {
          ++total;
          break;
        }
    }
    if (!bar || barTotal != total)
      bar.emplace("timing", int64_t(barTotal = total), progress, "probes");
    bar->update(int64_t(++done),
                fmt::format("node {} {}_{}", p.node + 1,
                            knobById(p.knobId)->confName, p.knobId));
  }
  return costs;
}

} // namespace hpvm::rt::tuner
