// InputFile.cpp - see InputFile.h.
#include "support/InputFile.h"

#include "support/Diagnostics.h"

#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

namespace hpvm::fe {

namespace {

const char* kindOf(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

} // namespace

std::string byteSize(uint64_t bytes) {
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024)
    return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), v < 10 ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

std::optional<uint64_t> tensorBytes(const std::vector<int64_t>& dims,
                                    size_t elemSize) {
  int64_t total = static_cast<int64_t>(elemSize);
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(total, d, &total))
      return std::nullopt;
  return static_cast<uint64_t>(total);
}

InputFile::InputFile(const std::string& path, std::string shown)
    : shown_(shown.empty() ? escapeName(path) : std::move(shown)) {
  // O_NONBLOCK: opening a FIFO with no writer returns at once (and is then
  // refused by the check below) instead of waiting for one.
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd_ < 0)
    throw UserError(shown_ + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    throw UserError(shown_ + ": cannot read: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw UserError(shown_ + ": is " + kindOf(st.st_mode) +
                    ", not a regular file");
  }
  size_ = static_cast<uint64_t>(st.st_size);
  // Regular files never block; reads from here on are ordinary.
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
}

InputFile::~InputFile() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::string InputFile::readAll(uint64_t limit) const {
  if (size_ > limit)
    throw UserError(shown_ + ": is " + byteSize(size_) + ", more than the " +
                    byteSize(limit) + " limit (raise it with --max-size)");
  std::string bytes(static_cast<size_t>(size_), '\0');
  readAt(0, bytes.data(), size_);
  return bytes;
}

void InputFile::readAt(uint64_t offset, void* dst, uint64_t n) const {
  char* p = static_cast<char*>(dst);
  while (n > 0) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(n, 1u << 30));
    const ssize_t got = ::pread(fd_, p, chunk, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      throw UserError(shown_ + ": cannot read: " + std::strerror(errno));
    if (got == 0)
      throw UserError(shown_ + ": the file shrank while being read");
    p += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<uint64_t>(got);
  }
}

std::optional<uint64_t> parseCount(const std::string& text) {
  if (text.empty() || text.size() > 19)
    return std::nullopt;
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end ||
      v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return std::nullopt;
  return v;
}

std::optional<std::string> canonicalPath(const std::string& path) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr)
    return std::nullopt;
  std::string out(resolved);
  std::free(resolved);
  return out;
}

bool isInside(const std::string& inner, const std::string& dir) {
  if (inner == dir)
    return true;
  const std::string prefix = dir == "/" ? dir : dir + "/";
  return inner.compare(0, prefix.size(), prefix) == 0;
}

} // namespace hpvm::fe
