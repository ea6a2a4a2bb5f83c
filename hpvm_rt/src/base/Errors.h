// Errors.h - hpvm_rt's two kinds of error, for every part: UserError, which
// the user can fix (a bad configuration, command line, dataset, weights or
// calibration file, a failed file or FIFO operation), and HPVM_ASSERT /
// HPVM_UNREACHABLE (hpvm_rt/Assert.h), a bug in hpvm_rt. reportError()
// (base/Errors.cpp) is the one place that turns them into what the user
// sees: "<tool>: error: <message>" and exit status 1, or an "internal
// error" report with file and line, then abort; reportWarning() prints a
// warning the same way.
#ifndef HPVM_RT_BASE_ERRORS_H
#define HPVM_RT_BASE_ERRORS_H

#include "hpvm_rt/Assert.h"

#include <exception>
#include <stdexcept>
#include <string>

namespace hpvm::rt {

/// Exit status of a program stopped by a UserError.
constexpr int kExitUserError = 1;

/// An error the user can fix. what() is the complete message without the
/// "<tool>: error: " prefix, naming the file (with line and column) or the
/// option, and what is wrong.
class UserError : public std::runtime_error {
public:
  explicit UserError(const std::string& message)
      : std::runtime_error(message) {}
  /// "path:line:column: message", or "path:line: message" when \p column
  /// is 0.
  UserError(const std::string& path, int line, int column,
            const std::string& message)
      : std::runtime_error(path + ":" + std::to_string(line) + ":" +
                           (column > 0 ? std::to_string(column) + ":" : "") +
                           " " + message) {}
};

/// A broken invariant of hpvm_rt (hpvm_rt/Assert.h). Only reportError()
/// (and tests) catch it.
using hpvm::InternalError;

/// Reports \p error (std::current_exception() in a catch block or a
/// terminate handler) on stderr in the name of \p tool, the one place that
/// does. A UserError prints "<tool>: error: <message>" and returns
/// kExitUserError, as does std::bad_alloc ("<tool>: error: out of memory").
/// Anything else is a bug in hpvm_rt (an InternalError, a oneDNN error, a
/// standard library exception): it prints "<tool>: internal error at
/// <file>:<line>: <message>" (or what is known without a location) and a
/// note that this is not the user's mistake, then aborts.
int reportError(const std::string& tool, std::exception_ptr error) noexcept;

/// Prints "<tool>: warning: <message>" on stderr (after flushing stdout),
/// the message made printable as reportError() does: the one way hpvm_rt
/// warns.
void reportWarning(const std::string& tool, const std::string& message);

} // namespace hpvm::rt

#endif // HPVM_RT_BASE_ERRORS_H
