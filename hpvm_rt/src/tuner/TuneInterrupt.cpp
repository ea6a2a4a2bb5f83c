// TuneInterrupt.cpp - Ctrl-C during tune-search: the signal handler, its
// flag and the check the session makes before every pass.
#include "tuner/TuneInterrupt.h"

#include <atomic>

namespace hpvm::rt::tuner {

namespace {

std::atomic<bool> gInterrupted{false};

extern "C" void onInterrupt(int sig) {
  gInterrupted = true;
  // A second signal ends the process at once.
  std::signal(sig, SIG_DFL);
}

} // namespace

void checkInterrupt() {
  if (gInterrupted)
    throw Interrupted{};
}

InterruptGuard::InterruptGuard() {
  gInterrupted = false;
  struct sigaction sa {};
  sa.sa_handler = onInterrupt;
  sigaction(SIGINT, &sa, &oldInt_);
  sigaction(SIGTERM, &sa, &oldTerm_);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &oldInt_, nullptr);
  sigaction(SIGTERM, &oldTerm_, nullptr);
}

} // namespace hpvm::rt::tuner
