// Assert.h - HPVM_ASSERT and HPVM_UNREACHABLE, the one spelling of "this is
// a bug" for the exporter and the runtime, and InternalError, what a failed
// check throws by default.
//
// What a failed check does is the program's choice, made once for all its
// sources: a program whose targets define HPVM_REPORT_BUG(file, line, msg)
// (a [[noreturn]] function of its own) gets that; without it (the runtime)
// a failed check throws hpvm::InternalError, which only the program's top
// level catches (hpvm_rt's reportError()). Inline functions of public
// headers therefore use neither macro.
#ifndef HPVM_RT_ASSERT_H
#define HPVM_RT_ASSERT_H

#include <stdexcept>
#include <string>

namespace hpvm {

/// A broken invariant, thrown by HPVM_ASSERT and HPVM_UNREACHABLE; what()
/// is "internal error at <file>:<line>: <message>".
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
[[noreturn]] inline void throwInternalError(const char* file, int line,
                                            const std::string& message) {
  throw InternalError(file, line, message);
}

} // namespace hpvm

#ifndef HPVM_REPORT_BUG
/// What a failed check calls: (file, line, message), never returning.
#define HPVM_REPORT_BUG ::hpvm::throwInternalError
#endif

/// Reports a bug, naming the condition, unless \p cond holds; \p msg (a
/// std::string or string literal) states the values involved.
#define HPVM_ASSERT(cond, msg)                                                 \
  do {                                                                         \
    if (!(cond))                                                               \
      HPVM_REPORT_BUG(__FILE__, __LINE__,                                      \
                      std::string("assertion '" #cond "' failed: ") + (msg));  \
  } while (0)
/// Marks code that no input can reach; reports a bug with \p msg.
#define HPVM_UNREACHABLE(msg) HPVM_REPORT_BUG(__FILE__, __LINE__, (msg))

#endif // HPVM_RT_ASSERT_H
