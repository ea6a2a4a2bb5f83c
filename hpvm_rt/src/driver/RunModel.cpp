// RunModel.cpp - the support routine behind every generated program's
// main(): the command line's modes in named steps (the commands run
// through the tuner, a plain run, --all-configs, HPVM's inspect protocol)
// and the run's files.
#include "hpvm_rt/RunModel.h"

#include "approx/HalfConv.h"
#include "approx/Isa.h"
#include "base/Errors.h"
#include "base/FileUtil.h"
#include "command/Npy.h"
#include "config/Config.h"
#include "core/Launch.h"
#include "driver/BakedConfig.h"
#include "driver/Calibration.h"
#include "driver/Controller.h"
#include "driver/Options.h"
#include "driver/Profiler.h"
#include "driver/RunModes.h"
#include "driver/RunReport.h"
#include "driver/Runner.h"
#include "driver/TunerRunner.h"
#include "kernels/Kernels.h"
#include "tuner/BenchKnobs.h"
#include "tuner/TuneOptions.h"
#include "tuner/Tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <unistd.h>

namespace hpvm::rt {

namespace {

/// The files the tuner's modes write that their options name, checked
/// before the (possibly long) run.
std::vector<OutputFile> modeOutputFiles(const CalibrateOptions& o) {
  return {{"-o", o.output}};
}
std::vector<OutputFile> modeOutputFiles(const tuner::TuneOptions& o) {
  std::vector<OutputFile> out = {{"-o", o.output}};
  if (!o.jsonFile.empty())
    out.push_back({"--json", o.jsonFile});
  if (!o.plotStem.empty() && !o.noPlot)
    out.push_back({"--plot", o.plotStem});
  return out;
}
std::vector<OutputFile> modeOutputFiles(const tuner::BenchOptions& o) {
  if (o.jsonFile.empty())
    return {};
  return {{"--json", o.jsonFile}};
}

/// `<program> MODE ...` for the modes that run the program through the
/// tuner's ProgramRunner (tune-search, bench-knobs): \p parse reads the
/// words after MODE, \p help is its --help text and \p body runs it once
/// the datasets are checked and the weights loaded.
/// \p calibration (if any) is the one the runs use.
template <class ModeOptions, class Body>
int runTunerMode(int argc, char** argv, const hpvm_rt::ModelInfo& info,
                 const hpvm_rt::LoadWeightsFn& loadWeights,
                 const hpvm_rt::RunBatchFn& runBatch,
                 const std::string& program, const char* mode,
                 ModeOptions (*parse)(int, const char* const*),
                 std::string (*help)(const std::string&), Body body,
                 std::unique_ptr<Int8Calibration> calibration) {
  ModeOptions topts;
  try {
    topts = parse(argc - 2, argv + 2);
  } catch (const UserError& e) {
    throw UserError(
        fmt::format("{}\nTry '{} {} --help'.", e.what(), program, mode));
  }
  if (topts.help) {
    std::fputs(help(program).c_str(), stdout);
    return 0;
  }
  if (info.inspect == 1 && std::strcmp(mode, "calibrate") != 0)
    throw UserError(fmt::format("{} needs a program of the hpvm_tensor target "
                                "(this one serves HPVM's tuner protocol)",
                                mode));
  checkOutputFiles(modeOutputFiles(topts));
  RunOptions opts;
  opts.batchSize = topts.batchSize;
  opts.threads = topts.threads;
  opts.modelDir = topts.modelDir;
  opts.quiet = true; // the tuner draws its own progress
  applyThreads(opts);
  std::string modelDir = resolveModelDir(opts.modelDir, info.modelDir);
  Runner runner(opts, info, runBatch, modelDir);
  if (calibration)
    runner.useCalibration(std::move(calibration));
  TunerRunner tunerRunner(runner, info, opts);
  tunerRunner.labels("tune");
  if (info.testCount > 0)
    tunerRunner.labels("test");
  loadWeights(modelDir);
  DeactivateOnExit deactivate{runner.settings()};
  return body(topts, tunerRunner);
}

/// tune-search with the int8 knob available: the calibration given with
/// --calibration, else one measured on the profiled tune images, is written
/// next to the output as its companion (<stem>.calib.txt), so that the
/// configuration file and its calibration reproduce every run.
int tuneSearchCalibrated(const tuner::TuneOptions& opts, TunerRunner& runner) {
  const std::string companion = companionCalibration(opts.output);
  if (!runner.calibration() && !opts.hpvmCompatible) {
    const int64_t images =
        std::min(opts.profileImages ? *opts.profileImages : int64_t(1000),
                 runner.setSize("tune"));
    Int8Calibration cal =
        measureCalibration(runner, CalibrationMethod{}, images, !opts.quiet);
    if (!cal.nodes.empty()) {
      writeFileAtomic(companion, calibrationText(cal));
      runner.useCalibration(
          std::make_unique<Int8Calibration>(readCalibration(companion)));
    }
  } else if (const Int8Calibration* cal = runner.calibration()) {
    writeFileAtomic(companion, calibrationText(*cal));
  }
  return tuner::tuneSearch(opts, runner);
}

/// Removes "--calibration FILE" / "--calibration=FILE" from \p words and
/// reads the calibration (the last one given); nullptr if none was given.
std::unique_ptr<Int8Calibration>
takeCalibrationOption(std::vector<char*>& words, const std::string& program) {
  const std::string_view name = "--calibration";
  std::unique_ptr<Int8Calibration> found;
  for (size_t i = 1; i < words.size();) {
    std::string_view w = words[i];
    std::string value;
    size_t take = 0;
    if (w == name) {
      if (i + 1 >= words.size())
        throw UserError(fmt::format("option '--calibration' needs a value "
                                    "(FILE)\nTry '{} --help'.",
                                    program));
      value = words[i + 1];
      take = 2;
    } else if (w.substr(0, name.size() + 1) == "--calibration=") {
      value = std::string(w.substr(name.size() + 1));
      take = 1;
    }
    if (!take) {
      ++i;
      continue;
    }
    found = std::make_unique<Int8Calibration>(readCalibration(value));
    words.erase(words.begin() + long(i), words.begin() + long(i + take));
  }
  return found;
}

/// The program's name in messages: argv[0] without its directory, else the
/// model's name.
std::string programName(int argc, char** argv, const hpvm_rt::ModelInfo& info) {
  std::string program = argc > 0 && argv[0] ? argv[0] : info.name;
  return program.substr(program.find_last_of('/') + 1);
}

/// Runs the command argv[1] names if it is one of those that run the
/// program through the tuner's ProgramRunner (calibrate, tune-search,
/// bench-knobs) with \p calibration (if any); nullopt if it is none.
std::optional<int> runCommand(int argc, char** argv,
                              const hpvm_rt::ModelInfo& info,
                              const hpvm_rt::LoadWeightsFn& loadWeights,
                              const hpvm_rt::RunBatchFn& runBatch,
                              const std::string& program,
                              std::unique_ptr<Int8Calibration>& calibration) {
  if (argc > 1 && std::strcmp(argv[1], "calibrate") == 0)
    return runTunerMode(argc, argv, info, loadWeights, runBatch, program,
                        "calibrate", parseCalibrateOptions, calibrateHelp,
                        calibrateMode, std::move(calibration));
  if (argc > 1 && std::strcmp(argv[1], "tune-search") == 0)
    return runTunerMode(argc, argv, info, loadWeights, runBatch, program,
                        "tune-search", tuner::parseTuneOptions, tuner::tuneHelp,
                        tuneSearchCalibrated, std::move(calibration));
  if (argc > 1 && std::strcmp(argv[1], "bench-knobs") == 0)
    return runTunerMode(argc, argv, info, loadWeights, runBatch, program,
                        "bench-knobs", tuner::parseBenchOptions,
                        tuner::benchHelp, tuner::benchKnobs,
                        std::move(calibration));
  return std::nullopt;
}

/// The run modes' options, with a hint at --help on error.
RunOptions parseRunCommandLine(int argc, char** argv,
                               const std::string& program) {
  try {
    return parseRunOptions(argc, argv);
  } catch (const UserError& e) {
    throw UserError(fmt::format("{}\nTry '{} --help'.", e.what(), program));
  }
}

/// The configuration file: -c, else the one baked in at export; "" if
/// none, which --all-configs, --qos-loss and --config refuse.
std::string configFilePath(const RunOptions& opts,
                           const hpvm_rt::ModelInfo& info,
                           const std::string& modelDir) {
  std::string configPath = opts.configFile;
  if (configPath.empty()) {
    configPath = bakedConfigPath(info, modelDir);
    // A file baked in as HPVM's config_file may not exist yet (HPVM's
    // tuner writes it later): without it, the program runs exact FP32.
    const char* needs = opts.allConfigs                ? "--all-configs"
                        : opts.qosLoss                 ? "--qos-loss"
                        : !opts.configSelector.empty() ? "--config"
                                                       : nullptr;
    if (!configPath.empty() &&
        !bakedConfigExists(configPath, needs, " (give -c FILE)")) {
      std::fprintf(stderr, "note: %s: running exact FP32\n",
                   missingBakedConfig(configPath).c_str());
      return "";
    }
  }
  if (configPath.empty() &&
      (opts.allConfigs || !opts.configSelector.empty() || opts.qosLoss))
    throw UserError(fmt::format("{} needs a configuration file: give -c FILE "
                                "(the model has no default configuration)",
                                opts.allConfigs ? "--all-configs"
                                : opts.qosLoss  ? "--qos-loss"
                                                : "--config"));
  return configPath;
}

/// Reads the configuration file at \p configPath into \p file (nothing
/// without one), gives \p runner its companion calibration unless one was
/// given (\p explicitCalibration), and selects the configuration to run:
/// --qos-loss, --config or the first; nullptr runs exact FP32.
const Configuration*
chooseConfiguration(const RunOptions& opts, const hpvm_rt::ModelInfo& info,
                    const std::string& configPath, bool explicitCalibration,
                    std::unique_ptr<ConfigFile>& file, Runner& runner) {
  if (configPath.empty())
    return nullptr;
  const Configuration* config = nullptr;
  file = std::make_unique<ConfigFile>(parseConfigFile(configPath));
  const std::string companion = companionCalibration(configPath);
  if (!explicitCalibration && ::access(companion.c_str(), R_OK) == 0) {
    runner.useCalibration(
        std::make_unique<Int8Calibration>(readCalibration(companion)));
    if (!opts.quiet)
      std::printf("int8 calibration: %s\n", companion.c_str());
  }
  if (opts.qosLoss) {
    config = selectByLoss(*file, *opts.qosLoss);
    if (!opts.quiet && !config)
      std::printf("%s: no configuration of %s has a recorded loss of at "
                  "most %g; running exact FP32\n",
                  info.name, file->path.c_str(), *opts.qosLoss);
  } else {
    config = opts.configSelector.empty()
                 ? &file->configs.front()
                 : &selectConfiguration(*file, opts.configSelector);
  }
  if (config)
    checkOpCount(*config, file->path, info.numOps);
  return config;
}

/// Writes the kept outputs of \p result to \p path: each graph output with
/// its shape (the images first), one in a .npy, several in a .npz (each
/// image's row holds its outputs one after another).
void writeOutputs(const std::string& path, const hpvm_rt::ModelInfo& info,
                  const RunResult& result) {
  const bool described = info.numOutputs >= 1 && info.outputs;
  const int count = described ? info.numOutputs : 1;
  auto shapeOf = [&](int k) {
    std::vector<int64_t> shape = {result.images};
    if (!described)
      shape.push_back(info.numClasses);
    else
      for (int d = 0; d < info.outputs[k].rank; ++d)
        shape.push_back(info.outputs[k].dims[d]);
    return shape;
  };
  const bool npz =
      path.size() >= 4 && path.compare(path.size() - 4, 4, ".npz") == 0;
  if (count == 1 && !npz) {
    writeNpy(path, shapeOf(0), result.outputs.data());
    return;
  }
  if (!npz)
    throw UserError(fmt::format("--output {}: the model has {} outputs; give "
                                "a .npz file to hold them all",
                                path, count));
  // Each output's values, image by image, out of the rows.
  std::vector<std::vector<float>> parts(static_cast<size_t>(count));
  std::vector<NpzArray> arrays;
  int64_t offset = 0;
  for (int k = 0; k < count; ++k) {
    const std::vector<int64_t> shape = shapeOf(k);
    const int64_t elems =
        described ? outputValues(info.outputs[k]) : info.numClasses;
    std::vector<float>& part = parts[static_cast<size_t>(k)];
    part.reserve(static_cast<size_t>(result.images * elems));
    for (int64_t i = 0; i < result.images; ++i) {
      const float* row = result.outputs.data() + i * info.numClasses + offset;
      part.insert(part.end(), row, row + elems);
    }
    offset += elems;
    arrays.push_back(
        {described ? info.outputs[k].name : "output", shape, part.data()});
  }
  writeNpz(path, arrays);
}

/// The files a run writes: those the options name, then (in the current
/// folder, as HPVM's programs do) final_accuracy and profile_info.txt.
std::vector<OutputFile> runOutputFiles(const RunOptions& opts) {
  std::vector<OutputFile> out;
  for (const auto& [option, path] : {std::pair{"--output", &opts.outputNpy},
                                     {"--profile", &opts.profileFile},
                                     {"--trace", &opts.traceFile},
                                     {"--log-calls", &opts.callLogFile},
                                     {"--json", &opts.jsonFile}})
    if (!path->empty())
      out.push_back({option, *path});
  out.push_back({"", "final_accuracy"});
  out.push_back({"", "profile_info.txt"});
  return out;
}

/// Removes, unless released, the files a failed writeRunFiles wrote: a run
/// that fails leaves none of its files behind.
class WrittenFiles {
public:
  ~WrittenFiles() {
    std::error_code ignored;
    for (const std::string& path : paths_)
      std::filesystem::remove(path, ignored);
  }
  void add(const std::string& path) { paths_.push_back(path); }
  void release() { paths_.clear(); }

private:
  std::vector<std::string> paths_;
};

/// Writes a run's files, each atomically, those the options ask for
/// (--output, --profile, --trace, --log-calls, --json) first, HPVM's
/// final_accuracy and profile_info.txt last; if one cannot be written, the
/// others written so far are removed.
void writeRunFiles(const RunOptions& opts, const hpvm_rt::ModelInfo& info,
                   const Dataset& ds, const RunResult& result, int64_t batch,
                   const Profiler& profiler, const Configuration* config,
                   const ConfigFile* file) {
  WrittenFiles written;
  if (!opts.outputNpy.empty()) {
    written.add(opts.outputNpy);
    writeOutputs(opts.outputNpy, info, result);
  }
  if (!opts.profileFile.empty()) {
    written.add(opts.profileFile);
    writeJson(opts.profileFile, profiler.profileJson());
  }
  if (!opts.traceFile.empty()) {
    written.add(opts.traceFile);
    writeJson(opts.traceFile, profiler.traceJson());
  }
  if (!opts.callLogFile.empty()) {
    written.add(opts.callLogFile);
    writeJson(opts.callLogFile, profiler.callLogJson());
  }
  if (!opts.jsonFile.empty()) {
    double total = result.totalSeconds();
    std::vector<double> batchMs;
    for (double s : result.batchSeconds)
      batchMs.push_back(s * 1e3);
    written.add(opts.jsonFile);
    writeJson(opts.jsonFile,
              {{"model", info.name},
               {"set", ds.name},
               {"images", result.images},
               {"batch_size", batch},
               {"repeat", opts.repeat},
               {"threads", numThreads()},
               {"isa", approx::isaName(approx::isaLevel())},
               {"fp16", approx::halfConvAvailable() ? "half" : "emulated"},
               {"accuracy", result.labeled ? nlohmann::json(result.accuracy())
                                           : nlohmann::json(nullptr)},
               {"correct", result.labeled ? nlohmann::json(result.correct)
                                          : nlohmann::json(nullptr)},
               {"config", configJson(config, file)},
               {"time_ms", timeJson(timeStats(result.batchSeconds))},
               {"batch_times_ms", batchMs},
               {"images_per_second",
                total > 0 ? result.images * opts.repeat / total : 0.0}});
  }
  // Without labels there is no accuracy: no final_accuracy (an earlier
  // run's would look like this one's).
  std::error_code ignored;
  if (result.labeled) {
    written.add("final_accuracy");
    writeFileAtomic("final_accuracy", fmt::format("{:.6f}", result.accuracy()));
  } else {
    std::filesystem::remove("final_accuracy", ignored);
  }
  written.add("profile_info.txt");
  RuntimeController::get().writeProfile("profile_info.txt");
  written.release();
}

/// The plain run mode: \p ds under \p config (of \p file, read from
/// \p configPath), with accuracy, times and the run's files.
int runOnce(Runner& runner, const RunOptions& opts,
            const hpvm_rt::ModelInfo& info, const Dataset& ds,
            const Configuration* config, const ConfigFile* file,
            const std::string& configPath) {
  bool noted = false;
  if (config)
    noteGpuLines(*config, opts.quiet, noted);
  LaunchSettings& settings = runner.settings();
  settings.setConfiguration(config, file ? file->path : "");
  const bool profiling = !opts.profileFile.empty() || !opts.traceFile.empty() ||
                         !opts.callLogFile.empty();
  settings.setRecording(profiling);
  const int64_t batch = runner.batchSize(ds);
  if (!opts.quiet)
    std::printf("%s: %s set, %lld images in batches of %lld, %s\n", info.name,
                ds.name.c_str(), static_cast<long long>(ds.count),
                static_cast<long long>(batch),
                configDescription(config, configPath).c_str());
  std::fflush(stdout);

  Profiler profiler;
  RunResult result = runner.run(ds, opts.repeat, !opts.outputNpy.empty(),
                                profiling ? &profiler : nullptr, nullptr);
  settings.setRecording(false);

  if (result.labeled)
    std::printf("Accuracy: %.6f%% (%lld of %lld images)\n", result.accuracy(),
                static_cast<long long>(result.correct),
                static_cast<long long>(result.images));
  else
    std::printf("No accuracy: the %s set has no labels (%s)\n", ds.name.c_str(),
                ds.labelsPath.c_str());
  if (opts.printTime)
    printTimes(result, batch, result.images * opts.repeat);
  if (!opts.profileFile.empty() && !opts.quiet)
    std::fputs(profiler.profileTable().c_str(), stdout);
  std::fflush(stdout);

  writeRunFiles(opts, info, ds, result, batch, profiler, config, file);
  return 0;
}

int runMain(int argc, char** argv, const hpvm_rt::ModelInfo& info,
            const hpvm_rt::LoadWeightsFn& loadWeights,
            const hpvm_rt::RunBatchFn& runBatch) {
  const std::string program = programName(argc, argv, info);
  // --calibration FILE (every mode): taken out of the words before the mode
  // parses its own options.
  std::vector<char*> words(argv, argv + argc);
  std::unique_ptr<Int8Calibration> calibration =
      takeCalibrationOption(words, program);
  const bool explicitCalibration = calibration != nullptr;
  words.push_back(nullptr);
  argc = static_cast<int>(words.size()) - 1;
  argv = words.data();
  if (std::optional<int> status = runCommand(argc, argv, info, loadWeights,
                                             runBatch, program, calibration))
    return *status;
  const RunOptions opts = parseRunCommandLine(argc, argv, program);
  if (opts.help) {
    std::fputs(runHelp(program).c_str(), stdout);
    return 0;
  }
  std::string modelDir = resolveModelDir(opts.modelDir, info.modelDir);
  // Before the (possibly long) run, not after it.
  if (info.inspect != 1)
    checkOutputFiles(runOutputFiles(opts));
  applyThreads(opts);
  const std::string configPath = configFilePath(opts, info, modelDir);

  Runner runner(opts, info, runBatch, modelDir);
  if (calibration)
    runner.useCalibration(std::move(calibration));
  if (info.inspect == 1) {
    loadWeights(modelDir);
    return runInspect(runner, opts, info);
  }

  std::unique_ptr<ConfigFile> file;
  const Configuration* config = chooseConfiguration(
      opts, info, configPath, explicitCalibration, file, runner);
  // Check the dataset before the (possibly long) weight loading.
  Dataset ds = runner.openDataset(opts.set, opts.limit);
  loadWeights(modelDir);
  DeactivateOnExit deactivate{runner.settings()};
  if (opts.allConfigs)
    return runAllConfigs(runner, opts, info, *file, ds);
  return runOnce(runner, opts, info, ds, config, file.get(), configPath);
}

} // namespace

} // namespace hpvm::rt

int hpvm_rt::runModel(int argc, char** argv, const ModelInfo& info,
                      const LoadWeightsFn& loadWeights,
                      const RunBatchFn& runBatch) {
  const std::string program = hpvm::rt::programName(argc, argv, info);
  try {
    return hpvm::rt::runMain(argc, argv, info, loadWeights, runBatch);
  } catch (...) {
    hpvm::rt::RuntimeController::get().discardIterations();
    return hpvm::rt::reportError(program, std::current_exception());
  }
}

int hpvm_rt::runModel(int argc, char** argv, const Model& model) {
  return runModel(argc, argv, model.info, model.loadWeights, model.runBatch);
}
