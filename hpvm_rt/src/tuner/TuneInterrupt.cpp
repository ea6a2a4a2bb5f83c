// TuneInterrupt.cpp - Ctrl-C during tune-search: the watcher thread and
// handler that set the interrupt flag, and the check the session makes
// before every pass.
#include "tuner/TuneInterrupt.h"

#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <ctime>

namespace hpvm::rt::tuner {

namespace {

std::atomic<bool> gInterrupted{false};
/// Tells the watcher to return.
std::atomic<bool> gStopWatching{false};

/// The signals the guard catches.
sigset_t caughtSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

/// Ends the process with \p sig's default action (as an uncaught Ctrl-C
/// does), from the watcher thread.
[[noreturn]] void dieOf(int sig) {
  std::signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  raise(sig);
  std::_Exit(128 + sig); // (not reached: the default action ends it)
}

/// The watcher thread: the first signal sets the flag, a second one ends
/// the process at once. Polls the stop flag every 50 ms.
void watch() {
  const sigset_t set = caughtSignals();
  const timespec poll{0, 50 * 1000 * 1000};
  while (!gStopWatching) {
    int sig = sigtimedwait(&set, nullptr, &poll);
    if (sig < 0)
      continue; // EAGAIN (timeout) or EINTR
    if (gInterrupted)
      dieOf(sig);
    gInterrupted = true;
  }
}

/// The fallback handler, for a thread that does not block the signals.
extern "C" void onInterrupt(int sig) {
  gInterrupted = true;
  // A second signal ends the process at once.
  std::signal(sig, SIG_DFL);
}

/// Applies \p how (SIG_BLOCK / SIG_UNBLOCK) of the caught signals in every
/// thread of OpenMP's team, which run the kernels.
void maskOpenMpThreads(int how) {
  const sigset_t set = caughtSignals();
#pragma omp parallel
  pthread_sigmask(how, &set, nullptr);
}

} // namespace

void checkInterrupt() {
  if (gInterrupted)
    throw Interrupted{};
}

InterruptGuard::InterruptGuard() {
  gInterrupted = false;
  gStopWatching = false;
  struct sigaction sa {};
  sa.sa_handler = onInterrupt;
  sigaction(SIGINT, &sa, &oldInt_);
  sigaction(SIGTERM, &sa, &oldTerm_);
  const sigset_t set = caughtSignals();
  pthread_sigmask(SIG_BLOCK, &set, &oldMask_);
  maskOpenMpThreads(SIG_BLOCK);
  watcher_ = std::thread(watch); // (inherits the blocked mask)
}

InterruptGuard::~InterruptGuard() {
  gStopWatching = true;
  watcher_.join();
  maskOpenMpThreads(SIG_UNBLOCK);
  // A signal the watcher did not take is pending: it arrives with the
  // handler still in place and sets the flag.
  pthread_sigmask(SIG_SETMASK, &oldMask_, nullptr);
  sigaction(SIGINT, &oldInt_, nullptr);
  sigaction(SIGTERM, &oldTerm_, nullptr);
}

} // namespace hpvm::rt::tuner
