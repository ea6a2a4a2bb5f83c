// ProgramLibrary.h - a generated program's shared library loaded from its
// bytes (never from the export's path), with the C entry points of
// hpvm_rt/Library.h, and the private directory its files are written to
// while they are read.
//
// Each ProgramLibrary is a library image of its own: its weights, its
// configuration and its thread count are nobody else's, even when the same
// program is loaded twice. The image stays mapped until the process ends
// (hpvm_rt's OpenMP and oneDNN state is not made to be unloaded).
#ifndef TORCH2HPVM_EXT_PROGRAMLIBRARY_H
#define TORCH2HPVM_EXT_PROGRAMLIBRARY_H

#include "hpvm_rt/Library.h"

#include <nettle/sha2.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace torch2hpvm {

/// A failure the user can act on (bad file, bad state, refused call); its
/// message is complete.
class ProgramError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The entry points of hpvm_rt/Library.h (version 3) in one library image.
struct EntryPoints {
  int (*libraryVersion)();
  const char* (*modelName)();
  const char* (*defaultConfig)();
  const char* (*buildFeatures)();
  void (*modelShape)(int64_t*, int64_t*, int64_t*, int64_t*);
  int (*modelOutputs)();
  int (*modelOutput)(int, int64_t*);
  const char* (*modelOutputName)(int);
  hpvm_rt_model* (*open)(const char*);
  int (*setConfig)(hpvm_rt_model*, const char*, const char*, double,
                   const char*);
  const char* (*configDescription)(hpvm_rt_model*);
  int (*setThreads)(hpvm_rt_model*, int);
  int (*runOutputs)(hpvm_rt_model*, const float*, int64_t, float* const*);
  void (*close)(hpvm_rt_model*);
  const char* (*lastError)();
  /// NULL in a library built before it was added.
  double (*lastRunSeconds)(hpvm_rt_model*);
};

/// Loads the library image \p bytes (\p size bytes; \p origin names it in
/// messages): from an anonymous memory file, or a private temporary file
/// where that is not possible. Throws ProgramError when it is no loadable
/// program library or speaks another version.
EntryPoints loadProgramLibrary(const void* bytes, size_t size,
                               const std::string& origin);

/// A private temporary directory (mode 0700), removed with everything in
/// it when the object goes.
class ScratchDir {
public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  /// The directory, with a trailing '/'.
  const std::string& path() const { return path_; }
  /// Writes \p size bytes to the file \p name in it (\p name: one plain
  /// file name, checked by the caller); returns its path.
  std::string write(const std::string& name, const void* bytes, size_t size);
  /// Makes the sub-directory \p name; returns its path with a '/'.
  std::string subdir(const std::string& name);

private:
  std::string path_;
};

/// Reads the whole regular file at \p path into the buffer of its size that
/// \p buffer returns (ProgramError naming \p what and the path when it
/// cannot be read or is larger than \p limit bytes).
void readWholeFileInto(const std::string& path, const std::string& what,
                       uint64_t limit,
                       const std::function<char*(size_t size)>& buffer);

/// The whole regular file at \p path, as readWholeFileInto().
std::string readWholeFile(const std::string& path, const std::string& what,
                          uint64_t limit);

/// True for a name that is one plain file name: 1 to 255 bytes of letters,
/// digits, '.', '_' and '-', not starting with '.'.
bool isPlainFileName(const std::string& name);

/// A SHA-256 digest of everything add()ed, in hex.
class Digest {
public:
  Digest();
  void add(const void* bytes, size_t size);
  /// \p bytes's length, then the bytes (no copy of them is made).
  void add(std::string_view bytes);
  std::string hex();

private:
  sha256_ctx ctx_;
};

} // namespace torch2hpvm

#endif // TORCH2HPVM_EXT_PROGRAMLIBRARY_H
