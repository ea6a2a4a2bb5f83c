// Controller.cpp - the runtime controller and HPVM's llvm_hpvm_*
// controller entry points (initialize, invoke per batch, clear).
#include "driver/Controller.h"

#include "base/Errors.h"
#include "base/FileUtil.h"
#include "config/Config.h"
#include "core/Top1.h"
#include "tensor_runtime.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace hpvm::rt {

std::string formatProfileInfo(const std::vector<ProfileIteration>& iterations) {
  std::string out;
  double total = 0;
  for (size_t i = 0; i < iterations.size(); ++i) {
    const ProfileIteration& it = iterations[i];
    double ms = it.computeSeconds * 1e3;
    total += ms;
    out += fmt::format("Iteration {}\n", i);
    for (const auto& [name, seconds] : it.kernels)
      out += fmt::format("{} {:.6f} 0\n", name, seconds * 1e3);
    out += fmt::format("\nIteration Compute Time   : {:.6f}\n"
                       "Iteration Compute Energy : 0\n"
                       "Iteration Control Time   : 0\n"
                       "Iteration Control Energy : 0\n"
                       "Iteration Config Time   : 0\n"
                       "Iteration Config Energy : 0\n"
                       "Iteration End Frequency : 0\n\n\n",
                       ms);
  }
  out += fmt::format("Total Compute Time  : {:.6f}\n"
                     "Total Compute Energy: 0\n"
                     "Total Control Time  : 0\n"
                     "Total Control Energy: 0\n"
                     "Total Config Time  : 0\n"
                     "Total Config Energy: 0\n"
                     "Total Time  : {:.6f}\n"
                     "Total Energy: 0\n",
                     total, total);
  return out;
}

std::string profileKernelName(const OpRecord& record) {
  std::string_view call = opInfo(record.op).rtCall;
  std::string name(call.substr(0, call.find('(')));
  if (record.knob.id != kKnobFp32)
    name += fmt::format("({})", knobConfName(record.knob.id));
  return name;
}

void noteGpuLines(const Configuration& config, bool quiet, bool& noted) {
  if (noted || quiet)
    return;
  for (const NodeConfig& node : config.nodes) {
    if (!node.gpu)
      continue;
    std::fprintf(stderr,
                 "hpvm_rt: note: configuration lines marked 'gpu' run on the "
                 "CPU with the same knobs (fp16 knobs with half-precision "
                 "numerics)\n");
    noted = true;
    return;
  }
}

void checkOpCount(const Configuration& config, const std::string& path,
                  int64_t numOps) {
  if (numOps <= 0 || config.nodes.empty())
    return;
  const NodeConfig& last = config.nodes.back();
  int64_t covered = last.key + static_cast<int64_t>(last.ops.size()) - 1;
  // A line past the program's ops: that line, with the ops that exist.
  for (const NodeConfig& node : config.nodes) {
    const int64_t end = node.key + static_cast<int64_t>(node.ops.size()) - 1;
    if (end <= numOps)
      continue;
    throw UserError(
        path, node.line, 1,
        fmt::format("line '{}' of configuration '{}' covers {}, but the "
                    "program has {} op{} (1 to {}): remove the lines past "
                    "op {}",
                    node.name, config.name,
                    node.key == end
                        ? fmt::format("op {}", end)
                        : fmt::format("ops {} to {}", node.key, end),
                    numOps, numOps == 1 ? "" : "s", numOps, numOps));
  }
  if (covered != numOps)
    throw UserError(path, config.line, 1,
                    fmt::format("configuration '{}' covers {} op{} but the "
                                "program has {}",
                                config.name, covered, covered == 1 ? "" : "s",
                                numOps));
}

RuntimeController& RuntimeController::get() {
  static RuntimeController controller;
  return controller;
}

void RuntimeController::initialize(const std::string& path) {
  auto file = std::make_unique<ConfigFile>(parseConfigFile(path));
  file_ = std::move(file);
  // HPVM's default policy: the first block, for every batch.
  const Configuration& first = file_->configs.front();
  noteGpuLines(first, false, notedGpu_);
  settings_.setConfiguration(&first, file_->path);
  settings_.setRecording(true);
  bindLaunchSettings(&settings_);
  mark_ = std::chrono::steady_clock::now();
}

void RuntimeController::recordIteration(ProfileIteration iteration) {
  iterations_.push_back(std::move(iteration));
}

bool RuntimeController::writeProfile(const std::string& path) {
  if (iterations_.empty())
    return false;
  std::string text = formatProfileInfo(iterations_);
  iterations_.clear();
  writeFileAtomic(path, text);
  return true;
}

void RuntimeController::invoke(void* result, const char* labelsPath, int start,
                               int end) {
  auto now = std::chrono::steady_clock::now();
  ProfileIteration iteration;
  iteration.computeSeconds = std::chrono::duration<double>(now - mark_).count();
  for (const OpRecord& r : settings_.results().records)
    iteration.kernels.emplace_back(profileKernelName(r), r.seconds);
  recordIteration(std::move(iteration));

  // HPVM reads the whole labels file once; later paths are ignored.
  if (labelsPath_.empty()) {
    std::string path = labelsPath ? labelsPath : "";
    uint64_t bytes = fileSize(path, "labels file");
    if (bytes % 4 != 0)
      throw UserError(fmt::format("{}: {} bytes is not a whole number of "
                                  "int32 labels",
                                  path, bytes));
    labels_.resize(bytes / 4);
    std::ifstream in(path, std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(labels_.data()),
                 static_cast<std::streamsize>(bytes)))
      throw UserError(fmt::format("{}: cannot read labels file", path));
    labelsPath_ = path;
  }
  if (start < 0 || end <= start || static_cast<size_t>(end) > labels_.size())
    throw UserError(fmt::format("{}: batch [{}, {}) is outside its {} labels",
                                labelsPath_, start, end, labels_.size()));
  auto* t = static_cast<Tensor*>(result);
  if (!t)
    throw UserError("llvm_hpvm_invokeRtControl: the result tensor is null");
  hpvm_request_tensor(t, 0);
  size_t n = static_cast<size_t>(end - start);
  if (t->dims.num_dims < 2 || t->dims.dim_sizes[0] != n ||
      t->num_elems % n != 0)
    throw UserError(fmt::format(
        "llvm_hpvm_invokeRtControl: the result tensor has {} elements with "
        "batch dimension {}, expected a batch of {}",
        t->num_elems, t->dims.num_dims ? t->dims.dim_sizes[0] : 0, n));
  size_t classes = t->num_elems / n;
  const float* data = static_cast<const float*>(t->host_data);
  size_t correct = 0;
  for (size_t i = 0; i < n; ++i) {
    int64_t best = top1(data + i * classes, static_cast<int64_t>(classes));
    int32_t label = labels_[static_cast<size_t>(start) + i];
    if (label < 0 || static_cast<size_t>(label) >= classes)
      throw UserError(fmt::format("{}: label {} at index {} is out of range; "
                                  "the model has {} classes",
                                  labelsPath_, label, start + i, classes));
    correct += best == label;
  }
  double accuracy = 100.0 * static_cast<double>(correct) / n;
  std::printf("batch_dim = %zu, num_classes = %zu\n****** Accuracy = %f\n", n,
              classes, accuracy);
  accuracySum_ += accuracy;
  ++batches_;
  writeFileAtomic("final_accuracy",
                  fmt::format("{:.6f}", accuracySum_ / batches_));
  mark_ = std::chrono::steady_clock::now();
}

} // namespace hpvm::rt

namespace {

/// Ends the process after an error escaped an llvm_hpvm_* entry point.
[[noreturn]] void fatal() {
  std::exit(hpvm::rt::reportError("hpvm_rt", std::current_exception()));
}

} // namespace

extern "C" void llvm_hpvm_initializeRuntimeController(const char* path) {
  try {
    hpvm::rt::RuntimeController::get().initialize(path ? path : "");
  } catch (...) {
    fatal();
  }
}

extern "C" void llvm_hpvm_clearRuntimeController() {
  try {
    hpvm::rt::RuntimeController::get().writeProfile("profile_info.txt");
  } catch (...) {
    fatal();
  }
}

extern "C" void llvm_hpvm_invokeRtControl(void* result, const char* labels,
                                          int start, int end) {
  try {
    hpvm::rt::RuntimeController::get().invoke(result, labels, start, end);
  } catch (...) {
    fatal();
  }
}
