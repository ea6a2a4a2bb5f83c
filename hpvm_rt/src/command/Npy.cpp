// Npy.cpp - NumPy .npy (version 1.0) writer for output tensors.
#include "command/Npy.h"

#include "base/FileUtil.h"

#include <fmt/format.h>

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

void writeNpy(const std::string& path, const std::vector<int64_t>& shape,
              const float* data) {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  std::string bytes = npyHeader(shape);
  bytes.append(reinterpret_cast<const char*>(data),
               static_cast<size_t>(count) * sizeof(float));
  writeFileAtomic(path, bytes);
}

} // namespace hpvm::rt
