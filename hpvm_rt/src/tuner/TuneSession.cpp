// TuneSession.cpp - the steps of a tune-search run: discover the fused
// nodes and their knobs, run the exact program, profile every (node, knob),
// search the speedup/loss front, calibrate the prediction and validate the
// front on the tune and test sets.
#include "tuner/TuneSession.h"

#include "base/Errors.h"
#include "command/Progress.h"
#include "config/Config.h"
#include "tuner/NodeKnobs.h"
#include "tuner/TuneMeasure.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>
#include <utility>

namespace hpvm::rt::tuner {

using json = nlohmann::json;

TuneSession::TuneSession(const TuneOptions& opts, ProgramRunner& runner)
    : opts_(opts), runner_(runner) {
  using M = QosSpec::Metric;
  spec_.metric = opts.metric == "top5"     ? M::Top5
                 : opts.metric == "psnr"   ? M::Psnr
                 : opts.metric == "relerr" ? M::RelErr
                 : opts.metric == "miou"   ? M::MIoU
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
  // Timing runs in batches of at most 64 images whatever the export's batch
  // (one batch may be the whole 5,000-image set); their image counts are
  // set in discover(), once the exact program's speed is known.
  timingBatch_ =
      std::min(opts.timingBatch.value_or(std::min(batch_, kDefaultTimingBatch)),
               tuneCount_);
  classes_ = runner.classes();
  if (spec_.metric == M::MIoU) {
    const std::array<int64_t, 3> map = runner.map();
    if (map[0] == 0)
      throw UserError(
          "--qos miou needs a segmentation map: output 0 of N x C x H x W "
          "scores, C > 1 classes and more than one pixel; this model's "
          "output 0 is not (tune against the exact outputs with --qos "
          "relerr or psnr)");
    spec_.mapChannels = map[0];
    spec_.mapPixels = map[1] * map[2];
  }
  if (spec_.metric == M::Top1 || spec_.metric == M::Top5) {
    // Top-k compares a classifier's scores with its labels.
    if (runner.outputs() > 1)
      throw UserError(fmt::format(
          "--qos {} needs a classifier's single output; this model has {} "
          "outputs: tune against the exact outputs with --qos relerr or psnr",
          opts.metric, runner.outputs()));
    for (const char* set : {"tune", "test"})
      if ((std::string(set) == "tune" || testCount_ > 0) &&
          runner.labels(set).empty())
        throw UserError(fmt::format(
            "--qos {} needs labels, and the {} set has none: tune against "
            "the exact outputs with --qos relerr or psnr",
            opts.metric, set));
  }
}

bool TuneSession::pastLimit(double share, const char* phase, double upcoming) {
  if (opts_.timeLimit <= 0 ||
      secondsSince(start_) + upcoming < share * opts_.timeLimit)
    return false;
  if (stoppedIn_.empty())
    stoppedIn_ = phase;
  return true;
}

double TuneSession::measureSeconds(int64_t images, int rounds) const {
  // The accuracy pass, then 2 rounds + 1 exact timing passes (each with a
  // warm batch).
  const int64_t timing = timingImages_ + timingBatch_;
  return double(images + (2 * rounds + 1) * timing) * exactImageMs_ * 1e-3;
}

void TuneSession::discover() {
  // One exact timing batch (after a warm one) makes the program record its
  // fused nodes and gives its speed.
  PassResult first =
      runPass(nullptr, "tune", timingBatch_, false, false, timingBatch_);
  exactImageMs_ = first.batchSeconds.empty()
                      ? 0
                      : first.batchSeconds.front() * 1e3 / double(timingBatch_);
  // Timing passes: up to 8 timing batches (probes 4), in powers of two
  // down to 2 while the exact program would take over a second (probes
  // a quarter of a second).
  auto batchesWithin = [&](int64_t most, double ms) {
    int64_t n = most;
    while (n > 2 && double(n * timingBatch_) * exactImageMs_ > ms)
      n /= 2;
    return n * timingBatch_;
  };
  timingImages_ =
      std::min(opts_.timingImages.value_or(batchesWithin(8, 1000)), tuneCount_);
  probeImages_ = std::min(
      {batchesWithin(4, 250), timingImages_, profileImages_, tuneCount_});
  nodes_ = runner_.programNodes();
  if (nodes_.empty())
    throw UserError("the program ran no tensor operations; nothing to tune");
  for (const FusedNodeInfo& node : nodes_)
    knobs_.push_back(nodeKnobs(node, opts_.hpvmCompatible));
  keepExact_.assign(nodes_.size(), 0);
  for (int n : opts_.keepExact) {
    if (n < 1 || size_t(n) > nodes_.size())
      throw UserError(fmt::format(
          "--keep-exact: the program has no fused node {}; its nodes are "
          "numbered 1 to {}",
          n, nodes_.size()));
    keepExact_[size_t(n - 1)] = 1;
  }
  if (!opts_.costsFile.empty())
    costs_ = readKnobCosts(opts_.costsFile, nodes_, runner_);
  timer_ = std::make_unique<KnobTimer>(
      nodes_.size(), [this](ProbeKind kind, const KnobPair& p) {
        return timingProbe(kind, p);
      });
}

void TuneSession::referenceRuns() {
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
    PassResult r = runPass(nullptr, set, images, true, false, batch_);
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

void TuneSession::chainCosts() {
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
    if (p.error.empty() && !p.skipped && k.variant == Variant::Exact &&
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
                         false, nullptr, timingBatch_);
    const std::vector<double> node = r["node_ms"].get<std::vector<double>>();
    for (size_t m = 0; m < members.size(); ++m) {
      PairInfo& p = pairs_[members[m]];
      p.inChain = true;
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

void TuneSession::profile() {
  auto start = Clock::now();
  // Nodes --keep-exact names take no knob at all.
  for (size_t f = 0; f < nodes_.size(); ++f)
    for (size_t c = 1; c < knobs_[f].size() && !keepExact_[f]; ++c)
      pairs_.push_back({f, int(c)});
  // Time of every single-node change (KnobTimer), or the bench-knobs
  // record's.
  // Timed family by family, so that a time limit leaves out the least
  // promising: exact int8 and bf16 on every node first (whole chains of
  // them are what saves most), then their approximations, then fp32
  // approximations, fp16 last; within a family knob by knob, node by node.
  auto rank = [&](const PairInfo& p) {
    const KnobSpec k = knobById(knobs_[p.node][size_t(p.choice)])->spec;
    const bool exact = k.variant == Variant::Exact;
    const int family = k.precision == Precision::INT8   ? 0
                       : k.precision == Precision::BF16 ? 1
                       : k.precision == Precision::FP32 ? 4
                                                        : 5;
    return std::make_tuple(family < 4 ? (exact ? family : family + 2) : family,
                           k.id, p.node);
  };
  std::vector<size_t> timingOrder(pairs_.size());
  for (size_t i = 0; i < timingOrder.size(); ++i)
    timingOrder[i] = i;
  std::stable_sort(
      timingOrder.begin(), timingOrder.end(),
      [&](size_t a, size_t b) { return rank(pairs_[a]) < rank(pairs_[b]); });
  auto unpermute = [&](const std::vector<KnobCost>& ordered) {
    std::vector<KnobCost> out(ordered.size());
    for (size_t k = 0; k < ordered.size(); ++k)
      out[timingOrder[k]] = ordered[k];
    return out;
  };
  std::vector<KnobPair> timing;
  for (size_t i : timingOrder)
    timing.push_back(
        {pairs_[i].node, knobs_[pairs_[i].node][size_t(pairs_[i].choice)]});
  std::vector<KnobCost> costs;
  if (costs_) {
    for (const KnobPair& k : timing)
      costs.push_back(costs_->at(k.node, k.knobId));
    costs = unpermute(costs);
  } else {
    costs = timer_->time(timing, opts_.timeEveryOffset, !opts_.quiet,
                         [this] { return pastLimit(0.3, "timing"); });
    costs = unpermute(costs);
  }
  for (size_t i = 0; i < pairs_.size(); ++i) {
    pairs_[i].deltaMs = costs[i].deltaMs;
    pairs_[i].noisy = costs[i].noisy;
    pairs_[i].error = costs[i].error;
    pairs_[i].skipped = costs[i].skipped;
  }
  chainCosts();
  for (PairInfo& p : pairs_) {
    // A knob pays here if it saves at least 0.5% of a batch and 3% of its
    // node's time (twice that when its timing stayed noisy); one that
    // failed to run is left out.
    double needed =
        std::max(0.005 * exactBatchMs_, 0.03 * exactNodeMs_[p.node]) *
        (p.noisy ? 2 : 1);
    // A knob of a chain (int8, bf16) stays wherever it runs, even where
    // it costs time itself: leaving it out breaks the chain its neighbours
    // save through (ResNet-18's 1-channel first layer and a 1x1 shortcut
    // in int8 cost a little each, and left out in fp32 they cost the
    // int8 network 12-20%). The search and the validation of one knob on
    // every node decide.
    p.pruned = !p.error.empty() || p.skipped ||
               (opts_.prune && !p.inChain && p.deltaMs > -needed);
  }
  Genome exact(nodes_.size(), 0);
  // Accuracy (and output) profile of every knob that pays.
  std::vector<int> choices;
  for (const auto& k : knobs_)
    choices.push_back(int(k.size()));
  // The profiled images' labels (none for a model without them: its
  // metric compares outputs).
  const std::vector<int32_t>& tuneLabels = runner_.labels("tune");
  predictor_ = std::make_unique<Predictor>(
      spec_, choices, exactProfile_,
      tuneLabels.empty()
          ? std::vector<int32_t>{}
          : std::vector<int32_t>(tuneLabels.begin(),
                                 tuneLabels.begin() + profileImages_),
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
  // Family by family as they were timed (int8 and bf16 chains first), the
  // knobs that save most first within a family, so that a time limit
  // leaves out the least useful ones.
  std::vector<size_t> order;
  for (size_t i = 0; i < pairs_.size(); ++i)
    if (!pairs_[i].pruned)
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int fa = std::get<0>(rank(pairs_[a])),
              fb = std::get<0>(rank(pairs_[b]));
    return fa != fb ? fa < fb : pairs_[a].deltaMs < pairs_[b].deltaMs;
  });
  for (size_t i : order) {
    PairInfo& p = pairs_[i];
    if (pastLimit(0.5, "profile", measureSeconds(profileImages_, 0) / 3)) {
      p.pruned = p.skipped = true;
      continue;
    }
    Genome g = exact;
    g[p.node] = uint16_t(p.choice);
    std::vector<float> out;
    json r = profilePass(g, profileImages_, "profile", true,
                         keepOutputs ? &out : nullptr, batch_);
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

std::vector<Evaluated> TuneSession::search() {
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
  so.stop = [this] { return pastLimit(0.55, "search"); };
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
                                     false, nullptr, timingBatch_)["batch_ms"]
                             .get<double>();
    json r = profilePass(c, profileImages_, "empirical", true, nullptr,
                         timingBatch_);
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

namespace {

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

} // namespace

void TuneSession::calibrateAndValidate(const std::vector<Evaluated>& archive) {
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
      if (pastLimit(0.62, "calibrate", measureSeconds(profileImages_, 1)))
        break;
      Measured m = measure(archive[i].genome, "tune", profileImages_, 1);
      m.loss = qosLoss(spec_, predictor_->exactQos(), m.qos);
      pred.push_back(archive[i].point);
      meas.push_back({m.loss, m.speedup});
      bar.update(int64_t(pred.size()));
    }
    if (!pred.empty())
      calibration_ = calibrate(pred, meas);
  }
  std::vector<Point> calibrated;
  for (const Point& p : predicted)
    calibrated.push_back(calibration_.apply(p));

  // Validation: the calibrated front within the largest loss (plus a
  // margin), spread, re-measured on the whole tune set.
  const double reach = maxLoss_ + std::max(0.5, 0.25 * maxLoss_);
  std::vector<size_t> front = paretoFront(calibrated, reach);
  // One knob on every node that kept it is validated first when its loss
  // is within reach: the additive prediction undervalues whole chains of
  // bf16 or int8 layers. Then the spread front, fastest first, so that a
  // time limit keeps the most useful points.
  std::vector<size_t> picks;
  for (const Genome& u : uniform_)
    for (size_t i = 0; i < archive.size(); ++i)
      if (archive[i].genome == u && calibrated[i].loss <= reach &&
          std::find(picks.begin(), picks.end(), i) == picks.end())
        picks.push_back(i);
  std::vector<size_t> spread = spreadPick(front, size_t(opts_.validate));
  std::stable_sort(spread.begin(), spread.end(), [&](size_t a, size_t b) {
    return calibrated[a].speedup > calibrated[b].speedup;
  });
  for (size_t i : spread)
    if (std::find(picks.begin(), picks.end(), i) == picks.end())
      picks.push_back(i);
  std::vector<Point> measured;
  auto validate = [&](const std::vector<size_t>& which) {
    ProgressBar bar("validate", int64_t(which.size()), !opts_.quiet);
    size_t done = 0;
    for (size_t i : which) {
      if (pastLimit(0.85, "validate",
                    measureSeconds(tuneCount_, opts_.repeats)))
        break;
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
  if (stoppedIn_.empty() &&
      paretoFront(measured, maxLoss_).size() * 2 < picks.size()) {
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
      if (pastLimit(0.97, "test", measureSeconds(testCount_, 1)))
        break;
      candidates_[i].test =
          measure(candidates_[i].genome, "test", testCount_, 1);
      bar.update(int64_t(++done));
    }
  }
  finalFront_ = kept;
  validateSeconds_ = secondsSince(start);
}

int TuneSession::run() {
  start_ = Clock::now();
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
                  {"timing_batch", timingBatch_},
                  {"keep_exact", opts_.keepExact},
                  {"time_every_offset", opts_.timeEveryOffset},
                  {"hpvm_compatible", opts_.hpvmCompatible},
                  // A rebuilt program, new weights or data: measure anew.
                  {"program", runner_.fingerprint()}};
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
    std::printf("timing on %lld-image batches: probes of %lld images, "
                "validation rounds of %lld (exact: %.3f ms per image); ",
                (long long)timingBatch_, (long long)probeImages_,
                (long long)timingImages_, exactImageMs_);
    if (opts_.timeLimit > 0)
      std::printf("time limit %.0f s\n", opts_.timeLimit);
    else
      std::printf("no time limit\n");
    std::fflush(stdout);
  }
  referenceRuns();
  profile();
  std::vector<Evaluated> archive = search();
  calibrateAndValidate(archive);
  writeOutputs(secondsSince(start_));
  return 0;
}

} // namespace hpvm::rt::tuner
