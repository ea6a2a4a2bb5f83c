// ByteStream.cpp - plain/gzip file streams (zlib gz*) and zip members
// (stored, or deflated and read with zlib's raw inflate).
#include "ByteStream.h"

#include "hpvm_ds/Dataset.h"

#include <fmt/format.h>
#include <zip.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

namespace hpvm::ds {

ByteStream::~ByteStream() = default;

size_t ByteStream::readSome(void* dst, size_t n) {
  auto* out = static_cast<unsigned char*>(dst);
  size_t got = 0;
  if (n > 0 && hasPeek_) {
    out[0] = peek_;
    hasPeek_ = false;
    got = 1;
  }
  while (got < n) {
    size_t r = readRaw(out + got, n - got);
    if (r == 0)
      break;
    got += r;
  }
  offset_ += static_cast<int64_t>(got);
  return got;
}

void ByteStream::readExact(void* dst, size_t n, const std::string& what) {
  int64_t start = offset_;
  size_t got = readSome(dst, n);
  if (got != n)
    throw DatasetError(fmt::format(
        "{}: truncated: {} needs bytes {} to {}, but the data ends at byte {}",
        name_, what, start, start + static_cast<int64_t>(n),
        start + static_cast<int64_t>(got)));
}

bool ByteStream::atEnd() {
  if (hasPeek_)
    return false;
  if (readRaw(&peek_, 1) == 0)
    return true;
  hasPeek_ = true;
  return false;
}

namespace {

std::string errnoText() { return std::strerror(errno); }

/// Throws unless \p path is a regular file (a FIFO would block the reader,
/// a device never end): "path: is a FIFO, not a regular file".
void requireRegularFile(const std::string& path, const struct stat& st) {
  if (S_ISREG(st.st_mode))
    return;
  const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                     : S_ISFIFO(st.st_mode) ? "a FIFO"
                     : S_ISCHR(st.st_mode)  ? "a character device"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "something else";
  throw DatasetError(fmt::format("{}: is {}, not a regular file", path, kind));
}

/// A plain or gzip-compressed file read through zlib's gz* functions.
class GzFileStream : public ByteStream {
public:
  explicit GzFileStream(const std::string& path) {
    name_ = path;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0)
      throw DatasetError(fmt::format("{}: cannot open: {}", path, errnoText()));
    requireRegularFile(path, st);
    FILE* probe = std::fopen(path.c_str(), "rb");
    if (!probe)
      throw DatasetError(fmt::format("{}: cannot open: {}", path, errnoText()));
    unsigned char magic[2] = {0, 0};
    size_t n = std::fread(magic, 1, 2, probe);
    std::fclose(probe);
    compressed_ = n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    // (A gzip file of several members is bounded the same way: each
    // member's data is at most 1032 times its compressed bytes.)
    constexpr int64_t kDeflateMaxRatio = 1032;
    const int64_t fileBytes = static_cast<int64_t>(st.st_size);
    if (!compressed_)
      size_ = maxSize_ = fileBytes;
    else if (fileBytes <= maxSize_ / kDeflateMaxRatio)
      maxSize_ = fileBytes * kDeflateMaxRatio;
    file_ = gzopen(path.c_str(), "rb");
    if (!file_)
      throw DatasetError(fmt::format("{}: cannot open: {}", path, errnoText()));
    gzbuffer(file_, 1 << 18);
  }
  ~GzFileStream() override { gzclose(file_); }

protected:
  size_t readRaw(void* dst, size_t n) override {
    unsigned len = static_cast<unsigned>(std::min<size_t>(n, INT_MAX));
    int r = gzread(file_, dst, len);
    if (r < 0 || (r == 0 && compressed_)) {
      int code = Z_OK;
      const char* msg = gzerror(file_, &code);
      if (code == Z_BUF_ERROR)
        throw DatasetError(fmt::format(
            "{}: truncated gzip data: the compressed stream ends after {} "
            "decompressed bytes",
            name_, offset() + (r > 0 ? r : 0)));
      std::string text = msg ? msg : "zlib error";
      // zlib prefixes its message with the path; the caller adds it.
      if (text.rfind(name_ + ": ", 0) == 0)
        text = text.substr(name_.size() + 2);
      if (code != Z_OK && code != Z_STREAM_END)
        throw DatasetError(
            fmt::format("{}: corrupt gzip data: {}", name_, text));
      if (r < 0)
        throw DatasetError(fmt::format("{}: read error: {}", name_, text));
    }
    return static_cast<size_t>(r);
  }

private:
  gzFile file_ = nullptr;
};

[[noreturn]] void badZip(const std::string& path, const std::string& what) {
  throw DatasetError(
      fmt::format("{}: not a valid .npz (zip) archive: {}", path, what));
}

/// A zip archive opened with libzip (ZIP_CHECKCONS: the central directory
/// is checked against the local headers), closed on scope exit.
struct ZipArchive {
  zip_t* z = nullptr;
  explicit ZipArchive(const std::string& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0)
      throw DatasetError(fmt::format("{}: cannot open: {}", path, errnoText()));
    requireRegularFile(path, st);
    int err = 0;
    z = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &err);
    if (z == nullptr) {
      zip_error_t e;
      zip_error_init_with_code(&e, err);
      const std::string text = zip_error_strerror(&e);
      zip_error_fini(&e);
      badZip(path, text);
    }
  }
  ~ZipArchive() {
    if (z)
      zip_discard(z); // read-only: nothing to write back
  }
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;
};

/// One member of a zip archive, decompressed (and its CRC-32 checked at
/// the end) by libzip.
class ZipMemberStream : public ByteStream {
public:
  ZipMemberStream(const std::string& path, const ZipMember& m)
      : archive_(path), member_(m) {
    name_ = path + ":" + m.name;
    size_ = static_cast<int64_t>(m.size);
    file_ = zip_fopen_index(archive_.z, m.index, 0);
    if (file_ == nullptr)
      throw DatasetError(fmt::format("{}: cannot read the member: {}", name_,
                                     zip_strerror(archive_.z)));
  }
  ~ZipMemberStream() override {
    if (file_)
      zip_fclose(file_);
  }

protected:
  size_t readRaw(void* dst, size_t n) override {
    const uint64_t left = member_.size - produced_;
    if (left == 0) {
      // One more read: libzip checks the CRC-32 when it reaches the end.
      if (!ended_) {
        ended_ = true;
        char extra;
        const zip_int64_t more = zip_fread(file_, &extra, 1);
        if (more < 0)
          throw DatasetError(fmt::format("{}: corrupt archive: {}", name_,
                                         zip_file_strerror(file_)));
        if (more > 0)
          throw DatasetError(fmt::format(
              "{}: corrupt archive: the member holds more than the {} bytes "
              "its directory entry says",
              name_, member_.size));
      }
      return 0;
    }
    const zip_int64_t got = zip_fread(file_, dst, std::min<uint64_t>(n, left));
    if (got < 0)
      throw DatasetError(fmt::format("{}: corrupt archive: {}", name_,
                                     zip_file_strerror(file_)));
    produced_ += static_cast<uint64_t>(got);
    if (got == 0)
      throw DatasetError(fmt::format(
          "{}: corrupt archive: the member holds {} bytes, its directory "
          "entry says {}",
          name_, produced_, member_.size));
    return static_cast<size_t>(got);
  }

private:
  ZipArchive archive_;
  ZipMember member_;
  zip_file_t* file_ = nullptr;
  uint64_t produced_ = 0;
  bool ended_ = false;
};

} // namespace

std::unique_ptr<ByteStream> openFileStream(const std::string& path) {
  return std::make_unique<GzFileStream>(path);
}

std::vector<ZipMember> listZip(const std::string& path) {
  ZipArchive archive(path);
  const zip_int64_t n = zip_get_num_entries(archive.z, 0);
  std::vector<ZipMember> members;
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    if (zip_stat_index(archive.z, static_cast<zip_uint64_t>(i), 0, &st) != 0)
      badZip(path, fmt::format("entry {}: {}", i, zip_strerror(archive.z)));
    ZipMember m;
    m.index = static_cast<uint64_t>(i);
    m.name = (st.valid & ZIP_STAT_NAME) ? st.name : "";
    m.size = (st.valid & ZIP_STAT_SIZE) ? st.size : 0;
    if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) &&
        st.encryption_method != ZIP_EM_NONE)
      throw DatasetError(fmt::format(
          "{}: member '{}' is encrypted and cannot be read", path, m.name));
    if ((st.valid & ZIP_STAT_COMP_METHOD) &&
        zip_compression_method_supported(st.comp_method, 0) == 0)
      throw DatasetError(fmt::format(
          "{}: member '{}' uses compression method {}, which libzip cannot "
          "read",
          path, m.name, st.comp_method));
    members.push_back(m);
  }
  return members;
}

std::unique_ptr<ByteStream> openZipMember(const std::string& path,
                                          const ZipMember& member) {
  return std::make_unique<ZipMemberStream>(path, member);
}

} // namespace hpvm::ds
