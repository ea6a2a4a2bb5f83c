// InputFile.h - reading what the user names (models, external data,
// configurations) safely: regular files only, opened without blocking (a
// FIFO or device is refused before anything is read), sizes checked against
// the file and against a limit before anything is allocated.
#ifndef TORCH2HPVM_FRONTEND_SUPPORT_INPUTFILE_H
#define TORCH2HPVM_FRONTEND_SUPPORT_INPUTFILE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hpvm::fe {

/// Default limit on the bytes of any one input (a model file, one external
/// data tensor); --max-input-size changes it.
constexpr uint64_t kDefaultMaxInputBytes = uint64_t(8) << 30;

/// "8 GiB", "1.5 MiB", "100 bytes": \p bytes for messages.
std::string byteSize(uint64_t bytes);

/// Bytes of a tensor of \p dims with elements of \p elemSize bytes, or
/// nothing if a dim is negative or the product overflows int64_t.
std::optional<uint64_t> tensorBytes(const std::vector<int64_t>& dims,
                                    size_t elemSize);

/// A regular file open for reading.
class InputFile {
public:
  /// Opens \p path. UserError "<path>: cannot open: <reason>", or
  /// "<path>: is a FIFO, not a regular file" (directory, character device,
  /// block device, socket) without blocking on a FIFO. \p shown is the name
  /// messages use for the file (path escaped by the caller).
  explicit InputFile(const std::string& path, std::string shown = "");
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  uint64_t size() const { return size_; }
  /// The whole file; UserError if it is larger than \p limit ("... is 9 GiB,
  /// more than the 8 GiB limit (--max-input-size)").
  std::string readAll(uint64_t limit) const;
  /// Bytes [offset, offset + n) into \p dst; the caller checked that they
  /// are inside the file (UserError if the file shrank meanwhile).
  void readAt(uint64_t offset, void* dst, uint64_t n) const;

private:
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string shown_;
};

/// A non-negative decimal integer (digits only, no sign or spaces) that
/// fits in int64_t, or nothing.
std::optional<uint64_t> parseCount(const std::string& text);

/// The canonical path of \p path (symlinks resolved), or nothing if it does
/// not exist.
std::optional<std::string> canonicalPath(const std::string& path);

/// True if canonical path \p inner is \p dir itself or inside it.
bool isInside(const std::string& inner, const std::string& dir);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_SUPPORT_INPUTFILE_H
