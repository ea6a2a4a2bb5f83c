// FileUtil.h - hpvm_rt's file helpers: atomic file writing (temp file +
// rename, so that no reader ever sees a half-written file), stems, sizes.
#ifndef HPVM_RT_BASE_FILEUTIL_H
#define HPVM_RT_BASE_FILEUTIL_H

#include "hpvm_rt/Printable.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hpvm::rt {

/// Writes \p bytes to \p path atomically: a temporary file next to it is
/// written, flushed and renamed over \p path. Throws UserError naming the
/// path and the system error on failure (the temporary file is removed).
void writeFileAtomic(const std::string& path, std::string_view bytes);

/// A file a command will write, named by an option ("--output") or, with
/// an empty option, by the command itself.
struct OutputFile {
  std::string option;
  std::string path;
};

/// Checks, before a long run, that every file of \p outputs can be written
/// when the run ends: its folder exists and is writable, and the path is no
/// folder. Throws one UserError listing every problem, one a line.
void checkOutputFiles(const std::vector<OutputFile>& outputs);

/// \p path without the extension of its last component ("a/b.txt" ->
/// "a/b"; "a.d/b" stays).
std::string stemOf(const std::string& path);

/// The size of the file at \p path in bytes; throws UserError ("path: cannot
/// open <what>: <reason>") if it does not exist or is not a regular file.
uint64_t fileSize(const std::string& path, std::string_view what);

/// The whole regular file at \p path, opened without blocking (a FIFO or
/// device is refused, never waited on). Throws UserError "path: cannot open
/// <what>: <reason>" or, when it holds more than \p limit bytes, "path: not
/// a <what>: N bytes (at most L expected)".
std::string readRegularFile(const std::string& path, std::string_view what,
                            uint64_t limit);

using hpvm::printableMessage; // (hpvm_rt/Printable.h)

} // namespace hpvm::rt

#endif // HPVM_RT_BASE_FILEUTIL_H
