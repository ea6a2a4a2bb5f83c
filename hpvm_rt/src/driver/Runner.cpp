// Runner.cpp - runs the generated program over a data set in batches
// (Runner.h), and where its files are.
#include "driver/Runner.h"

#include "base/Errors.h"
#include "base/FileUtil.h"
#include "command/Progress.h"
#include "core/Top1.h"
#include "driver/Controller.h"
#include "kernels/Kernels.h"
#include "tensor_runtime.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <memory>

namespace hpvm::rt {

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
  quietOwnOpenMPThreads();
}

void quietOwnOpenMPThreads() {
  if (const char* env = std::getenv("KMP_BLOCKTIME"); env && *env)
    return; // the user's choice
  using SetBlocktime = void (*)(int);
  // Only libomp defines it (libgomp has no such call).
  static const auto set = reinterpret_cast<SetBlocktime>(
      ::dlsym(RTLD_DEFAULT, "kmp_set_blocktime"));
  if (set)
    set(0);
}

void Runner::useCalibration(std::unique_ptr<Int8Calibration> cal) {
  calibration_ = std::move(cal);
  settings_.setCalibration(calibration_.get());
}

Dataset Runner::openDataset(const std::string& set,
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
  ds.count = count;
  if (limit) {
    if (*limit > count)
      throw UserError(fmt::format("--limit {} exceeds the {} images of the "
                                  "{} set",
                                  *limit, count, set));
    ds.count = *limit;
  }
  // Labels are optional (a model without classes has none).
  std::error_code missing;
  if (!std::filesystem::exists(ds.labelsPath, missing))
    return ds;
  ds.labeled = true;
  want = static_cast<uint64_t>(count) * 4;
  have = fileSize(ds.labelsPath, "labels file");
  if (have != want)
    throw UserError(fmt::format("{}: {} bytes, expected {} labels x int32 "
                                "= {} bytes",
                                ds.labelsPath, have, count, want));
  ds.labels.resize(static_cast<size_t>(ds.count));
  std::ifstream in(ds.labelsPath, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(ds.labels.data()),
               static_cast<std::streamsize>(ds.count * 4)))
    throw UserError(fmt::format("{}: cannot read labels", ds.labelsPath));
  for (size_t i = 0; i < ds.labels.size(); ++i)
    if (ds.labels[i] < 0 || ds.labels[i] >= outputElems(0))
      throw UserError(fmt::format("{}: label {} at index {} is out of "
                                  "range; the model has {} classes",
                                  ds.labelsPath, ds.labels[i], i,
                                  outputElems(0)));
  return ds;
}

int64_t Runner::batchSize(const Dataset& ds) const {
  int64_t batch = ds.batch > 0      ? ds.batch
                  : opts_.batchSize ? *opts_.batchSize
                                    : info_.defaultBatch;
  if (batch <= 0 || batch > ds.count)
    batch = ds.count;
  return batch;
}

RunResult Runner::run(const Dataset& ds, int64_t repeat, bool keepOutputs,
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
  std::vector<float> rows; // a batch's outputs, image by image
  if (keepOutputs)
    result.outputs.reserve(static_cast<size_t>(ds.count * info_.numClasses));
  ProgressBar progress("", ds.count * repeat, !opts_.quiet, "images");
  RuntimeController& controller = RuntimeController::get();
  LaunchScope launches(settings_);
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
      void* input = create4DTensor(
          0, 0, static_cast<size_t>(n), static_cast<size_t>(info_.channels),
          static_cast<size_t>(info_.height), static_cast<size_t>(info_.width));
      initTensorData(input, staging.data(), bytes);

      const auto t0 = Clock::now();
      auto* out = static_cast<Tensor*>(runBatch_(input));
      std::vector<Tensor*> outs = {out};
      for (int k = 1; k < numOutputs(); ++k)
        outs.push_back(static_cast<Tensor*>(info_.outputOf(k)));
      for (size_t k = 0; k < outs.size(); ++k) {
        if (!outs[k])
          throw UserError(fmt::format("images {} to {}: the program returned "
                                      "no output tensor {}",
                                      start, start + n, k));
        hpvm_request_tensor(outs[k], 0);
      }
      const double seconds = secondsSince(t0);
      result.batchSeconds.push_back(seconds);

      for (size_t k = 0; k < outs.size(); ++k)
        checkOutput(outs[k], static_cast<int>(k), n, start);
      if (pass == 0) {
        const float* data = batchRows(outs, n, rows);
        result.labeled = ds.labeled;
        if (ds.labeled)
          result.correct += countCorrect(data, ds, start, n);
        result.images += n;
        if (keepOutputs)
          result.outputs.insert(result.outputs.end(), data,
                                data + n * info_.numClasses);
        if (sink)
          sink(out, n);
      }
      const std::vector<OpRecord>& records = settings_.results().records;
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

uint64_t Runner::imageElems() const {
  return static_cast<uint64_t>(info_.channels * info_.height * info_.width);
}

int graphOutputs(const hpvm_rt::ModelInfo& info) {
  return info.numOutputs > 1 && info.outputs && info.outputOf ? info.numOutputs
                                                              : 1;
}

int64_t outputValues(const hpvm_rt::OutputInfo& o) {
  int64_t values = 1;
  for (int d = 0; d < o.rank; ++d)
    values *= o.dims[d];
  return values;
}

int64_t outputValues(const hpvm_rt::ModelInfo& info, int k) {
  return graphOutputs(info) == 1 ? info.numClasses
                                 : outputValues(info.outputs[k]);
}

std::array<int64_t, 3> segmentationMap(const hpvm_rt::ModelInfo& info) {
  const hpvm_rt::OutputInfo* o = info.outputs;
  if (o == nullptr || o[0].rank != 3 || o[0].dims[0] < 2 ||
      o[0].dims[1] * o[0].dims[2] < 2)
    return {0, 0, 0};
  return {o[0].dims[0], o[0].dims[1], o[0].dims[2]};
}

int Runner::numOutputs() const { return graphOutputs(info_); }

int64_t Runner::outputElems(int k) const { return outputValues(info_, k); }

void Runner::checkOutput(const Tensor* out, int k, int64_t n,
                         int64_t start) const {
  uint64_t want = static_cast<uint64_t>(n * outputElems(k));
  if (out->dims.num_dims < 1 ||
      out->dims.dim_sizes[0] != static_cast<size_t>(n) ||
      out->num_elems != want)
    throw UserError(fmt::format(
        "images {} to {}: the program's output{} has {} values with batch "
        "dimension {}, expected {} images x {} {}",
        start, start + n, numOutputs() > 1 ? fmt::format(" {}", k) : "",
        out->num_elems, out->dims.num_dims ? out->dims.dim_sizes[0] : 0, n,
        outputElems(k), numOutputs() > 1 ? "values" : "classes"));
}

const float* Runner::batchRows(const std::vector<Tensor*>& outs, int64_t n,
                               std::vector<float>& rows) const {
  if (outs.size() == 1)
    return static_cast<const float*>(outs[0]->host_data);
  rows.resize(static_cast<size_t>(n * info_.numClasses));
  float* row = rows.data();
  for (int64_t i = 0; i < n; ++i)
    for (size_t k = 0; k < outs.size(); ++k) {
      const int64_t elems = outputElems(static_cast<int>(k));
      const float* from = static_cast<const float*>(outs[k]->host_data);
      row = std::copy(from + i * elems, from + (i + 1) * elems, row);
    }
  return rows.data();
}

int64_t Runner::countCorrect(const float* rows, const Dataset& ds,
                             int64_t start, int64_t n) const {
  const int64_t classes = outputElems(0);
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    correct += top1(rows + i * info_.numClasses, classes) ==
               ds.labels[static_cast<size_t>(start + i)];
  }
  return correct;
}

} // namespace hpvm::rt
