// FileUtil.cpp - atomic file writes and file checks for every part.
#include "base/FileUtil.h"

#include "base/Errors.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
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

void checkOutputFiles(const std::vector<OutputFile>& outputs) {
  std::string problems;
  for (const OutputFile& o : outputs) {
    const size_t slash = o.path.find_last_of('/');
    const std::string folder = slash == std::string::npos ? "."
                               : slash == 0               ? "/"
                                            : o.path.substr(0, slash);
    const std::string who =
        o.option.empty() ? o.path : fmt::format("{} {}", o.option, o.path);
    struct stat st;
    std::string problem;
    if (::stat(folder.c_str(), &st) != 0)
      problem = fmt::format("cannot write: the folder {} {}", folder,
                            errno == ENOENT ? "does not exist"
                                            : std::strerror(errno));
    else if (!S_ISDIR(st.st_mode))
      problem = fmt::format("cannot write: {} is not a folder", folder);
    else if (::access(folder.c_str(), W_OK | X_OK) != 0)
      problem = fmt::format("cannot write in the folder {}: {}", folder,
                            std::strerror(errno));
    else if (::stat(o.path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      problem = "cannot write: it is a folder";
    if (problem.empty())
      continue;
    problems += problems.empty() ? "" : "\n";
    problems += fmt::format("{}: {}", who, problem);
  }
  if (!problems.empty())
    throw UserError(problems);
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

std::string readRegularFile(const std::string& path, std::string_view what,
                            uint64_t limit) {
  const int fd =
      ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    throw UserError(fmt::format("{}: cannot open {}: {}", path, what,
                                std::strerror(errno)));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw UserError(fmt::format("{}: cannot open {}: {}", path, what,
                                S_ISDIR(st.st_mode) ? "it is a directory"
                                                    : "not a regular file"));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > limit) {
    ::close(fd);
    throw UserError(fmt::format("{}: not a {}: {} bytes (at most {} expected)",
                                path, what, size, limit));
  }
  std::string bytes(static_cast<size_t>(size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      const int err = got < 0 ? errno : 0;
      ::close(fd);
      throw UserError(fmt::format("{}: cannot read {}: {}", path, what,
                                  err ? std::strerror(err)
                                      : "the file shrank while being read"));
    }
    done += static_cast<size_t>(got);
  }
  ::close(fd);
  return bytes;
}

} // namespace hpvm::rt
