// TuneInterrupt.h - Ctrl-C during tune-search: SIGINT and SIGTERM set a flag
// that the session checks before every pass, so that every finished
// measurement is kept for --resume.
#ifndef HPVM_RT_TUNER_TUNEINTERRUPT_H
#define HPVM_RT_TUNER_TUNEINTERRUPT_H

#include <csignal>
#include <thread>

namespace hpvm::rt::tuner {

/// Thrown by checkInterrupt() after SIGINT or SIGTERM.
struct Interrupted {};

/// Throws Interrupted if SIGINT or SIGTERM arrived while an InterruptGuard
/// was catching them.
void checkInterrupt();

/// Catches SIGINT and SIGTERM while it lives (a second signal ends the
/// process at once), then puts back the signal mask and handlers it found.
///
/// The signals never interrupt the computing threads: the guard blocks
/// them in the calling thread and in OpenMP's threads, and one watcher
/// thread, which computes nothing, takes them with sigtimedwait(). (A
/// signal handled in the middle of a kernel corrupted the heap about once
/// in 20 interruptions on an AVX-512 machine; blocking removes the
/// window.) Should a signal still reach a thread that does not block it,
/// a handler sets the same flag.
class InterruptGuard {
public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

private:
  struct sigaction oldInt_ = {};  ///< SIGINT's handler before.
  struct sigaction oldTerm_ = {}; ///< SIGTERM's handler before.
  sigset_t oldMask_;              ///< The calling thread's mask before.
  std::thread watcher_;           ///< Takes the blocked signals.
};

} // namespace hpvm::rt::tuner

#endif // HPVM_RT_TUNER_TUNEINTERRUPT_H
