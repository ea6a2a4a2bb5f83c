// TuneInterrupt.h - Ctrl-C during tune-search: SIGINT and SIGTERM set a flag
// that the session checks before every pass, so that every finished
// measurement is kept for --resume.
#ifndef HPVM_RT_TUNER_TUNEINTERRUPT_H
#define HPVM_RT_TUNER_TUNEINTERRUPT_H

#include <csignal>

namespace hpvm::rt::tuner {

/// Thrown by checkInterrupt() after SIGINT or SIGTERM.
struct Interrupted {};

/// Throws Interrupted if SIGINT or SIGTERM arrived while an InterruptGuard
/// was catching them.
void checkInterrupt();

/// Catches SIGINT and SIGTERM while it lives (a second signal ends the
/// process at once), then puts back the handlers it found.
class InterruptGuard {
public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

private:
  struct sigaction oldInt_ = {};  ///< SIGINT's handler before.
  struct sigaction oldTerm_ = {}; ///< SIGTERM's handler before.
};

} // namespace hpvm::rt::tuner

#endif // HPVM_RT_TUNER_TUNEINTERRUPT_H
