// Errors.h - hpvm_rt's two kinds of error, for every part (core, driver,
// kernels, approx, tuner): UserError, which the user can fix (a bad
// configuration, command line, dataset, weights or calibration file, a
// failed file or FIFO operation), and HPVM_ASSERT / HPVM_UNREACHABLE, a bug
// in hpvm_rt. reportError() (driver/Controller.cpp) is the one place that
// turns them into what the user sees: "<tool>: error: <message>" and exit
// status 1, or an "internal error" report with file and line, then abort.
#ifndef HPVM_RT_ERRORS_H
#define HPVM_RT_ERRORS_H

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

/// A broken invariant of hpvm_rt, thrown by HPVM_ASSERT and
/// HPVM_UNREACHABLE; what() is "internal error at <file>:<line>: <message>".
/// Only reportError() (and tests) catch it.
class InternalError : public std::logic_error {
public:
  InternalError(const char* file, int line, const std::string& message)
      : std::logic_error("internal error at " + std::string(file) + ":" +
                         std::to_string(line) + ": " + message),
        file_(file), line_(line), message_(message) {}
  /// The source file of the failed check (__FILE__).
  const char* file() const { return file_; }
  /// The line of the failed check.
  int line() const { return line_; }
  /// What failed, without the location.
  const std::string& message() const { return message_; }

private:
  const char* file_;
  int line_;
  std::string message_;
};

/// Throws InternalError at \p file and \p line: for broken invariants,
/// never for anything the user can cause.
[[noreturn]] inline void reportBug(const char* file, int line,
                                   const std::string& message) {
  throw InternalError(file, line, message);
}

/// Reports \p error (std::current_exception() in a catch block or a
/// terminate handler) on stderr in the name of \p tool, the one place that
/// does. A UserError prints "<tool>: error: <message>" and returns
/// kExitUserError, as does std::bad_alloc ("<tool>: error: out of memory").
/// Anything else is a bug in hpvm_rt (an InternalError, a oneDNN error, a
/// standard library exception): it prints "<tool>: internal error at
/// <file>:<line>: <message>" (or what is known without a location) and a
/// note that this is not the user's mistake, then aborts.
int reportError(const std::string& tool, std::exception_ptr error) noexcept;

} // namespace hpvm::rt

/// Throws InternalError, naming the condition, unless \p cond holds; \p msg
/// (a std::string or string literal) states the values involved.
#define HPVM_ASSERT(cond, msg)                                                 \
  do {                                                                         \
    if (!(cond))                                                               \
      ::hpvm::rt::reportBug(__FILE__, __LINE__,                                \
                            std::string("assertion '" #cond "' failed: ") +    \
                                (msg));                                        \
  } while (0)
/// Marks code that no input can reach; throws InternalError with \p msg.
#define HPVM_UNREACHABLE(msg) ::hpvm::rt::reportBug(__FILE__, __LINE__, (msg))

#endif // HPVM_RT_ERRORS_H
