// Tool.cpp - the torch2hpvm-dataset command line: `convert` (any supported
// format to HPVM's bin files) and `info` (statistics and validation).
#include "hpvm_ds/Tool.h"

#include "hpvm_ds/Convert.h"
#include "hpvm_ds/Dataset.h"
#include "hpvm_ds/Info.h"

#include "hpvm_rt/Printable.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <ostream>

namespace hpvm::ds {

namespace {

constexpr const char* kTool = "torch2hpvm-dataset";

/// Options shared by both subcommands.
struct Common {
  std::vector<std::string> sources;
  std::string format, layout = "nchw", shape, imagesKey, labelsKey;
  int64_t classes = 0;
  bool coarse = false;
};

void addCommon(CLI::App* cmd, Common& c, const char* sourceHelp) {
  cmd->add_option("SOURCE", c.sources, sourceHelp)->required();
  cmd->add_option("--format", c.format,
                  "Input format (default: detected from the files)")
      ->check(
          CLI::IsMember({"idx", "cifar10", "cifar100", "npy", "npz", "bin"}));
  cmd->add_option("--layout", c.layout,
                  "Layout of 4-D image arrays (IDX, NumPy)")
      ->check(CLI::IsMember({"nchw", "nhwc"}));
  cmd->add_option("--shape", c.shape,
                  "Image shape C,H,W (required for HPVM bin input; checked "
                  "against the data otherwise)");
  cmd->add_option("--images-key", c.imagesKey, "Images array in an .npz");
  cmd->add_option("--labels-key", c.labelsKey, "Labels array in an .npz");
  cmd->add_option("--classes", c.classes,
                  "Number of classes: labels must lie in 0..N-1 (default: "
                  "the format's own, or unchecked)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--coarse", c.coarse,
                "CIFAR-100: use the 20 coarse labels, not the 100 fine ones");
}

OpenOptions openOptions(const Common& c, bool labelsOptional) {
  OpenOptions o;
  o.format = c.format;
  o.layout = c.layout == "nhwc" ? Layout::NHWC : Layout::NCHW;
  if (!c.shape.empty())
    o.shape = parseShape(c.shape, "--shape");
  o.imagesKey = c.imagesKey;
  o.labelsKey = c.labelsKey;
  o.classes = c.classes;
  o.coarseLabels = c.coarse;
  o.labelsOptional = labelsOptional;
  return o;
}

std::unique_ptr<Source> open(const Common& c, bool labelsOptional) {
  OpenOptions o = openOptions(c, labelsOptional);
  std::unique_ptr<Source> s = openSource(c.sources, o);
  if (o.shape && s->shape() != *o.shape)
    throw DatasetError(fmt::format("{}: images are {}, but --shape says {}",
                                   s->imagesPath(), s->shape().str(),
                                   o.shape->str()));
  return s;
}

std::string number(double v) { return fmt::format("{:.6g}", v); }

void printInfo(const DatasetInfo& info, std::ostream& out) {
  fmt::print(out, "source:  {} ({})\n", info.description, info.format);
  fmt::print(out, "images:  {} of {} ({})\n", info.count, info.shape.str(),
             info.imageType);
  fmt::print(out, "values:  min {}, max {}", number(info.minValue),
             number(info.maxValue));
  if (info.nonFinite > 0)
    fmt::print(out, ", {} NaN or infinite", info.nonFinite);
  fmt::print(out, "\n");
  std::vector<std::string> means, stds;
  for (size_t c = 0; c < info.channelMean.size(); ++c) {
    means.push_back(number(info.channelMean[c]));
    stds.push_back(number(info.channelStd[c]));
  }
  fmt::print(out, "mean:    {}\nstd:     {}\n", fmt::join(means, ","),
             fmt::join(stds, ","));
  if (info.labelsPath.empty()) {
    fmt::print(out, "labels:  none\n");
    return;
  }
  int64_t used = static_cast<int64_t>(
      std::count_if(info.histogram.begin(), info.histogram.end(),
                    [](int64_t n) { return n > 0; }));
  fmt::print(out, "labels:  {} classes present, 0..{}\n", used,
             info.histogram.empty() ? 0 : info.histogram.size() - 1);
  for (size_t k = 0; k < info.histogram.size(); ++k)
    fmt::print(out, "  {:>4}: {}\n", k, info.histogram[k]);
}

nlohmann::json infoJson(const DatasetInfo& info) {
  nlohmann::json j;
  j["format"] = info.format;
  j["images_path"] = info.imagesPath;
  j["labels_path"] = info.labelsPath.empty() ? nlohmann::json(nullptr)
                                             : nlohmann::json(info.labelsPath);
  j["count"] = info.count;
  j["shape"] = {info.shape.c, info.shape.h, info.shape.w};
  j["image_type"] = info.imageType;
  j["min"] = info.minValue;
  j["max"] = info.maxValue;
  j["non_finite"] = info.nonFinite;
  j["channel_mean"] = info.channelMean;
  j["channel_std"] = info.channelStd;
  j["label_histogram"] = info.histogram;
  return j;
}

/// A parsed command line.
struct CommandLine {
  bool convert = false; ///< Else info.
  Common common;
  ConvertOptions options; ///< convert: all but --normalize (needs the data).
  std::string normalize;
  bool quiet = false, json = false;
};

int runConvert(const CommandLine& cl, std::ostream& out) {
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<Source> src = open(cl.common, false);
  ConvertOptions opt = cl.options;
  if (!cl.normalize.empty())
    std::tie(opt.mean, opt.std) = parseNormalize(cl.normalize, src->shape().c);
  ConvertResult r = convert(*src, opt);
  if (cl.quiet)
    return 0;
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  fmt::print(out, "{}: {} images of {} ({}, {})\n", kTool, src->count(),
             src->shape().str(), src->format(), src->imageType());
  for (const WrittenPart& p : r.parts)
    fmt::print(out, "  {:<6} {:>7} images -> {}, {}\n", p.name, p.count,
               p.inputPath, p.labelsPath);
  if (r.unused > 0)
    fmt::print(out, "  {} images not written (not in --split/--limit)\n",
               r.unused);
  fmt::print(out, "  values in [{}, {}] after --scale {}{}; {:.2f} s\n",
             number(r.minValue), number(r.maxValue), opt.scale.text,
             cl.normalize.empty() ? "" : " --normalize " + cl.normalize, secs);
  return 0;
}

/// An error of the command line's values, as runTool prints it.
int failed(std::ostream& err, const std::exception& e) {
  fmt::print(err, "{}: error: {}\n", kTool, hpvm::printableMessage(e.what()));
  return 1;
}

/// Parses \p args into \p cl and checks the values that need no file
/// (--shape, --scale, --split). Returns the exit code where the command
/// line ends here (--help, --version, or an error printed to \p err), or
/// nullopt to run \p cl.
std::optional<int> parseCommandLine(const std::vector<std::string>& args,
                                    CommandLine& cl, std::ostream& out,
                                    std::ostream& err) {
  CLI::App app{"Convert datasets to HPVM's bin format (float32 NCHW inputs, "
               "int32 labels) and inspect them.",
               kTool};
  app.require_subcommand(1);
  app.set_version_flag("--version", "torch2hpvm-dataset 0.1.0");

  Common conv, inf;
  ConvertOptions& copt = cl.options;
  std::string outDir, scale, split;
  int64_t limit = -1;
  uint64_t seed = 0;

  CLI::App* convert = app.add_subcommand(
      "convert", "Convert SOURCE files to tune/test (or --name) bin pairs");
  addCommon(convert, conv,
            "Dataset files: IDX images and labels (.gz or not), CIFAR "
            "batches, .npy images and labels, one .npz, or an HPVM "
            "*_input.bin (+ *_labels.bin)");
  convert->add_option("-o,--output", outDir, "Output directory")->required();
  convert->add_option("--name", copt.name,
                      "Write one pair NAME_input.bin/NAME_labels.bin");
  convert->add_option("--scale", scale,
                      "Multiply values by this number or fraction (1/255)");
  convert->add_option("--normalize", cl.normalize,
                      "MEAN,STD, or C means then C deviations, applied "
                      "after --scale as (x - mean) / std");
  convert->add_option("--split", split,
                      "Consecutive parts NAME=COUNT,... (default: equal "
                      "halves tune,test)");
  CLI::Option* shuffle =
      convert->add_option("--shuffle", seed, "Shuffle with this seed");
  convert->add_option("--limit", limit, "Use only the first N images")
      ->check(CLI::PositiveNumber);
  convert->add_flag("--no-manifest", "Do not write dataset.json");
  convert->add_flag("-q,--quiet", cl.quiet, "Print nothing on success");

  CLI::App* info = app.add_subcommand(
      "info", "Count, shape, value range and label histogram of a dataset; "
              "validates a bin pair against --shape");
  addCommon(info, inf,
            "Dataset file(s); for an HPVM *_input.bin the labels file is "
            "found by HPVM's naming");
  info->add_flag("--json", cl.json, "Print JSON instead of text");

  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    const CLI::App* sub = convert->parsed() ? convert
                          : info->parsed()  ? info
                                            : &app;
    if (e.get_name() == "CallForHelp" || e.get_exit_code() == 0) {
      out << sub->help();
      return 0;
    }
    fmt::print(err, "{}: error: {}\nRun '{} {}--help' for usage.\n", kTool,
               e.what(), kTool, sub == &app ? "" : sub->get_name() + " ");
    return 1;
  }

  cl.convert = convert->parsed();
  cl.common = cl.convert ? conv : inf;
  try {
    if (!cl.common.shape.empty())
      parseShape(cl.common.shape, "--shape");
    if (cl.convert) {
      copt.outDir = outDir;
      copt.limit = limit;
      copt.manifest = convert->count("--no-manifest") == 0;
      if (shuffle->count() > 0)
        copt.shuffleSeed = seed;
      if (!scale.empty())
        copt.scale = parseScale(scale);
      if (!split.empty())
        copt.split = parseSplit(split);
      if (!copt.name.empty() && !isPartName(copt.name))
        throw DatasetError(fmt::format(
            "--name: '{}' is not a NAME (1 to {} letters, digits and _), as "
            "in --name test",
            copt.name, kMaxPartName));
    }
  } catch (const std::exception& e) {
    return failed(err, e);
  }
  return std::nullopt;
}

} // namespace

int checkToolArgs(const std::vector<std::string>& args, std::ostream& out,
                  std::ostream& err) {
  CommandLine cl;
  return parseCommandLine(args, cl, out, err).value_or(-1);
}

int runTool(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err) {
  CommandLine cl;
  if (std::optional<int> done = parseCommandLine(args, cl, out, err))
    return *done;
  try {
    if (cl.convert)
      return runConvert(cl, out);
    std::unique_ptr<Source> src = open(cl.common, true);
    DatasetInfo di = inspect(*src);
    if (cl.json)
      out << infoJson(di).dump(2) << "\n";
    else
      printInfo(di, out);
    return 0;
  } catch (const std::exception& e) {
    return failed(err, e);
  }
}

} // namespace hpvm::ds
