// TuneOptions.cpp - the tune-search command line: the option table, its
// checks and derived defaults, and the --help text.
#include "tuner/TuneOptions.h"

#include "base/Errors.h"
#include "base/FileUtil.h"
#include "command/OptionTable.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

namespace hpvm::rt::tuner {

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

double parseDuration(std::string_view option, std::string_view value) {
  auto bad = [&]() {
    return UserError(fmt::format("bad value '{}' for {}: expected seconds "
                                 "(90, 90s), minutes (5m), hours (1h), a "
                                 "sum of them (1m30s), or 0 for no limit",
                                 value, option));
  };
  if (value == "none")
    return 0;
  double total = 0;
  std::string_view rest = value;
  if (rest.empty())
    throw bad();
  while (!rest.empty()) {
    size_t digits = 0;
    while (
        digits < rest.size() &&
        ((rest[digits] >= '0' && rest[digits] <= '9') || rest[digits] == '.'))
      ++digits;
    if (digits == 0)
      throw bad();
    double number = 0;
    try {
      number = parseNumber(option, rest.substr(0, digits), 0);
    } catch (const UserError&) {
      throw bad();
    }
    rest.remove_prefix(digits);
    double unit = 1;
    if (!rest.empty()) {
      if (rest.front() == 'h')
        unit = 3600;
      else if (rest.front() == 'm')
        unit = 60;
      else if (rest.front() != 's')
        throw bad();
      rest.remove_prefix(1);
    } else if (rest.size() != value.size() - digits) {
      throw bad(); // "1m30": a bare number only alone
    }
    total += number * unit;
  }
  return total;
}

namespace {

/// Fused-node ordinals of --keep-exact (checked against the program's
/// nodes when it runs).
std::vector<int> parseNodes(std::string_view option, std::string_view value) {
  std::vector<int> out;
  for (std::string_view item : splitCommas(value)) {
    if (item.empty())
      throw UserError(fmt::format("bad value '{}' for {}: expected fused-node "
                                  "numbers as the summary prints them "
                                  "(1,3,4)",
                                  value, option));
    out.push_back(int(parseCount(option, item, 1)));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

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
     "top1 (default), top5, psnr (outputs against the exact ones), relerr, "
     "or miou (a segmentation map's per-pixel classes against the exact "
     "ones)",
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
    {nullptr, "--time-limit", "TIME",
     "stop searching after TIME (90s, 5m, 1h; 0 = none; default 4m) and "
     "write the best front found so far",
     [](TuneOptions& o, SV n, SV v) { o.timeLimit = parseDuration(n, v); }},
    {nullptr, "--keep-exact", "NODE[,NODE...]",
     "fused nodes (numbered as the summary prints them) that keep the "
     "exact knob",
     [](TuneOptions& o, SV n, SV v) {
       std::vector<int> add = parseNodes(n, v);
       o.keepExact.insert(o.keepExact.end(), add.begin(), add.end());
     }},
    {nullptr, "--timing-images", "N",
     "images of each interleaved timing run (default: 8 timing batches, "
     "fewer when they would take over a second)",
     [](TuneOptions& o, SV n, SV v) { o.timingImages = parseCount(n, v, 1); }},
    {nullptr, "--timing-batch", "N",
     "images per batch of the timing runs (default: the batch size, at most "
     "64); accuracy is always measured at the batch size",
     [](TuneOptions& o, SV n, SV v) { o.timingBatch = parseCount(n, v, 1); }},
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
    {nullptr, "--plot-python", "PATH",
     "Python interpreter that runs the plotting script (default "
     "/usr/bin/python3)",
     [](TuneOptions& o, SV, SV v) { o.plotPython = std::string(v); }},
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
      o.metric != "relerr" && o.metric != "miou")
    throw UserError(fmt::format("bad value '{}' for --qos: expected top1, "
                                "top5, psnr, relerr or miou",
                                o.metric));
  if (o.qosModel != "p1" && o.qosModel != "p2")
    throw UserError(fmt::format("bad value '{}' for --qos-model: expected p1 "
                                "or p2",
                                o.qosModel));
  if (o.fresh && o.resume)
    throw UserError("--fresh and --resume exclude each other");
  std::sort(o.keepExact.begin(), o.keepExact.end());
  o.keepExact.erase(std::unique(o.keepExact.begin(), o.keepExact.end()),
                    o.keepExact.end());
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

} // namespace hpvm::rt::tuner
