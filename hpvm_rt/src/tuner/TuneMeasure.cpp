// TuneMeasure.cpp - how a tune-search session measures: passes of the
// program under a configuration, node-timed profiles and timing probes,
// accuracy passes with interleaved timing rounds, each through the
// measurement cache.
#include "tuner/TuneMeasure.h"

#include "config/Config.h"
#include "tuner/NodeKnobs.h"
#include "tuner/TuneInterrupt.h"
#include "tuner/TuneSession.h"

#include <fmt/format.h>

#include <algorithm>

namespace hpvm::rt::tuner {

using json = nlohmann::json;

bool disagree(const std::vector<double>& ratios) {
  if (ratios.size() < 2)
    return false;
  auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
  return (*hi - *lo) > 0.15 * median(ratios) || spread(ratios) > 0.1;
}

double medianBatchMs(const PassResult& r, int64_t images, int64_t batch) {
  std::vector<double> v = r.batchSeconds;
  if (v.size() > 1 && images % batch != 0)
    v.pop_back();
  return median(v) * 1e3;
}

Configuration TuneSession::configOf(const Genome& g,
                                    const std::string& name) const {
  Configuration c;
  c.name = name;
  for (size_t f = 0; f < nodes_.size(); ++f)
    c.nodes.push_back(nodeLine(nodes_[f], knobs_[f][g[f]]));
  return c;
}

std::string TuneSession::describe(const Genome& g) const {
  std::string s;
  for (size_t f = 0; f < nodes_.size(); ++f)
    if (g[f] != 0)
      s += fmt::format("{}{}:{}", s.empty() ? "" : " ", nodes_[f].ordinal,
                       knobConfName(knobs_[f][g[f]]) + "_" +
                           std::to_string(knobs_[f][g[f]]));
  return s.empty() ? "exact" : s;
}

PassResult TuneSession::runPass(const Genome* g, const std::string& set,
                                int64_t images, bool keepOutputs,
                                bool nodeTimes, int64_t batch) {
  checkInterrupt();
  Configuration config;
  PassRequest req;
  if (g) {
    config = configOf(*g, "tuning");
    req.config = &config;
  }
  // A new configuration or batch size runs a warm batch first (the
  // primitives of a batch size are made at its first batch).
  std::string key = fmt::format("{}|{}", g ? genomeKey(*g) : "exact", batch);
  req.batch = batch;
  req.set = set;
  req.images = images;
  req.keepOutputs = keepOutputs;
  req.nodeTimes = nodeTimes;
  req.warmup = key != lastKey_;
  lastKey_ = key;
  ++passes_;
  return runner_.pass(req);
}

json TuneSession::profilePass(const Genome& g, int64_t images,
                              const std::string& kind, bool keepOutputs,
                              std::vector<float>* outputs, int64_t batch) {
  std::string key = cache_->key(
      fmt::format("{}|tune|{}|{}|b{}", kind, images, genomeKey(g), batch));
  if (const json* rec = cache_->find(key)) {
    cache_->noteReuse();
    if (outputs)
      *outputs = cache_->outputs(*rec, size_t(images * classes_));
    return *rec;
  }
  bool exact = std::all_of(g.begin(), g.end(), [](auto v) { return !v; });
  PassResult r =
      runPass(exact ? nullptr : &g, "tune", images, keepOutputs, true, batch);
  NodeTimes t = nodeTimesOf(r, images, batch);
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

NodeTimes TuneSession::timingProbe(ProbeKind kind, const KnobPair& p) {
  static const char* const kKinds[] = {"exact-timing", "timing",
                                       "timing-again"};
  Genome g(nodes_.size(), 0);
  if (kind != ProbeKind::Exact) {
    const std::vector<int>& ids = knobs_[p.node];
    g[p.node] =
        uint16_t(std::find(ids.begin(), ids.end(), p.knobId) - ids.begin());
  }
  json r = profilePass(g, probeImages_, kKinds[int(kind)], false, nullptr,
                       timingBatch_);
  NodeTimes t;
  t.nodeMs = r["node_ms"].get<std::vector<double>>();
  t.nodeSpread = r["node_spread"].get<std::vector<double>>();
  t.batchMs = r["batch_ms"].get<double>();
  return t;
}

Measured TuneSession::measure(const Genome& g, const std::string& set,
                              int64_t images, int rounds) {
  int64_t timing = std::min(timingImages_, runner_.setSize(set));
  std::string key =
      cache_->key(fmt::format("measure|{}|{}|{}|{}|t{}x{}", set, images, rounds,
                              genomeKey(g), timing, timingBatch_));
  const json* rec = cache_->find(key);
  json fresh;
  if (rec) {
    cache_->noteReuse();
  } else {
    const std::vector<float>& exactOut =
        set == "tune" ? exactTune_ : exactTest_;
    PassResult acc = runPass(&g, set, images, true, false, batch_);
    fresh["qos"] = qosValue(spec_, acc.outputs.data(), exactOut.data(),
                            runner_.labels(set).data(), images, classes_);
    std::vector<double> ratios;
    // Timing rounds on the first timingImages_ images in timing batches.
    auto timed = [&](const Genome* c) {
      return medianBatchMs(runPass(c, set, timing, false, false, timingBatch_),
                           timing, timingBatch_);
    };
    double before = timed(nullptr);
    // Rounds of the configuration between two exact runs; rounds that
    // disagree by more than 10% get as many again.
    int total = rounds;
    for (int r = 0; r < total; ++r) {
      double ms = timed(&g);
      double after = timed(nullptr);
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
  m.loss = qosLoss(spec_, set == "tune" ? exactTuneQos_ : exactTestQos_, m.qos);
  m.ratios = (*rec)["ratios"].get<std::vector<double>>();
  m.speedup = median(m.ratios);
  m.ms = (*rec)["ms"].get<double>();
  m.noisy = disagree(m.ratios);
  return m;
}

} // namespace hpvm::rt::tuner
