// Diagnostics.h - the frontend's two kinds of error: UserError (bad model,
// options, datasets, templates or a failed toolchain; reported cleanly) and
// HPVM_ASSERT / HPVM_UNREACHABLE (a bug: file, line, abort).
#ifndef TORCH2HPVM_FRONTEND_SUPPORT_DIAGNOSTICS_H
#define TORCH2HPVM_FRONTEND_SUPPORT_DIAGNOSTICS_H

#include "support/Origin.h"

#include "hpvm_rt/Assert.h"
#include "hpvm_rt/Printable.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace hpvm::fe {

/// Exit codes of the command-line tools.
enum ExitCode : int {
  ExitOk = 0,
  ExitUserError = 1,
  ExitToolchainError = 2,
  /// torch2hpvm-export: a regeneration left conflict markers (or found the
  /// last one's unresolved); --check: a regeneration would conflict or be
  /// refused.
  ExitConflict = 3,
  /// torch2hpvm-export --check: a regeneration would change files (cleanly).
  ExitWouldChange = 4,
};

/// An error the user can fix. what() is the complete message without the
/// "torch2hpvm-export: error: " prefix, e.g.
/// "model.onnx: node 'conv1' (Conv, #3): dilations [2, 2] are not supported".
class UserError : public std::runtime_error {
public:
  explicit UserError(const std::string& message, int exitCode = ExitUserError)
      : std::runtime_error(message), exitCode_(exitCode) {}
  int exitCode() const { return exitCode_; }

private:
  int exitCode_;
};

/// "model.onnx: node 'conv1' (Conv, #3)" - the one way to name a node in a
/// message. An empty node name is shown as '#<index>'.
std::string nodeContext(const std::string& modelPath, const Origin& origin);
/// The same without the model path: "node 'conv1' (Conv, #3)".
std::string nodeName(const Origin& origin);

/// Longest name (escaped) a message shows; a longer one is cut, with its
/// length.
constexpr size_t kMaxNameBytes = 200;
/// \p name with control characters (C0 and C1), bytes that are not
/// well-formed UTF-8, quotes and backslashes escaped C-style ("\n", "\x01",
/// "\xb0", "\'"), so a name from a model prints on one line and as text;
/// other non-ASCII characters are kept. Cut after kMaxNameBytes
/// ("...(100000 bytes)").
std::string escapeName(const std::string& name);

/// "'a', 'b'": \p names escaped (escapeName) and quoted, comma-separated.
std::string quotedList(const std::vector<std::string>& names);

using hpvm::printableMessage; // (hpvm_rt/Printable.h)

/// Collects per-node errors so that one UserError can list them all:
/// "<path>: node 'b' (Conv, #7): <reason>" for one error;
/// "<path>: 2 unsupported nodes:\n  node 'a' (...): <reason>\n  ..." for up
/// to kFlatErrors; beyond, grouped by op type, the counts first:
/// "<path>: 9 unsupported nodes (Conv 7, Resize 2):\n  Conv, 7 nodes:\n
///     node ...\n    ... 4 more Conv nodes (-v lists every one)\n  ...",
/// each group's first kShownPerGroup nodes (every one after
/// listEveryNode(true)). Problems of the model as a whole come first, a
/// line each ("<path>: <problem>").
class ErrorList {
public:
  /// Entries up to which the list is flat.
  static constexpr size_t kFlatErrors = 6;
  /// Nodes a group shows unless every node is listed.
  static constexpr size_t kShownPerGroup = 3;
  /// Lists every node of every group from now on (torch2hpvm-export -v).
  static void listEveryNode(bool every);

  explicit ErrorList(std::string modelPath) : path_(std::move(modelPath)) {}
  /// Records that \p origin cannot be handled, because of \p reason.
  void add(const Origin& origin, const std::string& reason);
  /// Records a problem of the model as a whole (its input, its outputs):
  /// "<path>: <text>", listed before the nodes.
  void problem(const std::string& text) { problems_.push_back(text); }
  /// A line after the list (what was not checked, the way forward).
  void note(const std::string& text) { notes_.push_back(text); }
  bool empty() const { return entries_.empty() && problems_.empty(); }
  size_t size() const { return entries_.size(); }
  /// The complete message (empty when there are no errors).
  std::string message() const;
  /// Throws UserError(message()) when any error was recorded.
  void throwIfAny() const;

private:
  std::string path_;
  std::vector<std::string> entries_; ///< "node 'a' (Conv, #3): reason".
  std::vector<std::string> opTypes_; ///< Each entry's op type.
  std::vector<std::string> notes_;
  std::vector<std::string> problems_;

  /// message() without the notes.
  std::string list() const;
};

/// Aborts with file and line: for broken invariants, never for user input.
/// What HPVM_ASSERT and HPVM_UNREACHABLE (hpvm_rt/Assert.h, shared with the
/// runtime) call in the exporter: its targets define HPVM_REPORT_BUG as this
/// function (frontend/CMakeLists.txt).
[[noreturn]] void reportBug(const char* file, int line, const std::string& msg);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_SUPPORT_DIAGNOSTICS_H
