// ByteStream.cpp - plain/gzip file streams (zlib gz*) and zip members
// (stored, or deflated and read with zlib's raw inflate).
#include "ByteStream.h"

#include "hpvm_ds/Dataset.h"

#include <fmt/format.h>
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
    if (!compressed_)
      size_ = static_cast<int64_t>(st.st_size);
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

uint16_t le16(const unsigned char* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
uint32_t le32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t le64(const unsigned char* p) {
  return static_cast<uint64_t>(le32(p)) |
         (static_cast<uint64_t>(le32(p + 4)) << 32);
}

/// An open FILE* closed on scope exit.
struct File {
  FILE* f = nullptr;
  std::string path;
  explicit File(const std::string& p) : path(p) {
    struct stat st;
    if (::stat(p.c_str(), &st) != 0)
      throw DatasetError(fmt::format("{}: cannot open: {}", p, errnoText()));
    requireRegularFile(p, st);
    f = std::fopen(p.c_str(), "rb");
    if (!f)
      throw DatasetError(fmt::format("{}: cannot open: {}", p, errnoText()));
  }
  ~File() {
    if (f)
      std::fclose(f);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  int64_t size() {
    std::fseek(f, 0, SEEK_END);
    return static_cast<int64_t>(std::ftell(f));
  }
  /// Reads \p n bytes at \p off; false if the file is shorter.
  bool readAt(uint64_t off, void* dst, size_t n) {
    if (std::fseek(f, static_cast<long>(off), SEEK_SET) != 0)
      return false;
    return std::fread(dst, 1, n, f) == n;
  }
};

[[noreturn]] void badZip(const std::string& path, const std::string& what) {
  throw DatasetError(
      fmt::format("{}: not a valid .npz (zip) archive: {}", path, what));
}

/// A zip member: stored bytes copied, deflated bytes inflated (raw).
class ZipMemberStream : public ByteStream {
public:
  ZipMemberStream(const std::string& path, const ZipMember& m)
      : file_(path), member_(m) {
    name_ = path + ":" + m.name;
    size_ = static_cast<int64_t>(m.size);
    unsigned char lh[30];
    if (!file_.readAt(m.localHeaderOffset, lh, 30) || le32(lh) != 0x04034b50u)
      badZip(path, fmt::format("no local header for member '{}' at byte {}",
                               m.name, m.localHeaderOffset));
    if (m.method != 0 && m.method != 8)
      throw DatasetError(fmt::format(
          "{}: member '{}' uses compression method {}; only stored (0) and "
          "deflated (8) members can be read",
          path, m.name, m.method));
    dataOffset_ = m.localHeaderOffset + 30 + le16(lh + 26) + le16(lh + 28);
    if (std::fseek(file_.f, static_cast<long>(dataOffset_), SEEK_SET) != 0)
      badZip(path, fmt::format("cannot seek to member '{}'", m.name));
    remainingIn_ = m.compressedSize;
    if (m.method == 8) {
      std::memset(&z_, 0, sizeof(z_));
      if (inflateInit2(&z_, -MAX_WBITS) != Z_OK)
        throw DatasetError(fmt::format("{}: zlib inflateInit2 failed", name_));
      inflating_ = true;
      in_.resize(1 << 16);
    }
  }
  ~ZipMemberStream() override {
    if (inflating_)
      inflateEnd(&z_);
  }

protected:
  size_t readRaw(void* dst, size_t n) override {
    size_t got =
        member_.method == 0 ? readStored(dst, n) : readDeflated(dst, n);
    crc_ = crc32(crc_, static_cast<const Bytef*>(dst), static_cast<uInt>(got));
    produced_ += got;
    if (got == 0 || produced_ == member_.size)
      checkEnd();
    return got;
  }

private:
  size_t readStored(void* dst, size_t n) {
    size_t want =
        static_cast<size_t>(std::min<uint64_t>(n, member_.size - produced_));
    if (want == 0)
      return 0;
    size_t got = std::fread(dst, 1, want, file_.f);
    if (got != want)
      throw DatasetError(fmt::format(
          "{}: truncated archive: the member needs {} bytes, the file ends "
          "after {}",
          name_, member_.size, produced_ + got));
    return got;
  }

  size_t readDeflated(void* dst, size_t n) {
    if (streamEnd_)
      return 0;
    z_.next_out = static_cast<Bytef*>(dst);
    z_.avail_out = static_cast<uInt>(std::min<size_t>(n, UINT_MAX));
    while (z_.avail_out > 0) {
      if (z_.avail_in == 0 && remainingIn_ > 0) {
        size_t want =
            static_cast<size_t>(std::min<uint64_t>(in_.size(), remainingIn_));
        size_t got = std::fread(in_.data(), 1, want, file_.f);
        if (got == 0)
          throw DatasetError(fmt::format(
              "{}: truncated archive: the compressed member needs {} bytes, "
              "the file ends after {}",
              name_, member_.compressedSize,
              member_.compressedSize - remainingIn_));
        remainingIn_ -= got;
        z_.next_in = in_.data();
        z_.avail_in = static_cast<uInt>(got);
      }
      int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        streamEnd_ = true;
        break;
      }
      if (rc == Z_BUF_ERROR && z_.avail_in == 0 && remainingIn_ == 0)
        throw DatasetError(fmt::format(
            "{}: corrupt archive: the deflated data ends before the member's "
            "{} bytes",
            name_, member_.size));
      if (rc != Z_OK)
        throw DatasetError(fmt::format("{}: corrupt deflate data: {}", name_,
                                       z_.msg ? z_.msg : "zlib error"));
    }
    return static_cast<size_t>(z_.next_out - static_cast<Bytef*>(dst));
  }

  void checkEnd() {
    if (checked_)
      return;
    checked_ = true;
    if (produced_ != member_.size)
      throw DatasetError(fmt::format(
          "{}: corrupt archive: the member holds {} bytes, its directory "
          "entry says {}",
          name_, produced_, member_.size));
    if (crc_ != member_.crc)
      throw DatasetError(fmt::format(
          "{}: corrupt archive: CRC-32 {:08x} does not match the stored "
          "{:08x}",
          name_, crc_, member_.crc));
  }

  File file_;
  ZipMember member_;
  uint64_t dataOffset_ = 0, remainingIn_ = 0, produced_ = 0;
  z_stream z_;
  bool inflating_ = false, streamEnd_ = false, checked_ = false;
  std::vector<Bytef> in_;
  uLong crc_ = 0;
};

} // namespace

std::unique_ptr<ByteStream> openFileStream(const std::string& path) {
  return std::make_unique<GzFileStream>(path);
}

std::vector<ZipMember> listZip(const std::string& path) {
  File file(path);
  int64_t size = file.size();
  // The end-of-central-directory record is in the last 64 KiB + 22 bytes.
  int64_t tail = std::min<int64_t>(size, 65557);
  std::vector<unsigned char> buf(static_cast<size_t>(tail));
  if (tail < 22 ||
      !file.readAt(static_cast<uint64_t>(size - tail), buf.data(), buf.size()))
    badZip(path, fmt::format("{} bytes is too small", size));
  int64_t eocd = -1;
  for (int64_t i = tail - 22; i >= 0; --i)
    if (le32(&buf[static_cast<size_t>(i)]) == 0x06054b50u) {
      eocd = i;
      break;
    }
  if (eocd < 0)
    badZip(path, "no end-of-central-directory record");
  const unsigned char* e = &buf[static_cast<size_t>(eocd)];
  uint64_t entries = le16(e + 10), cdSize = le32(e + 12),
           cdOffset = le32(e + 16);
  uint64_t eocdAbs = static_cast<uint64_t>(size - tail + eocd);
  if (entries == 0xFFFF || cdSize == 0xFFFFFFFFu || cdOffset == 0xFFFFFFFFu) {
    unsigned char loc[20], z64[56];
    if (eocdAbs < 20 || !file.readAt(eocdAbs - 20, loc, 20) ||
        le32(loc) != 0x07064b50u)
      badZip(path, "zip64 end-of-central-directory locator missing");
    if (!file.readAt(le64(loc + 8), z64, 56) || le32(z64) != 0x06064b50u)
      badZip(path, "zip64 end-of-central-directory record missing");
    entries = le64(z64 + 32);
    cdSize = le64(z64 + 40);
    cdOffset = le64(z64 + 48);
  }
  if (cdOffset + cdSize > static_cast<uint64_t>(size))
    badZip(path, fmt::format("central directory (bytes {} to {}) lies beyond "
                             "the end of the file ({} bytes)",
                             cdOffset, cdOffset + cdSize, size));
  std::vector<unsigned char> cd(static_cast<size_t>(cdSize));
  if (!file.readAt(cdOffset, cd.data(), cd.size()))
    badZip(path, "cannot read the central directory");
  std::vector<ZipMember> members;
  size_t p = 0;
  for (uint64_t i = 0; i < entries; ++i) {
    if (p + 46 > cd.size() || le32(&cd[p]) != 0x02014b50u)
      badZip(path, fmt::format("central directory entry {} is corrupt", i));
    const unsigned char* h = &cd[p];
    ZipMember m;
    uint16_t flags = le16(h + 8);
    m.method = le16(h + 10);
    m.crc = le32(h + 16);
    m.compressedSize = le32(h + 20);
    m.size = le32(h + 24);
    size_t nameLen = le16(h + 28), extraLen = le16(h + 30),
           commentLen = le16(h + 32);
    m.localHeaderOffset = le32(h + 42);
    if (p + 46 + nameLen + extraLen + commentLen > cd.size())
      badZip(path, fmt::format("central directory entry {} is corrupt", i));
    m.name.assign(reinterpret_cast<const char*>(h + 46), nameLen);
    if (flags & 1)
      throw DatasetError(fmt::format(
          "{}: member '{}' is encrypted and cannot be read", path, m.name));
    // Zip64 extended information: 64-bit fields replace saturated ones.
    const unsigned char* x = h + 46 + nameLen;
    for (size_t q = 0; q + 4 <= extraLen;) {
      uint16_t id = le16(x + q), len = le16(x + q + 2);
      if (id == 0x0001) {
        size_t r = q + 4;
        if (m.size == 0xFFFFFFFFu && r + 8 <= q + 4 + len) {
          m.size = le64(x + r);
          r += 8;
        }
        if (m.compressedSize == 0xFFFFFFFFu && r + 8 <= q + 4 + len) {
          m.compressedSize = le64(x + r);
          r += 8;
        }
        if (m.localHeaderOffset == 0xFFFFFFFFu && r + 8 <= q + 4 + len)
          m.localHeaderOffset = le64(x + r);
      }
      q += 4 + len;
    }
    members.push_back(m);
    p += 46 + nameLen + extraLen + commentLen;
  }
  return members;
}

std::unique_ptr<ByteStream> openZipMember(const std::string& path,
                                          const ZipMember& member) {
  return std::make_unique<ZipMemberStream>(path, member);
}

} // namespace hpvm::ds
