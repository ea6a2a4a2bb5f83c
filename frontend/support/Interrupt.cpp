// Interrupt.cpp - see Interrupt.h.
#include "support/Interrupt.h"

#include "support/Diagnostics.h"

#include <csignal>
#include <string>

namespace hpvm::fe {

namespace {

volatile std::sig_atomic_t gSignal = 0;
volatile std::sig_atomic_t gGroup = 0; // pid_t fits in sig_atomic_t (int)

extern "C" void onInterrupt(int sig) {
  // Async-signal-safe only: record, and stop the running command.
  if (gSignal == 0)
    gSignal = sig;
  if (gGroup > 0)
    ::kill(-static_cast<pid_t>(gGroup), SIGTERM);
}

} // namespace

void installInterruptHandlers() {
  struct sigaction sa = {};
  sa.sa_handler = onInterrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0; // no SA_RESTART: a waitpid() returns EINTR
  for (int sig : {SIGINT, SIGTERM, SIGHUP})
    ::sigaction(sig, &sa, nullptr);
}

int interruptSignal() { return gSignal; }

void throwIfInterrupted() {
  const int sig = gSignal;
  if (sig == 0)
    return;
  const char* name = sig == SIGINT    ? "SIGINT"
                     : sig == SIGTERM ? "SIGTERM"
                     : sig == SIGHUP  ? "SIGHUP"
                                      : "a signal";
  throw UserError(std::string("interrupted by ") + name +
                      "; nothing was written (the temporary directory is "
                      "removed)",
                  128 + sig);
}

void setRunningGroup(pid_t pgid) {
  gGroup = pgid;
  // A signal that arrived just before the group was known.
  if (pgid > 0 && gSignal != 0)
    ::kill(-pgid, SIGTERM);
}

} // namespace hpvm::fe
