// Options.cpp - table-driven parser of the generated programs' command line.
#include "driver/Options.h"

#include "driver/FileUtil.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>
#include <string_view>

namespace hpvm::rt {

namespace {

int64_t parseCount(std::string_view option, std::string_view value,
                   int64_t min) {
  int64_t n = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, n);
  if (ec != std::errc() || ptr != end || n < min)
    throw RunError(fmt::format("bad value '{}' for {}: expected an integer "
                               ">= {}",
                               value, option, min));
  return n;
}

/// One option: its spellings, value name (nullptr: a flag), help and what
/// it sets.
struct OptionSpec {
  const char* shortName; ///< "-c" or nullptr.
  const char* longName;  ///< "--batch-size".
  const char* metavar;   ///< "N", or nullptr for flags.
  const char* help;
  void (*apply)(RunOptions& o, std::string_view name, std::string_view v);
};

const OptionSpec kOptions[] = {
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
       o.threads = static_cast<int>(parseCount(n, v, 0));
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

const OptionSpec* findOption(std::string_view name) {
  for (const OptionSpec& spec : kOptions)
    if ((spec.shortName && name == spec.shortName) || name == spec.longName)
      return &spec;
  return nullptr;
}

} // namespace

RunOptions parseRunOptions(int argc, const char* const* argv) {
  RunOptions opts;
  bool setGiven = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.size() > 1 && arg[0] == '-') {
      std::string_view name = arg, value;
      size_t eq = arg.find('=');
      bool inlineValue = arg.substr(0, 2) == "--" && eq != arg.npos;
      if (inlineValue) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
      }
      const OptionSpec* spec = findOption(name);
      if (!spec)
        throw RunError(fmt::format("unknown option '{}'", name));
      if (!spec->metavar) {
        if (inlineValue)
          throw RunError(
              fmt::format("option '{}' takes no value", spec->longName));
      } else if (!inlineValue) {
        if (i + 1 >= argc)
          throw RunError(fmt::format("option '{}' needs a value ({})", name,
                                     spec->metavar));
        value = argv[++i];
      }
      spec->apply(opts, spec->longName, value);
      continue;
    }
    if (arg != "test" && arg != "tune")
      throw RunError(fmt::format(
          "unexpected argument '{}'; expected 'test' or 'tune'", arg));
    if (setGiven && arg != opts.set)
      throw RunError("give only one of 'test' and 'tune'");
    opts.set = std::string(arg);
    setGiven = true;
  }
  if (opts.allConfigs && !opts.configSelector.empty())
    throw RunError("--all-configs and --config exclude each other");
  if (opts.allConfigs && !opts.outputNpy.empty())
    throw RunError("--all-configs and --output exclude each other");
  return opts;
}

std::string runHelp(const std::string& program) {
  std::string out = fmt::format(
      "Usage: {} [test|tune] [options]\n\n"
      "Runs the model on its test set (default) or tune set, prints the "
      "top-1\naccuracy and writes it to final_accuracy (as HPVM "
      "programs do).\n\nOptions:\n",
      program);
  for (const OptionSpec& spec : kOptions) {
    std::string names =
        spec.shortName ? fmt::format("{}, {}", spec.shortName, spec.longName)
                       : fmt::format("    {}", spec.longName);
    if (spec.metavar)
      names += fmt::format(" {}", spec.metavar);
    out += fmt::format("  {:<30} {}\n", names, spec.help);
  }
  out += "\nEnvironment: HPVM_NUM_THREADS sets the default thread count.\n";
  return out;
}

} // namespace hpvm::rt
