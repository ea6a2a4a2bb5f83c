// Npy.cpp - NumPy .npy (version 1.0) writer for output tensors.
#include "command/Npy.h"

#include "base/Errors.h"
#include "base/FileUtil.h"

#include <fmt/format.h>
#include <zlib.h>

#include <cstdint>
#include <set>

namespace hpvm::rt {

std::string npyHeader(const std::vector<int64_t>& shape) {
  // Python tuple syntax: "(5,)" for one dimension, "(5, 10)" for more.
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i)
    dims += fmt::format("{}{}", i ? ", " : "", shape[i]);
  if (shape.size() == 1)
    dims += ",";
  std::string dict = fmt::format(
      "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}", dims);
  // Magic (6) + version (2) + length (2) + dict + padding + '\n' is a
  // multiple of 64 bytes.
  size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string header = "\x93NUMPY";
  header += '\x01';
  header += '\x00';
  header += static_cast<char>(dict.size() & 0xff);
  header += static_cast<char>((dict.size() >> 8) & 0xff);
  return header + dict;
}

namespace {

/// A whole .npy file: the header of \p shape, then \p data.
std::string npyBytes(const std::vector<int64_t>& shape, const float* data) {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  std::string bytes = npyHeader(shape);
  bytes.append(reinterpret_cast<const char*>(data),
               static_cast<size_t>(count) * sizeof(float));
  return bytes;
}

} // namespace

void writeNpy(const std::string& path, const std::vector<int64_t>& shape,
              const float* data) {
  writeFileAtomic(path, npyBytes(shape, data));
}

namespace {

void put16(std::string& s, uint32_t v) {
  s += static_cast<char>(v & 0xff);
  s += static_cast<char>((v >> 8) & 0xff);
}

void put32(std::string& s, uint32_t v) {
  put16(s, v & 0xffff);
  put16(s, v >> 16);
}

/// \p name as a zip member key NumPy reads back, unique among \p taken.
std::string memberKey(const std::string& name, std::set<std::string>& taken) {
  std::string key;
  for (char c : name)
    key += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                   c == '-' || c == '.'
               ? c
               : '_';
  if (key.empty())
    key = "output";
  std::string unique = key;
  for (int i = 1; !taken.insert(unique).second; ++i)
    unique = fmt::format("{}_{}", key, i);
  return unique;
}

} // namespace

void writeNpz(const std::string& path, const std::vector<NpzArray>& arrays) {
  // Zip, "stored" (method 0): a local header and the bytes per member,
  // then the central directory and its end record (APPNOTE 4.3).
  std::string file, central;
  std::set<std::string> taken;
  for (const NpzArray& a : arrays) {
    const std::string member = npyBytes(a.shape, a.data);
    const std::string name = memberKey(a.name, taken) + ".npy";
    if (file.size() + member.size() + name.size() + 30 > 0xffffffffull)
      throw UserError(fmt::format(
          "{}: the outputs take more than the 4 GiB a .npz (zip) file can "
          "hold; write fewer images (--limit)",
          path));
    const uint32_t crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(member.data()),
              static_cast<uInt>(member.size())));
    const uint32_t offset = static_cast<uint32_t>(file.size());
    std::string common;  // version .. name length, shared by both headers
    put16(common, 20);   // version needed: 2.0
    put16(common, 0);    // flags
    put16(common, 0);    // method: stored
    put16(common, 0);    // time
    put16(common, 0x21); // date: 1980-01-01
    put32(common, crc);
    put32(common, static_cast<uint32_t>(member.size()));
    put32(common, static_cast<uint32_t>(member.size()));
    put16(common, static_cast<uint32_t>(name.size()));
    put16(common, 0); // extra field length
    put32(file, 0x04034b50);
    file += common + name + member;
    put32(central, 0x02014b50);
    put16(central, 20); // made by: 2.0
    central += common;
    put16(central, 0); // comment length
    put16(central, 0); // disk
    put16(central, 0); // internal attributes
    put32(central, 0); // external attributes
    put32(central, offset);
    central += name;
  }
  const uint32_t dirOffset = static_cast<uint32_t>(file.size());
  file += central;
  put32(file, 0x06054b50);
  put16(file, 0); // this disk
  put16(file, 0); // directory's disk
  put16(file, static_cast<uint32_t>(arrays.size()));
  put16(file, static_cast<uint32_t>(arrays.size()));
  put32(file, static_cast<uint32_t>(central.size()));
  put32(file, dirOffset);
  put16(file, 0); // comment length
  writeFileAtomic(path, file);
}

} // namespace hpvm::rt
