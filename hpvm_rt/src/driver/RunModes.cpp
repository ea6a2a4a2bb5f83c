// RunModes.cpp - HPVM's tuner protocol over FIFOs and the --all-configs
// sweep (RunModes.h).
#include "driver/RunModes.h"

#include "approx/HalfConv.h"
#include "approx/Isa.h"
#include "base/Errors.h"
#include "base/FileUtil.h"
#include "config/Config.h"
#include "core/Launch.h"
#include "driver/Controller.h"
#include "driver/RunReport.h"
#include "kernels/Kernels.h"
#include "tuner/Model.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

namespace hpvm::rt {

int runInspect(Runner& runner, const RunOptions& opts,
               const hpvm_rt::ModelInfo& info) {
  const std::string readPath = runner.modelDir() + "hpvm_fifo_r";
  const std::string writePath = runner.modelDir() + "hpvm_fifo_w";
  const std::string confPath = runner.modelDir() + "tuner_confs.txt";
  std::unique_ptr<ConfigFile> active;
  DeactivateOnExit deactivate{runner.settings()};
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
    runner.settings().setConfiguration(&config, file->path);
    active = std::move(file);

    Dataset ds = runner.openDataset(request, std::nullopt);
    if (!ds.labeled)
      throw UserError(fmt::format("{}: no such labels file; HPVM's tuner "
                                  "reads the accuracy they give",
                                  ds.labelsPath));
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

namespace {

/// How --all-configs measures a set without labels: a segmentation map's
/// per-pixel classes (mIoU), or any other output's relative error, against
/// the exact program's outputs (tuner/Model.h's metrics).
struct OutputQos {
  tuner::QosSpec spec;
  const char* name;   ///< Table column.
  const char* metric; ///< JSON (tune-search's --qos name).
};

OutputQos outputQos(const hpvm_rt::ModelInfo& info) {
  OutputQos q;
  const std::array<int64_t, 3> map = segmentationMap(info);
  if (map[0] > 0) {
    q.spec.metric = tuner::QosSpec::Metric::MIoU;
    q.spec.mapChannels = map[0];
    q.spec.mapPixels = map[1] * map[2];
    q.name = "mIoU";
    q.metric = "miou";
  } else {
    q.spec.metric = tuner::QosSpec::Metric::RelErr;
    q.name = "1-relerr";
    q.metric = "relerr";
  }
  return q;
}

} // namespace

int runAllConfigs(Runner& runner, const RunOptions& opts,
                  const hpvm_rt::ModelInfo& info, const ConfigFile& file,
                  const Dataset& ds) {
  for (const Configuration& config : file.configs)
    checkOpCount(config, file.path, info.numOps);
  // Without labels, each configuration's outputs are compared with the
  // exact program's (kept in memory: at most kMaxKeptBytes of them).
  const OutputQos qos = outputQos(info);
  constexpr uint64_t kMaxKeptBytes = uint64_t(1) << 30;
  const bool keep = !ds.labeled;
  if (keep &&
      uint64_t(ds.count) * uint64_t(info.numClasses) * 4 > kMaxKeptBytes)
    throw UserError(fmt::format(
        "--all-configs compares the outputs of a set without labels ({}) "
        "with the exact program's, and {} images of {} values each take "
        "more than 1 GiB: give --limit N",
        ds.labelsPath, ds.count, info.numClasses));
  auto quality = [&](const RunResult& r, const RunResult& exact) {
    return r.labeled ? r.accuracy()
                     : tuner::qosValue(qos.spec, r.outputs.data(),
                                       exact.outputs.data(), nullptr, r.images,
                                       info.numClasses);
  };
  const std::string qosName = ds.labeled ? "Accuracy" : qos.name;
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
  runner.settings().setConfiguration(nullptr, "");
  runner.run(warmup, 1, false, nullptr, nullptr);
  RunResult exact = runner.run(ds, opts.repeat, keep, nullptr, nullptr);
  const double exactTime = exact.totalSeconds();
  const double exactQos = quality(exact, exact);

  std::string table =
      fmt::format("{:<20} {:>10} {:>10} {:>11} {:>10}\n", "Configuration",
                  "Predicted", "Measured", qosName, "Loss");
  table += fmt::format("{:<20} {:>10} {:>9.3f}x {:>10.4f}% {:>10.4f}\n",
                       "(exact fp32)", "-", 1.0, exactQos, 0.0);
  nlohmann::json rows = nlohmann::json::array();
  bool noted = false;
  for (const Configuration& config : file.configs) {
    noteGpuLines(config, opts.quiet, noted);
    runner.settings().setConfiguration(&config, file.path);
    runner.run(warmup, 1, false, nullptr, nullptr);
    RunResult r = runner.run(ds, opts.repeat, keep, nullptr, nullptr);
    double time = r.totalSeconds();
    double measured = time > 0 ? exactTime / time : 0.0;
    const double value = quality(r, exact);
    double loss = exactQos - value;
    table += fmt::format("{:<20} {:>9.3f}x {:>9.3f}x {:>10.4f}% {:>10.4f}\n",
                         config.name, config.speedup, measured, value, loss);
    nlohmann::json row = configJson(&config, &file);
    row["measured_speedup"] = measured;
    if (ds.labeled) {
      row["accuracy"] = r.accuracy();
      row["correct"] = r.correct;
      row["accuracy_loss"] = loss;
    } else {
      row["qos"] = value;
      row["qos_loss"] = loss;
    }
    row["time_ms"] = timeJson(timeStats(r.batchSeconds));
    rows.push_back(row);
  }
  runner.settings().setConfiguration(nullptr, "");
  // profile_info.txt describes one configuration's run, not this sweep.
  RuntimeController::get().discardIterations();
  std::fputs(table.c_str(), stdout);
  if (!opts.jsonFile.empty())
    writeJson(
        opts.jsonFile,
        {{"model", info.name},
         {"set", ds.name},
         {"images", ds.count},
         {"batch_size", batch},
         {"repeat", opts.repeat},
         {"threads", numThreads()},
         {"isa", approx::isaName(approx::isaLevel())},
         {"fp16", approx::halfConvAvailable() ? "half" : "emulated"},
         {"config_file", file.path},
         {"qos_metric", ds.labeled ? "top1" : qos.metric},
         {"exact",
          ds.labeled ? nlohmann::json{{"accuracy", exact.accuracy()},
                                      {"correct", exact.correct},
                                      {"time_ms",
                                       timeJson(timeStats(exact.batchSeconds))}}
                     : nlohmann::json{{"qos", exactQos},
                                      {"time_ms", timeJson(timeStats(
                                                      exact.batchSeconds))}}},
         {"configs", rows}});
  return 0;
}

} // namespace hpvm::rt
