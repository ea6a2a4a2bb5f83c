// Progress.h - the one-line progress bar of the generated programs' long
// work (a run over a dataset, the tuner's phases), drawn on stderr only
// when it is a terminal, and the seconds-since helper both time with.
#ifndef HPVM_RT_COMMAND_PROGRESS_H
#define HPVM_RT_COMMAND_PROGRESS_H

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace hpvm::rt {

using Clock = std::chrono::steady_clock;

/// Seconds from \p start to now.
inline double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// "label [=====     ] done/total unit ~Ns left  note", redrawn at most ten
/// times a second on a terminal's stderr; nothing elsewhere or when
/// disabled. The time left is the time so far per item times the items
/// left (shown once an item is done). The line is erased when the bar goes
/// away.
class ProgressBar {
public:
  ProgressBar(std::string label, int64_t total, bool enabled,
              std::string unit = "")
      : label_(std::move(label)), unit_(std::move(unit)), total_(total),
        enabled_(enabled && total > 0 && isatty(STDERR_FILENO)),
        start_(Clock::now()) {}
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void update(int64_t done, const std::string& note = "") {
    if (!enabled_)
      return;
    auto now = Clock::now();
    if (done < total_ && now - last_ < std::chrono::milliseconds(100))
      return;
    last_ = now;
    constexpr int kWidth = 30;
    int filled = static_cast<int>(kWidth * std::min(done, total_) / total_);
    std::string left;
    if (done > 0 && done < total_)
      left = "  " + timeLeft(secondsSince(start_) *
                             static_cast<double>(total_ - done) /
                             static_cast<double>(done));
    std::fprintf(stderr, "\r%s%s[%s%s] %lld/%lld%s%s%s%s\033[K", label_.c_str(),
                 label_.empty() ? "" : " ",
                 std::string(static_cast<size_t>(filled), '=').c_str(),
                 std::string(static_cast<size_t>(kWidth - filled), ' ').c_str(),
                 static_cast<long long>(done), static_cast<long long>(total_),
                 unit_.empty() ? "" : " ", unit_.c_str(), left.c_str(),
                 note.empty() ? "" : ("  " + note).c_str());
    drawn_ = true;
  }
  ~ProgressBar() {
    if (drawn_)
      std::fprintf(stderr, "\r\033[K");
  }

  /// "~42s left", "~3m05s left" for \p seconds.
  static std::string timeLeft(double seconds) {
    const long s = std::lround(seconds);
    char text[48];
    if (s < 60)
      std::snprintf(text, sizeof text, "~%lds left", s);
    else
      std::snprintf(text, sizeof text, "~%ldm%02lds left", s / 60, s % 60);
    return text;
  }

private:
  std::string label_, unit_;
  int64_t total_;
  bool enabled_, drawn_ = false;
  Clock::time_point start_, last_{};
};

} // namespace hpvm::rt

#endif // HPVM_RT_COMMAND_PROGRESS_H
