// FileUtil.cpp - atomic file writes and file checks for the driver.
#include "driver/FileUtil.h"

#include "Errors.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace hpvm::rt {

void writeFileAtomic(const std::string& path, std::string_view bytes) {
  std::string tmp = fmt::format("{}.tmp.{}", path, getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    throw UserError(
        fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  int err = ok ? 0 : errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && std::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    std::remove(tmp.c_str());
    throw UserError(
        fmt::format("{}: cannot write: {}", path, std::strerror(err)));
  }
}

std::string stemOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot != path.npos && (slash == path.npos || dot > slash))
    return path.substr(0, dot);
  return path;
}

uint64_t fileSize(const std::string& path, std::string_view what) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw UserError(fmt::format("{}: cannot open {}: {}", path, what,
                                std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    throw UserError(
        fmt::format("{}: cannot open {}: not a regular file", path, what));
  return static_cast<uint64_t>(st.st_size);
}

} // namespace hpvm::rt
