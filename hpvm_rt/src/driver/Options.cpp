// Options.cpp - table-driven parser of the generated programs' command line.
#include "driver/Options.h"

#include "base/Errors.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>

namespace hpvm::rt {

namespace {

const OptionSpec<RunOptions> kOptions[] = {
    {"-c", "--config-file", "FILE",
     "configuration file (default: the one baked in at export)",
     [](RunOptions& o, std::string_view, std::string_view v) {
       o.configFile = std::string(v);
     }},
    {nullptr, "--config", "NAME|INDEX",
     "configuration of the file to use: its name, or its 0-based position "
     "(default: the first)",
     [](RunOptions& o, std::string_view, std::string_view v) {
       o.configSelector = std::string(v);
     }},
    {nullptr, "--qos-loss", "L",
     "use the fastest configuration of the file whose recorded QoS loss is "
     "at most L (exact FP32 if none is)",
     [](RunOptions& o, std::string_view n, std::string_view v) {
       o.qosLoss = parseNumber(n, v, 0);
     }},
    {nullptr, "--all-configs", nullptr,
     "run the exact program and every configuration of the file; print a "
     "table",
     [](RunOptions& o, std::string_view, std::string_view) {
       o.allConfigs = true;
     }},
    {"-b", "--batch-size", "N",
     "images per batch; 0 = the whole set in one batch (default: the "
     "model's)",
     [](RunOptions& o, std::string_view n, std::string_view v) {
       o.batchSize = parseCount(n, v, 0);
     }},
    {"-n", "--limit", "N", "run only the first N images of the set",
     [](RunOptions& o, std::string_view n, std::string_view v) {
       o.limit = parseCount(n, v, 1);
     }},
    {nullptr, "--repeat", "N", "run the whole set N times (for timing)",
     [](RunOptions& o, std::string_view n, std::string_view v) {
       o.repeat = parseCount(n, v, 1);
     }},
    {nullptr, "--print-time", nullptr,
     "print per-batch time (mean, median, min, max, std) and images/s",
     [](RunOptions& o, std::string_view, std::string_view) {
       o.printTime = true;
     }},
    {"-o", "--output", "FILE.npy",
     "write the output tensor (images x classes, float32) as .npy",
     [](RunOptions& o, std::string_view, std::string_view v) {
       o.outputNpy = std::string(v);
     }},
    {nullptr, "--threads", "N",
     "threads for the kernels; 0 = all cores (default: HPVM_NUM_THREADS or "
     "all cores)",
     [](RunOptions& o, std::string_view n, std::string_view v) {
       o.threads = static_cast<int>(parseCount(n, v, 0, kMaxThreads));
     }},
    {nullptr, "--model-dir", "DIR",
     "directory holding weights/ and the dataset files (default: the "
     "export's)",
     [](RunOptions& o, std::string_view, std::string_view v) {
       o.modelDir = std::string(v);
     }},
    {nullptr, "--json", "FILE", "write the results as JSON",
     [](RunOptions& o, std::string_view, std::string_view v) {
       o.jsonFile = std::string(v);
     }},
    {nullptr, "--profile", "FILE.json",
     "per fused node and per op: calls, time, FLOPs, GFLOP/s, knob (also "
     "printed)",
     [](RunOptions& o, std::string_view, std::string_view v) {
       o.profileFile = std::string(v);
     }},
    {nullptr, "--trace", "FILE.json",
     "Chrome trace-event file of every op call (open in Perfetto)",
     [](RunOptions& o, std::string_view, std::string_view v) {
       o.traceFile = std::string(v);
     }},
    {nullptr, "--log-calls", "FILE.json", "one JSON record per op call",
     [](RunOptions& o, std::string_view, std::string_view v) {
       o.callLogFile = std::string(v);
     }},
    {"-q", "--quiet", nullptr, "print only the accuracy (no progress bar)",
     [](RunOptions& o, std::string_view, std::string_view) { o.quiet = true; }},
    {"-h", "--help", nullptr, "print this help and exit",
     [](RunOptions& o, std::string_view, std::string_view) { o.help = true; }},
};

} // namespace

RunOptions parseRunOptions(int argc, const char* const* argv) {
  RunOptions opts;
  bool setGiven = false;
  parseOptionTable(argc, argv, 1, kOptions, opts, [&](std::string_view arg) {
    RunOptions& o = opts;
    if (arg != "test" && arg != "tune")
      throw UserError(fmt::format(
          "unexpected argument '{}'; expected 'test' or 'tune'", arg));
    if (setGiven && arg != o.set)
      throw UserError("give only one of 'test' and 'tune'");
    o.set = std::string(arg);
    setGiven = true;
  });
  if (opts.allConfigs && !opts.configSelector.empty())
    throw UserError("--all-configs and --config exclude each other");
  if (opts.allConfigs && !opts.outputNpy.empty())
    throw UserError("--all-configs and --output exclude each other");
  if (opts.qosLoss && !opts.configSelector.empty())
    throw UserError("--qos-loss and --config exclude each other");
  if (opts.qosLoss && opts.allConfigs)
    throw UserError("--qos-loss and --all-configs exclude each other");
  return opts;
}

std::string runHelp(const std::string& program) {
  std::string out = fmt::format(
      "Usage: {0} [test|tune] [options]\n"
      "       {0} tune-search [options]   (tune the approximations)\n"
      "       {0} bench-knobs [options]   (time every node and knob)\n"
      "       {0} calibrate [options]     (input ranges for the int8 "
      "knob)\n"
      "Each mode has its own --help.\n\n"
      "Runs the model on its test set (default) or tune set, prints the "
      "top-1\naccuracy and writes it to final_accuracy (as HPVM "
      "programs do).\n\nOptions:\n",
      program);
  out += optionTableHelp(kOptions);
  // Taken out of the words before any mode parses its own (RunModel.cpp).
  out += fmt::format("  {:<30} {}\n", "    --calibration FILE",
                     "int8 calibration, for every mode (default: the "
                     "configuration's <stem>.calib.txt when present)");
  out += "\nEnvironment: HPVM_NUM_THREADS sets the default thread count.\n";
  return out;
}

} // namespace hpvm::rt
