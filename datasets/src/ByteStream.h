// ByteStream.h - sequential byte sources used by the dataset readers: plain
// or gzip-compressed files (zlib's gz* API reads both) and members of zip
// archives (.npz, through libzip).
#ifndef HPVM_DS_BYTESTREAM_H
#define HPVM_DS_BYTESTREAM_H

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace hpvm::ds {

/// A forward-only stream of decoded bytes.
class ByteStream {
public:
  virtual ~ByteStream();
  /// Name used in messages: the path, or "archive.npz:member".
  const std::string& name() const { return name_; }
  /// Decoded size if known before reading (plain files, zip members);
  /// -1 for gzip data.
  int64_t size() const { return size_; }
  /// Bytes delivered so far.
  int64_t offset() const { return offset_; }
  /// Whether the data is gzip-compressed.
  bool compressed() const { return compressed_; }
  /// The most bytes the data can decode to: size() when known; for gzip
  /// data, what deflate's largest ratio (1032:1) makes of the file's size.
  int64_t maxSize() const { return maxSize_; }
  /// Reads exactly \p n bytes of \p what; throws DatasetError naming the
  /// stream, the byte range and where the data ended.
  void readExact(void* dst, size_t n, const std::string& what);
  /// Reads up to \p n bytes; fewer only at the end of the data.
  size_t readSome(void* dst, size_t n);
  /// Whether all data has been consumed (reads ahead one byte if needed).
  bool atEnd();

protected:
  /// Reads up to \p n bytes from the underlying data (0 at the end);
  /// throws DatasetError on corrupt data.
  virtual size_t readRaw(void* dst, size_t n) = 0;

  std::string name_;
  int64_t size_ = -1;
  int64_t maxSize_ = std::numeric_limits<int64_t>::max();
  bool compressed_ = false;

private:
  int64_t offset_ = 0;
  bool hasPeek_ = false;
  unsigned char peek_ = 0;
};

/// Opens a plain or gzip-compressed file.
std::unique_ptr<ByteStream> openFileStream(const std::string& path);

/// One member of a zip archive.
struct ZipMember {
  std::string name;
  uint64_t index = 0; ///< In the archive's central directory.
  uint64_t size = 0;  ///< Decompressed.
};

/// Lists the members of the zip archive \p path (libzip; zip64 included;
/// encrypted members and unsupported compression refused).
std::vector<ZipMember> listZip(const std::string& path);

/// Opens member \p member of the zip archive \p path; libzip checks its
/// CRC-32 when the end of the member is read.
std::unique_ptr<ByteStream> openZipMember(const std::string& path,
                                          const ZipMember& member);

} // namespace hpvm::ds

#endif // HPVM_DS_BYTESTREAM_H
