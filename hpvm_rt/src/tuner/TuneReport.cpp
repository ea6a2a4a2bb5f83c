// TuneReport.cpp - what tune-search writes: HPVM's configuration file
// (fastest within the smallest loss first), the JSON record of every
// evaluated point, the summary table, and the plot drawn from the record.
#include "tuner/TuneReport.h"

#include "base/FileUtil.h"
#include "config/Config.h"
#include "tuner/NodeKnobs.h"
#include "tuner/TuneSession.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

namespace hpvm::rt::tuner {

using json = nlohmann::json;

namespace {

json pointJson(const Point& p) {
  return {{"loss", p.loss}, {"speedup", p.speedup}};
}

json measuredJson(const Measured& m) {
  return {{"qos", m.qos},       {"loss", m.loss},   {"speedup", m.speedup},
          {"ratios", m.ratios}, {"batch_ms", m.ms}, {"noisy", m.noisy}};
}

} // namespace

void TuneSession::writeOutputs(double seconds) {
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
                   {"timing_batch", timingBatch_},
                   {"probe_images", probeImages_},
                   {"exact_image_ms", exactImageMs_},
                   {"time_limit", opts_.timeLimit},
                   {"keep_exact", opts_.keepExact},
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
  size_t pruned = 0, noisy = 0, failed = 0, skipped = 0;
  for (const PairInfo& p : pairs_) {
    pruned += p.pruned && !p.skipped;
    skipped += p.skipped;
    noisy += p.noisy;
    failed += !p.error.empty();
    json pj = {{"node", nodes_[p.node].ordinal},
               {"knob", knobs_[p.node][size_t(p.choice)]},
               {"delta_ms", p.deltaMs},
               {"pruned", p.pruned},
               {"noisy", p.noisy},
               {"chained", p.chained},
               {"in_chain", p.inChain},
               {"skipped", p.skipped}};
    if (p.profiled)
      pj["loss"] = p.loss;
    if (!p.error.empty())
      pj["error"] = p.error;
    pairs.push_back(pj);
  }
  j["profile"] = {{"pairs", pairs},     {"pruned", pruned},
                  {"noisy", noisy},     {"failed", failed},
                  {"skipped", skipped}, {"seconds", profileSeconds_}};
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
  // Did a written configuration meet the smallest QoS-loss goal, and did
  // the time limit cut the run short?
  const bool goalMet = std::any_of(
      file.configs.begin(), file.configs.end(), [&](const Configuration& c) {
        return !order.empty() && c.accuracyLoss <= opts_.qosLoss.front();
      });
  j["qos_goal"] = {{"loss", opts_.qosLoss.front()}, {"met", goalMet}};
  j["time_limit"] = {
      {"seconds", opts_.timeLimit},
      {"reached", !stoppedIn_.empty()},
      {"stopped_in", stoppedIn_.empty() ? json(nullptr) : json(stoppedIn_)},
      {"skipped_pairs", skipped}};
  const json sensitivity = sensitivityJson();
  j["sensitivity"] = sensitivity;
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
  printSensitivity(sensitivity);
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
  if (hpvmParses < order.size()) {
    std::vector<NodeConfig> lines;
    for (const Configuration& c : file.configs)
      lines.insert(lines.end(), c.nodes.begin(), c.nodes.end());
    std::string names;
    for (const std::string& name : hpvmUnparsedKnobs(lines))
      names += (names.empty() ? "" : ", ") + name;
    std::printf("%zu of %zu configurations use knobs HPVM's own CPU runtime "
                "cannot parse (%s on cpu lines: hpvm_rt only; "
                "--hpvm-compatible avoids them)\n",
                order.size() - hpvmParses, order.size(), names.c_str());
  }
  if (!stoppedIn_.empty())
    std::printf("time limit %.0f s reached during %s: %zu (node, knob) pairs "
                "left out; wrote the best front found so far (%zu "
                "configurations)\n",
                opts_.timeLimit, stoppedIn_.c_str(), skipped, order.size());
  if (!goalMet)
    std::printf("no configuration within %g points of QoS loss beats exact "
                "here%s\n",
                opts_.qosLoss.front(),
                order.empty() ? fmt::format(": {} holds the exact "
                                            "configuration only",
                                            opts_.output)
                                    .c_str()
                              : "");
  std::printf("wrote %s, %s\n", opts_.output.c_str(), opts_.jsonFile.c_str());
  std::fflush(stdout);
}

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
    // argv[0] is the interpreter's file name ("python3" by default).
    const std::string& python = opts.plotPython;
    std::string name = python.substr(python.rfind('/') + 1);
    execl(python.c_str(), name.c_str(), opts.plotScript.c_str(),
          opts.jsonFile.c_str(), png.c_str(), svg.c_str(), (char*)nullptr);
    std::fprintf(stderr, "cannot run %s: %s\n", python.c_str(),
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

} // namespace hpvm::rt::tuner
