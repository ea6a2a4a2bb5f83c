// RunModel.cpp - the support routine behind every generated program's
// main(): options, configurations, datasets in batches, accuracy, timing,
// outputs, profiles, and HPVM's tuner (inspect) protocol.
#include "hpvm_rt/RunModel.h"

#include "approx/Isa.h"
#include "base/Errors.h"
#include "base/FileUtil.h"
#include "command/Npy.h"
#include "command/Progress.h"
#include "config/Config.h"
#include "core/Launch.h"
#include "core/Top1.h"
#include "driver/Calibration.h"
#include "driver/Controller.h"
#include "driver/Options.h"
#include "driver/Profiler.h"
#include "kernels/Kernels.h"
#include "tensor_runtime.h"
#include "tuner/BenchKnobs.h"
#include "tuner/Tuner.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <unistd.h>

namespace hpvm::rt {

namespace {

/// The directory holding weights/ and the datasets, ending in '/': --model-dir
/// \p given (relative to the working directory) when set, else the baked-in
/// \p baked: absolute, or relative to the directory holding this program
/// (torch2hpvm's programs say "../": they are built as OUT/build/<model>);
/// "" is the working directory.
std::string resolveModelDir(const std::string& given, const char* baked) {
  std::string dir = given;
  if (dir.empty() && baked && *baked) {
    dir = baked;
    std::error_code ec;
    std::filesystem::path exe =
        std::filesystem::read_symlink("/proc/self/exe", ec);
    if (dir[0] != '/' && !ec)
      dir = (exe.parent_path() / dir).lexically_normal().string();
  }
  if (dir.empty())
    dir = "./";
  if (dir.back() != '/')
    dir += '/';
  return dir;
}

/// The images and labels of one set (first `count` images).
struct Dataset {
  std::string name; ///< "test" or "tune".
  std::string inputPath, labelsPath;
  int64_t count = 0;
  std::vector<int32_t> labels;
};

/// What one pass (or --repeat passes) over a dataset measured.
struct RunResult {
  int64_t images = 0, correct = 0;
  std::vector<double> batchSeconds;
  std::vector<float> outputs; ///< images x classes, if kept.
  double accuracy() const {
    return images ? 100.0 * static_cast<double>(correct) / images : 0.0;
  }
  double totalSeconds() const {
    double s = 0;
    for (double b : batchSeconds)
      s += b;
    return s;
  }
};

/// Per-batch time statistics in milliseconds.
struct TimeStats {
  double mean = 0, median = 0, min = 0, max = 0, std = 0, total = 0;
};

TimeStats timeStats(std::vector<double> seconds) {
  TimeStats s;
  if (seconds.empty())
    return s;
  std::sort(seconds.begin(), seconds.end());
  size_t n = seconds.size();
  for (double t : seconds)
    s.total += t;
  s.mean = s.total / n;
  s.median = n % 2 ? seconds[n / 2] : (seconds[n / 2 - 1] + seconds[n / 2]) / 2;
  s.min = seconds.front();
  s.max = seconds.back();
  double var = 0;
  for (double t : seconds)
    var += (t - s.mean) * (t - s.mean);
  s.std = std::sqrt(var / n);
  for (double* v : {&s.mean, &s.median, &s.min, &s.max, &s.std, &s.total})
    *v *= 1e3;
  return s;
}

nlohmann::json timeJson(const TimeStats& s) {
  return {{"mean", s.mean}, {"median", s.median}, {"min", s.min},
          {"max", s.max},   {"std", s.std},       {"total", s.total}};
}

/// Called with each batch's output tensor (host data valid) and its size.
using BatchSink = std::function<void(Tensor* out, int64_t images)>;

class Runner {
public:
  Runner(const RunOptions& opts, const hpvm_rt::ModelInfo& info,
         const hpvm_rt::RunBatchFn& runBatch, std::string modelDir)
      : opts_(opts), info_(info), runBatch_(runBatch),
        modelDir_(std::move(modelDir)) {}

  const std::string& modelDir() const { return modelDir_; }

  /// Checks the files of \p set and reads its labels (first \p limit).
  Dataset openDataset(const std::string& set,
                      std::optional<int64_t> limit) const {
    Dataset ds;
    ds.name = set;
    ds.inputPath = modelDir_ + set + "_input.bin";
    ds.labelsPath = modelDir_ + set + "_labels.bin";
    int64_t count = set == "tune" ? info_.tuneCount : info_.testCount;
    if (count <= 0)
      throw UserError(fmt::format("the model has no {} set (it was exported "
                                  "without one)",
                                  set));
    uint64_t imageBytes = imageElems() * sizeof(float);
    uint64_t want = static_cast<uint64_t>(count) * imageBytes;
    uint64_t have = fileSize(ds.inputPath, "dataset file");
    if (have != want)
      throw UserError(fmt::format(
          "{}: {} bytes, expected {} images x {}x{}x{} float32 = {} bytes",
          ds.inputPath, have, count, info_.channels, info_.height, info_.width,
          want));
    want = static_cast<uint64_t>(count) * 4;
    have = fileSize(ds.labelsPath, "labels file");
    if (have != want)
      throw UserError(fmt::format("{}: {} bytes, expected {} labels x int32 "
                                  "= {} bytes",
                                  ds.labelsPath, have, count, want));
    ds.count = count;
    if (limit) {
      if (*limit > count)
        throw UserError(fmt::format("--limit {} exceeds the {} images of the "
                                    "{} set",
                                    *limit, count, set));
      ds.count = *limit;
    }
    ds.labels.resize(static_cast<size_t>(ds.count));
    std::ifstream in(ds.labelsPath, std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(ds.labels.data()),
                 static_cast<std::streamsize>(ds.count * 4)))
      throw UserError(fmt::format("{}: cannot read labels", ds.labelsPath));
    for (size_t i = 0; i < ds.labels.size(); ++i)
      if (ds.labels[i] < 0 || ds.labels[i] >= info_.numClasses)
        throw UserError(fmt::format("{}: label {} at index {} is out of "
                                    "range; the model has {} classes",
                                    ds.labelsPath, ds.labels[i], i,
                                    info_.numClasses));
    return ds;
  }

  /// The batch size to use for \p ds.
  int64_t batchSize(const Dataset& ds) const {
    int64_t batch = opts_.batchSize ? *opts_.batchSize : info_.defaultBatch;
    if (batch <= 0 || batch > ds.count)
      batch = ds.count;
    return batch;
  }

  /// Runs \p ds \p repeat times in batches. Accuracy and kept outputs come
  /// from the first pass; every pass is timed.
  RunResult run(const Dataset& ds, int64_t repeat, bool keepOutputs,
                Profiler* profiler, const BatchSink& sink) {
    RunResult result;
    const int64_t batch = batchSize(ds);
    const uint64_t imageBytes = imageElems() * sizeof(float);
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(
        std::fopen(ds.inputPath.c_str(), "rb"), &std::fclose);
    if (!in)
      throw UserError(fmt::format("{}: cannot open dataset file: {}",
                                  ds.inputPath, std::strerror(errno)));
    std::vector<float> staging(static_cast<size_t>(batch) * imageElems());
    if (keepOutputs)
      result.outputs.reserve(static_cast<size_t>(ds.count * info_.numClasses));
    ProgressBar progress("", ds.count * repeat, !opts_.quiet, "images");
    RuntimeController& controller = RuntimeController::get();
    const auto runStart = Clock::now();
    startMemTracking();
    int64_t done = 0;
    for (int64_t pass = 0; pass < repeat; ++pass) {
      std::rewind(in.get());
      for (int64_t start = 0; start < ds.count; start += batch) {
        const int64_t n = std::min(batch, ds.count - start);
        const size_t bytes = static_cast<size_t>(n) * imageBytes;
        if (std::fread(staging.data(), 1, bytes, in.get()) != bytes)
          throw UserError(fmt::format("{}: cannot read images {} to {}",
                                      ds.inputPath, start, start + n));
        void* input = create4DTensor(0, 0, static_cast<size_t>(n),
                                     static_cast<size_t>(info_.channels),
                                     static_cast<size_t>(info_.height),
                                     static_cast<size_t>(info_.width));
        initTensorData(input, staging.data(), bytes);

        const auto t0 = Clock::now();
        auto* out = static_cast<Tensor*>(runBatch_(input));
        if (!out)
          throw UserError(fmt::format("images {} to {}: the program returned "
                                      "no output tensor",
                                      start, start + n));
        hpvm_request_tensor(out, 0);
        const double seconds = secondsSince(t0);
        result.batchSeconds.push_back(seconds);

        checkOutput(out, n, start);
        if (pass == 0) {
          result.correct += countCorrect(out, ds, start, n);
          result.images += n;
          const float* data = static_cast<const float*>(out->host_data);
          if (keepOutputs)
            result.outputs.insert(result.outputs.end(), data,
                                  data + n * info_.numClasses);
          if (sink)
            sink(out, n);
        }
        const std::vector<OpRecord>& records = lastLaunchRecords();
        if (profiler)
          profiler->addLaunch(
              std::chrono::duration<double>(t0 - runStart).count(), records);
        ProfileIteration iteration;
        iteration.computeSeconds = seconds;
        for (const OpRecord& r : records)
          iteration.kernels.emplace_back(profileKernelName(r), r.seconds);
        controller.recordIteration(std::move(iteration));
        freeBatchMemory();
        done += n;
        progress.update(done);
      }
    }
    return result;
  }

private:
  uint64_t imageElems() const {
    return static_cast<uint64_t>(info_.channels * info_.height * info_.width);
  }

  void checkOutput(const Tensor* out, int64_t n, int64_t start) const {
    uint64_t want = static_cast<uint64_t>(n * info_.numClasses);
    if (out->dims.num_dims < 1 ||
        out->dims.dim_sizes[0] != static_cast<size_t>(n) ||
        out->num_elems != want)
      throw UserError(fmt::format(
          "images {} to {}: the program's output has {} values with batch "
          "dimension {}, expected {} images x {} classes",
          start, start + n, out->num_elems,
          out->dims.num_dims ? out->dims.dim_sizes[0] : 0, n,
          info_.numClasses));
  }

  int64_t countCorrect(const Tensor* out, const Dataset& ds, int64_t start,
                       int64_t n) const {
    const float* data = static_cast<const float*>(out->host_data);
    const int64_t classes = info_.numClasses;
    int64_t correct = 0;
    for (int64_t i = 0; i < n; ++i) {
      correct += top1(data + i * classes, classes) ==
                 ds.labels[static_cast<size_t>(start + i)];
    }
    return correct;
  }

  const RunOptions& opts_;
  const hpvm_rt::ModelInfo& info_;
  const hpvm_rt::RunBatchFn& runBatch_;
  std::string modelDir_;
};

/// Keeps the executor from holding a pointer to a configuration that is
/// about to be destroyed.
struct DeactivateOnExit {
  ~DeactivateOnExit() { setActiveConfiguration(nullptr, ""); }
};

void applyThreads(const RunOptions& opts) {
  std::optional<int> threads = opts.threads;
  if (!threads) {
    if (const char* env = std::getenv("HPVM_NUM_THREADS"); env && *env) {
      int n = 0;
      const char* end = env + std::strlen(env);
      auto [ptr, ec] = std::from_chars(env, end, n);
      if (ec != std::errc() || ptr != end || n < 0 || n > kMaxThreads)
        throw UserError(fmt::format("HPVM_NUM_THREADS='{}': expected an "
                                    "integer from 0 to {}",
                                    env, kMaxThreads));
      threads = n;
    }
  }
  if (threads)
    setNumThreads(*threads);
}

std::string configDescription(const Configuration* config,
                              const std::string& path) {
  if (!config)
    return "exact FP32 (no configuration)";
  return fmt::format("configuration '{}' of {}", config->name, path);
}

nlohmann::json configJson(const Configuration* config, const ConfigFile* file) {
  if (!config)
    return nullptr;
  return {{"file", file->path},
          {"name", config->name},
          {"index", config - file->configs.data()},
          {"predicted_speedup", config->speedup},
          {"recorded_accuracy", config->accuracy},
          {"recorded_accuracy_loss", config->accuracyLoss}};
}

void writeJson(const std::string& path, const nlohmann::json& j) {
  writeFileAtomic(path, j.dump(2) + "\n");
}

void printTimes(const RunResult& r, int64_t batch, int64_t images) {
  TimeStats s = timeStats(r.batchSeconds);
  std::printf("Execution time summary (%zu batch%s of up to %lld images):\n",
              r.batchSeconds.size(), r.batchSeconds.size() == 1 ? "" : "es",
              static_cast<long long>(batch));
  std::printf(" mean (ms)   median (ms)    max (ms)     min (ms)     std "
              "(ms)\n");
  std::printf("%10.4f   %11.4f   %9.4f   %10.4f   %10.4f\n", s.mean, s.median,
              s.max, s.min, s.std);
  double total = r.totalSeconds();
  std::printf("Throughput: %.1f images/s\n",
              total > 0 ? static_cast<double>(images) / total : 0.0);
}

/// HPVM's tuner protocol (reference section 8.5): serve test/tune/stop
/// requests from the FIFOs in the model directory.
int runInspect(Runner& runner, const RunOptions& opts,
               const hpvm_rt::ModelInfo& info) {
  const std::string readPath = runner.modelDir() + "hpvm_fifo_r";
  const std::string writePath = runner.modelDir() + "hpvm_fifo_w";
  const std::string confPath = runner.modelDir() + "tuner_confs.txt";
  std::unique_ptr<ConfigFile> active;
  DeactivateOnExit deactivate;
  while (true) {
    std::string request;
    {
      std::ifstream fifo(readPath, std::ios::binary);
      if (!fifo)
        throw UserError(fmt::format("{}: cannot open the tuner's request "
                                    "FIFO: {}",
                                    readPath, std::strerror(errno)));
      char buffer[100] = {};
      fifo.read(buffer, sizeof(buffer) - 1);
      request.assign(buffer, static_cast<size_t>(fifo.gcount()));
    }
    while (!request.empty() &&
           std::isspace(static_cast<unsigned char>(request.back())))
      request.pop_back();
    if (request == "stop")
      return 0;
    if (request != "test" && request != "tune")
      throw UserError(fmt::format("{}: invalid request '{}'; expected "
                                  "'test', 'tune' or 'stop'",
                                  readPath, request));
    // The tuner rewrites the configuration before every request.
    auto file = std::make_unique<ConfigFile>(parseConfigFile(confPath));
    const Configuration& config = file->configs.front();
    checkOpCount(config, file->path, info.numOps);
    setActiveConfiguration(&config, file->path);
    active = std::move(file);

    Dataset ds = runner.openDataset(request, std::nullopt);
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(
        std::fopen(writePath.c_str(), "wb"), &std::fclose);
    if (!out)
      throw UserError(fmt::format("{}: cannot open the tuner's result FIFO: "
                                  "{}",
                                  writePath, std::strerror(errno)));
    auto sink = [&](Tensor* t, int64_t) {
      // One record per batch: uint64 ndims, uint64 dims[ndims], float32 data.
      uint64_t ndims = static_cast<uint64_t>(t->dims.num_dims);
      std::vector<uint64_t> dims(t->dims.dim_sizes,
                                 t->dims.dim_sizes + t->dims.num_dims);
      size_t bytes = t->num_elems * sizeof(float);
      if (std::fwrite(&ndims, sizeof(ndims), 1, out.get()) != 1 ||
          std::fwrite(dims.data(), sizeof(uint64_t), dims.size(), out.get()) !=
              dims.size() ||
          std::fwrite(t->host_data, 1, bytes, out.get()) != bytes)
        throw UserError(fmt::format("{}: cannot write the batch result: {}",
                                    writePath, std::strerror(errno)));
    };
    RunResult result = runner.run(ds, 1, false, nullptr, sink);
    RuntimeController::get().discardIterations();
    if (std::fflush(out.get()) != 0)
      throw UserError(fmt::format("{}: cannot write the batch results: {}",
                                  writePath, std::strerror(errno)));
    writeFileAtomic("final_accuracy", fmt::format("{:.6f}", result.accuracy()));
    out.reset();
    if (!opts.quiet)
      std::printf("%s set: accuracy %.6f%% (%lld of %lld images)\n",
                  request.c_str(), result.accuracy(),
                  static_cast<long long>(result.correct),
                  static_cast<long long>(result.images));
    std::fflush(stdout);
  }
}

/// --all-configs: the exact program, then every configuration of \p file.
int runAllConfigs(Runner& runner, const RunOptions& opts,
                  const hpvm_rt::ModelInfo& info, const ConfigFile& file,
                  const Dataset& ds) {
  for (const Configuration& config : file.configs)
    checkOpCount(config, file.path, info.numOps);
  const int64_t batch = runner.batchSize(ds);
  if (!opts.quiet)
    std::printf("%s: %s set, %lld images in batches of %lld, %zu "
                "configurations of %s\n",
                info.name, ds.name.c_str(), static_cast<long long>(ds.count),
                static_cast<long long>(batch), file.configs.size(),
                file.path.c_str());
  // Each run starts with one untimed batch, so that one-time work (plans,
  // weight reorders) does not count against the first configuration.
  Dataset warmup = ds;
  warmup.count = batch;
  warmup.labels.resize(static_cast<size_t>(batch));
  setActiveConfiguration(nullptr, "");
  runner.run(warmup, 1, false, nullptr, nullptr);
  RunResult exact = runner.run(ds, opts.repeat, false, nullptr, nullptr);
  const double exactTime = exact.totalSeconds();

  std::string table =
      fmt::format("{:<20} {:>10} {:>10} {:>11} {:>10}\n", "Configuration",
                  "Predicted", "Measured", "Accuracy", "Loss");
  table += fmt::format("{:<20} {:>10} {:>9.3f}x {:>10.4f}% {:>10.4f}\n",
                       "(exact fp32)", "-", 1.0, exact.accuracy(), 0.0);
  nlohmann::json rows = nlohmann::json::array();
  bool noted = false;
  for (const Configuration& config : file.configs) {
    noteGpuLines(config, opts.quiet, noted);
    setActiveConfiguration(&config, file.path);
    runner.run(warmup, 1, false, nullptr, nullptr);
    RunResult r = runner.run(ds, opts.repeat, false, nullptr, nullptr);
    double time = r.totalSeconds();
    double measured = time > 0 ? exactTime / time : 0.0;
    double loss = exact.accuracy() - r.accuracy();
    table +=
        fmt::format("{:<20} {:>9.3f}x {:>9.3f}x {:>10.4f}% {:>10.4f}\n",
                    config.name, config.speedup, measured, r.accuracy(), loss);
    nlohmann::json row = configJson(&config, &file);
    row["measured_speedup"] = measured;
    row["accuracy"] = r.accuracy();
    row["correct"] = r.correct;
    row["accuracy_loss"] = loss;
    row["time_ms"] = timeJson(timeStats(r.batchSeconds));
    rows.push_back(row);
  }
  setActiveConfiguration(nullptr, "");
  // profile_info.txt describes one configuration's run, not this sweep.
  RuntimeController::get().discardIterations();
  std::fputs(table.c_str(), stdout);
  if (!opts.jsonFile.empty())
    writeJson(opts.jsonFile,
              {{"model", info.name},
               {"set", ds.name},
               {"images", ds.count},
               {"batch_size", batch},
               {"repeat", opts.repeat},
               {"threads", numThreads()},
               {"isa", approx::isaName(approx::isaLevel())},
               {"config_file", file.path},
               {"exact",
                {{"accuracy", exact.accuracy()},
                 {"correct", exact.correct},
                 {"time_ms", timeJson(timeStats(exact.batchSeconds))}}},
               {"configs", rows}});
  return 0;
}

/// The tuner's view of the program: passes over the first images of a set
/// under a configuration, with per-fused-node times on request.
class TunerRunner : public ProgramRunner {
public:
  TunerRunner(Runner& runner, const hpvm_rt::ModelInfo& info,
              const RunOptions& opts)
      : runner_(runner), info_(info), opts_(opts) {}

  PassResult pass(const PassRequest& req) override {
    Dataset ds = dataset(req.set);
    ds.count = std::min(req.images, ds.count);
    ds.labels.resize(static_cast<size_t>(ds.count));
    setActiveConfiguration(req.config, "(tuning)");
    if (req.warmup) {
      Dataset warm = ds;
      warm.count = std::min(runner_.batchSize(ds), ds.count);
      runner_.run(warm, 1, false, nullptr, nullptr);
    }
    PassResult result;
    setRecording(req.nodeTimes);
    BatchSink sink;
    if (req.nodeTimes)
      sink = [&](Tensor*, int64_t) {
        std::vector<double> node(programNodes().size(), 0.0);
        for (const OpRecord& r : lastLaunchRecords())
          if (r.fusedOrdinal >= 1 &&
              static_cast<size_t>(r.fusedOrdinal) <= node.size())
            node[static_cast<size_t>(r.fusedOrdinal - 1)] += r.seconds;
        result.nodeSeconds.push_back(std::move(node));
        result.lastOps = lastLaunchRecords();
      };
    RunResult r = runner_.run(ds, 1, req.keepOutputs, nullptr, sink);
    setRecording(false);
    setActiveConfiguration(nullptr, "");
    RuntimeController::get().discardIterations();
    result.outputs = std::move(r.outputs);
    result.batchSeconds = std::move(r.batchSeconds);
    return result;
  }
  const std::vector<int32_t>& labels(const std::string& set) override {
    return dataset(set).labels;
  }
  int64_t setSize(const std::string& set) const override {
    return set == "tune" ? info_.tuneCount : info_.testCount;
  }
  int64_t classes() const override { return info_.numClasses; }
  int64_t batchSize() const override {
    int64_t batch = opts_.batchSize ? *opts_.batchSize : info_.defaultBatch;
    int64_t count = std::max(info_.tuneCount, int64_t(1));
    return batch <= 0 || batch > count ? count : batch;
  }
  int threads() const override { return numThreads(); }
  std::string modelName() const override { return info_.name; }

private:
  /// The whole set, opened and checked once.
  Dataset& dataset(const std::string& set) {
    auto it = sets_.find(set);
    if (it == sets_.end())
      it = sets_.emplace(set, runner_.openDataset(set, std::nullopt)).first;
    return it->second;
  }

  Runner& runner_;
  const hpvm_rt::ModelInfo& info_;
  const RunOptions& opts_;
  std::map<std::string, Dataset> sets_;
};

/// `<program> MODE ...` for the modes that run the program through the
/// tuner's ProgramRunner (tune-search, bench-knobs): \p parse reads the
/// words after MODE, \p help is its --help text and \p body runs it once
/// the datasets are checked and the weights loaded.
template <class ModeOptions>
int runTunerMode(int argc, char** argv, const hpvm_rt::ModelInfo& info,
                 const hpvm_rt::LoadWeightsFn& loadWeights,
                 const hpvm_rt::RunBatchFn& runBatch,
                 const std::string& program, const char* mode,
                 ModeOptions (*parse)(int, const char* const*),
                 std::string (*help)(const std::string&),
                 int (*body)(const ModeOptions&, ProgramRunner&)) {
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
  RunOptions opts;
  opts.batchSize = topts.batchSize;
  opts.threads = topts.threads;
  opts.modelDir = topts.modelDir;
  opts.quiet = true; // the tuner draws its own progress
  applyThreads(opts);
  std::string modelDir = resolveModelDir(opts.modelDir, info.modelDir);
  Runner runner(opts, info, runBatch, modelDir);
  TunerRunner tunerRunner(runner, info, opts);
  tunerRunner.labels("tune");
  if (info.testCount > 0)
    tunerRunner.labels("test");
  loadWeights(modelDir);
  DeactivateOnExit deactivate;
  return body(topts, tunerRunner);
}

/// tune-search with the int8 knob available: the calibration given with
/// --calibration, else one measured on the profiled tune images, is written
/// next to the output as its companion (<stem>.calib.txt), so that the
/// configuration file and its calibration reproduce every run.
int tuneSearchCalibrated(const tuner::TuneOptions& opts,
                         ProgramRunner& runner) {
  const std::string companion = companionCalibration(opts.output);
  if (!activeInt8Calibration() && !opts.hpvmCompatible) {
    const int64_t images =
        std::min(opts.profileImages ? *opts.profileImages : int64_t(1000),
                 runner.setSize("tune"));
    Int8Calibration cal =
        measureCalibration(runner, CalibrationMethod{}, images, !opts.quiet);
    if (!cal.nodes.empty()) {
      writeFileAtomic(companion, calibrationText(cal));
      useCalibrationFile(companion);
    }
  } else if (const Int8Calibration* cal = activeInt8Calibration()) {
    writeFileAtomic(companion, calibrationText(*cal));
  }
  return tuner::tuneSearch(opts, runner);
}

/// Removes "--calibration FILE" / "--calibration=FILE" from \p words and
/// installs the calibration; returns true if one was given.
bool takeCalibrationOption(std::vector<char*>& words,
                           const std::string& program) {
  const std::string_view name = "--calibration";
  bool found = false;
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
    useCalibrationFile(value);
    found = true;
    words.erase(words.begin() + long(i), words.begin() + long(i + take));
  }
  return found;
}

int runMain(int argc, char** argv, const hpvm_rt::ModelInfo& info,
            const hpvm_rt::LoadWeightsFn& loadWeights,
            const hpvm_rt::RunBatchFn& runBatch) {
  std::string program = argc > 0 && argv[0] ? argv[0] : info.name;
  program = program.substr(program.find_last_of('/') + 1);
  // --calibration FILE (every mode): taken out of the words before the mode
  // parses its own options.
  std::vector<char*> words(argv, argv + argc);
  const bool explicitCalibration = takeCalibrationOption(words, program);
  words.push_back(nullptr);
  argc = static_cast<int>(words.size()) - 1;
  argv = words.data();
  if (argc > 1 && std::strcmp(argv[1], "calibrate") == 0)
    return runTunerMode(argc, argv, info, loadWeights, runBatch, program,
                        "calibrate", parseCalibrateOptions, calibrateHelp,
                        calibrateMode);
  if (argc > 1 && std::strcmp(argv[1], "tune-search") == 0)
    return runTunerMode(argc, argv, info, loadWeights, runBatch, program,
                        "tune-search", tuner::parseTuneOptions, tuner::tuneHelp,
                        tuneSearchCalibrated);
  if (argc > 1 && std::strcmp(argv[1], "bench-knobs") == 0)
    return runTunerMode(argc, argv, info, loadWeights, runBatch, program,
                        "bench-knobs", tuner::parseBenchOptions,
                        tuner::benchHelp, tuner::benchKnobs);
  RunOptions opts;
  try {
    opts = parseRunOptions(argc, argv);
  } catch (const UserError& e) {
    throw UserError(fmt::format("{}\nTry '{} --help'.", e.what(), program));
  }
  if (opts.help) {
    std::fputs(runHelp(program).c_str(), stdout);
    return 0;
  }
  std::string modelDir = resolveModelDir(opts.modelDir, info.modelDir);
  applyThreads(opts);

  // The configuration file: -c, else the one baked in at export.
  std::string configPath = opts.configFile;
  if (configPath.empty() && info.defaultConfig && *info.defaultConfig)
    configPath = info.defaultConfig[0] == '/' ? std::string(info.defaultConfig)
                                              : modelDir + info.defaultConfig;
  if (configPath.empty() &&
      (opts.allConfigs || !opts.configSelector.empty() || opts.qosLoss))
    throw UserError(fmt::format("{} needs a configuration file: give -c FILE "
                                "(the model has no default configuration)",
                                opts.allConfigs ? "--all-configs"
                                : opts.qosLoss  ? "--qos-loss"
                                                : "--config"));

  Runner runner(opts, info, runBatch, modelDir);
  if (info.inspect == 1) {
    loadWeights(modelDir);
    return runInspect(runner, opts, info);
  }

  std::unique_ptr<ConfigFile> file;
  const Configuration* config = nullptr;
  if (!configPath.empty()) {
    file = std::make_unique<ConfigFile>(parseConfigFile(configPath));
    const std::string companion = companionCalibration(configPath);
    if (!explicitCalibration && ::access(companion.c_str(), R_OK) == 0) {
      useCalibrationFile(companion);
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
  }
  // Check the dataset before the (possibly long) weight loading.
  Dataset ds = runner.openDataset(opts.set, opts.limit);
  loadWeights(modelDir);
  DeactivateOnExit deactivate;
  if (opts.allConfigs)
    return runAllConfigs(runner, opts, info, *file, ds);

  bool noted = false;
  if (config)
    noteGpuLines(*config, opts.quiet, noted);
  setActiveConfiguration(config, file ? file->path : "");
  const bool profiling = !opts.profileFile.empty() || !opts.traceFile.empty() ||
                         !opts.callLogFile.empty();
  setRecording(profiling);
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
  setRecording(false);

  std::printf("Accuracy: %.6f%% (%lld of %lld images)\n", result.accuracy(),
              static_cast<long long>(result.correct),
              static_cast<long long>(result.images));
  if (opts.printTime)
    printTimes(result, batch, result.images * opts.repeat);
  if (!opts.profileFile.empty() && !opts.quiet)
    std::fputs(profiler.profileTable().c_str(), stdout);
  std::fflush(stdout);

  // Files, each written atomically.
  writeFileAtomic("final_accuracy", fmt::format("{:.6f}", result.accuracy()));
  RuntimeController::get().writeProfile("profile_info.txt");
  if (!opts.outputNpy.empty())
    writeNpy(opts.outputNpy, {result.images, info.numClasses},
             result.outputs.data());
  if (!opts.profileFile.empty())
    writeJson(opts.profileFile, profiler.profileJson());
  if (!opts.traceFile.empty())
    writeJson(opts.traceFile, profiler.traceJson());
  if (!opts.callLogFile.empty())
    writeJson(opts.callLogFile, profiler.callLogJson());
  if (!opts.jsonFile.empty()) {
    double total = result.totalSeconds();
    std::vector<double> batchMs;
    for (double s : result.batchSeconds)
      batchMs.push_back(s * 1e3);
    writeJson(opts.jsonFile,
              {{"model", info.name},
               {"set", ds.name},
               {"images", result.images},
               {"batch_size", batch},
               {"repeat", opts.repeat},
               {"threads", numThreads()},
               {"isa", approx::isaName(approx::isaLevel())},
               {"accuracy", result.accuracy()},
               {"correct", result.correct},
               {"config", configJson(config, file.get())},
               {"time_ms", timeJson(timeStats(result.batchSeconds))},
               {"batch_times_ms", batchMs},
               {"images_per_second",
                total > 0 ? result.images * opts.repeat / total : 0.0}});
  }
  return 0;
}

} // namespace

} // namespace hpvm::rt

int hpvm_rt::runModel(int argc, char** argv, const ModelInfo& info,
                      const LoadWeightsFn& loadWeights,
                      const RunBatchFn& runBatch) {
  std::string program = argc > 0 && argv[0] ? argv[0] : info.name;
  program = program.substr(program.find_last_of('/') + 1);
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
