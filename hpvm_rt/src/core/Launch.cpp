// Launch.cpp - the settings of a program's launches (Launch.h); the
// executor's binding point, bindLaunchSettings(), is in Executor.cpp.
#include "core/Launch.h"

#include <atomic>
#include <cstdint>
#include <utility>

namespace hpvm::rt {

namespace {

/// A new schedule stamp. Process-wide, as the plan cache whose schedules
/// carry them: settings objects never share one.
uint64_t newScheduleStamp() {
  static std::atomic<uint64_t> last{0};
  return ++last;
}

} // namespace

LaunchSettings::LaunchSettings() : scheduleStamp_(newScheduleStamp()) {}

void LaunchSettings::setConfiguration(const Configuration* config,
                                      std::string path) {
  config_ = config;
  configPath_ = std::move(path);
  scheduleStamp_ = newScheduleStamp();
}

void LaunchSettings::setCalibration(const Int8Calibration* cal) {
  calibration_ = cal;
  scheduleStamp_ = newScheduleStamp();
}

void LaunchSettings::setChannelViews(bool on) {
  channelViews_ = on;
  scheduleStamp_ = newScheduleStamp();
}

void LaunchSettings::setGateFolding(bool on) {
  gateFolding_ = on;
  scheduleStamp_ = newScheduleStamp();
}

void LaunchSettings::setRecording(bool on) {
  recording_ = on;
  if (!on)
    results_.records.clear();
}

void LaunchSettings::setInputObserver(InputObserver observer, void* context) {
  observer_ = observer;
  observerContext_ = context;
}

void LaunchSettings::setOutputBuffers(float* const* buffers,
                                      const int64_t* elems, size_t count) {
  outputBuffers_.clear();
  for (size_t i = 0; i < count; ++i)
    outputBuffers_.emplace_back(buffers[i], elems[i]);
}

float* LaunchSettings::outputBuffer(size_t i, int64_t elems) const {
  if (i >= outputBuffers_.size())
    return nullptr;
  const auto [buffer, want] = outputBuffers_[i];
  const bool aligned = reinterpret_cast<uintptr_t>(buffer) % 64 == 0;
  return buffer && aligned && want == elems ? buffer : nullptr;
}

} // namespace hpvm::rt
