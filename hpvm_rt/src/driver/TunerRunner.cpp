// TunerRunner.cpp - the program's passes for the tuner's commands
// (TunerRunner.h).
#include "driver/TunerRunner.h"

#include "core/Launch.h"
#include "driver/Controller.h"
#include "kernels/Kernels.h"

#include <fmt/format.h>

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

namespace hpvm::rt {

PassResult TunerRunner::pass(const PassRequest& req) {
  Dataset ds = dataset(req.set);
  ds.count = std::min(req.images, ds.count);
  ds.labels.resize(static_cast<size_t>(ds.count));
  ds.batch = req.batch;
  LaunchSettings& settings = runner_.settings();
  settings.setConfiguration(req.config, "(tuning)");
  settings.setInputObserver(req.observer, req.observerContext);
  if (req.warmup) {
    Dataset warm = ds;
    warm.count = std::min(runner_.batchSize(ds), ds.count);
    runner_.run(warm, 1, false, nullptr, nullptr);
  }
  PassResult result;
  settings.setRecording(req.nodeTimes);
  const LaunchResults& launched = settings.results();
  BatchSink sink;
  if (req.nodeTimes)
    sink = [&](Tensor*, int64_t) {
      std::vector<double> node(launched.nodes.size(), 0.0);
      for (const OpRecord& r : launched.records)
        if (r.fusedOrdinal >= 1 &&
            static_cast<size_t>(r.fusedOrdinal) <= node.size())
          node[static_cast<size_t>(r.fusedOrdinal - 1)] += r.seconds;
      result.nodeSeconds.push_back(std::move(node));
      result.lastOps = launched.records;
    };
  RunResult r = runner_.run(ds, 1, req.keepOutputs, nullptr, sink);
  settings.setRecording(false);
  settings.setConfiguration(nullptr, "");
  settings.setInputObserver(nullptr, nullptr);
  RuntimeController::get().discardIterations();
  result.outputs = std::move(r.outputs);
  result.batchSeconds = std::move(r.batchSeconds);
  return result;
}

int TunerRunner::threads() const { return numThreads(); }

std::array<int64_t, 3> TunerRunner::map() const {
  return segmentationMap(info_);
}

std::string TunerRunner::fingerprint() {
  std::string out;
  auto add = [&out](const std::string& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0)
      return;
    out +=
        fmt::format("{} {} {}.{:09};", path, static_cast<int64_t>(st.st_size),
                    static_cast<int64_t>(st.st_mtim.tv_sec),
                    static_cast<int64_t>(st.st_mtim.tv_nsec));
  };
  add("/proc/self/exe"); // (stat follows the link to the binary)
  std::vector<std::string> weights;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(
           std::filesystem::path(runner_.modelDir()) / "weights", ec))
    weights.push_back(e.path().string());
  std::sort(weights.begin(), weights.end());
  for (const std::string& w : weights)
    add(w);
  for (const char* set : {"tune", "test"}) {
    if (setSize(set) <= 0)
      continue;
    const Dataset& ds = dataset(set);
    add(ds.inputPath);
    add(ds.labelsPath);
  }
  return out;
}

} // namespace hpvm::rt
