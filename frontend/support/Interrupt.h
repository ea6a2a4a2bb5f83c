// Interrupt.h - what SIGINT, SIGTERM and SIGHUP do to an export: the
// running build command (its whole process group) is stopped at once, the
// export unwinds at its next check (removing its temporary directory), and
// the tool exits with 128 + the signal's number.
#ifndef TORCH2HPVM_FRONTEND_SUPPORT_INTERRUPT_H
#define TORCH2HPVM_FRONTEND_SUPPORT_INTERRUPT_H

#include <sys/types.h>

namespace hpvm::fe {

/// Installs the handlers (torch2hpvm-export's main()).
void installInterruptHandlers();
/// The signal that interrupted the tool, or 0.
int interruptSignal();
/// Throws UserError "interrupted by SIGTERM" (exit status 128 + signal)
/// once a signal has arrived.
void throwIfInterrupted();
/// The process group of the command running now (0: none), which the
/// handler terminates.
void setRunningGroup(pid_t pgid);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_SUPPORT_INTERRUPT_H
