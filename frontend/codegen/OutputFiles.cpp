// OutputFiles.cpp - atomic file writes, weight binaries, file digests.
#include "codegen/OutputFiles.h"

#include "codegen/Sanitizer.h"
#include "onnx/Sha256.h"
#include "support/Diagnostics.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace hpvm::fe {

namespace {

std::string errnoText() { return std::strerror(errno); }

/// Unique temporary name next to \p path.
std::string tempNameFor(const std::string& path) {
  static unsigned counter = 0;
  std::filesystem::path p(path);
  return (p.parent_path() /
          (tempPrefixFor(p.filename().string()) + std::to_string(::getpid()) +
           "-" + std::to_string(counter++)))
      .string();
}

/// Writes all of \p size bytes to \p fd.
bool writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

/// Renames \p tmp to \p path, or removes \p tmp and throws.
void commit(const std::string& tmp, const std::string& path) {
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = errnoText();
    std::remove(tmp.c_str());
    throw UserError("cannot write '" + path + "': " + why);
  }
}

} // namespace

std::string tempPrefixFor(const std::string& leaf) {
  return "." + boundedName(leaf, 200) + ".tmp-";
}

std::string sha256File(const std::string& path) {
  // Read in chunks, not mapped: datasets can be gigabytes, and a mapping's
  // pages count as the exporter's memory as they are read.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw UserError("cannot read '" + path + "': " + errnoText());
  Sha256 hash;
  std::vector<char> buf(size_t(1) << 20);
  ssize_t n;
  while ((n = ::read(fd, buf.data(), buf.size())) != 0) {
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      std::string why = errnoText();
      ::close(fd);
      throw UserError("cannot read '" + path + "': " + why);
    }
    hash.add(std::string_view(buf.data(), static_cast<size_t>(n)));
  }
  ::close(fd);
  return hash.hex();
}

void writeFileAtomic(const std::string& path, std::string_view bytes) {
  std::string tmp = tempNameFor(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    throw UserError("cannot write '" + path + "': " + errnoText());
  bool ok = writeAll(fd, bytes.data(), bytes.size());
  std::string why = ok ? std::string() : errnoText();
  if (::close(fd) != 0 && ok) {
    ok = false;
    why = errnoText();
  }
  if (!ok) {
    std::remove(tmp.c_str());
    throw UserError("cannot write '" + path + "': " + why);
  }
  commit(tmp, path);
}

std::string writeWeightFile(const std::string& path, const TensorData& data) {
  static_assert(sizeof(float) == 4, "float32 weights");
  // TensorData bytes are little-endian already, and so are this machine's
  // floats (HPVM's formats are native little-endian).
  if (data.dtype == DataType::Float) {
    std::string_view bytes(reinterpret_cast<const char*>(data.bytes.data()),
                           data.bytes.size());
    writeFileAtomic(path, bytes);
    return sha256Hex(bytes);
  }
  std::vector<float> floats = data.toFloats();
  std::string_view bytes(reinterpret_cast<const char*>(floats.data()),
                         floats.size() * 4);
  writeFileAtomic(path, bytes);
  return sha256Hex(bytes);
}

void copyFileAtomic(const std::string& from, const std::string& to) {
  int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0)
    throw UserError("cannot read '" + from + "': " + errnoText());
  struct stat st;
  if (::fstat(in, &st) != 0) {
    std::string why = errnoText();
    ::close(in);
    throw UserError("cannot read '" + from + "': " + why);
  }
  std::string tmp = tempNameFor(to);
  int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (out < 0) {
    std::string why = errnoText();
    ::close(in);
    throw UserError("cannot write '" + to + "': " + why);
  }
  off_t left = st.st_size;
  std::string why;
  while (left > 0) {
    ssize_t n = ::copy_file_range(in, nullptr, out, nullptr,
                                  static_cast<size_t>(left), 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      // Fall back to read/write (e.g. across file systems on old kernels).
      if (n < 0 && errno != EXDEV && errno != ENOSYS && errno != EINVAL) {
        why = errnoText();
        break;
      }
      std::vector<char> buf(1 << 20);
      ssize_t r;
      while ((r = ::read(in, buf.data(), buf.size())) > 0)
        if (!writeAll(out, buf.data(), static_cast<size_t>(r)))
          break;
      if (r != 0)
        why = errnoText();
      left = 0;
      break;
    }
    left -= n;
  }
  ::close(in);
  if (::close(out) != 0 && why.empty())
    why = errnoText();
  if (!why.empty()) {
    std::remove(tmp.c_str());
    throw UserError("cannot copy '" + from + "' to '" + to + "': " + why);
  }
  commit(tmp, to);
}

} // namespace hpvm::fe
