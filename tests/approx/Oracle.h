// Oracle.h - runs tests/approx/oracle.py (the NumPy oracle) on cases written
// by the approx tests, exchanging float32 tensors through .npy files.
#ifndef HPVM_TESTS_APPROX_ORACLE_H
#define HPVM_TESTS_APPROX_ORACLE_H

#include "approx/Approx.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace hpvm::test {

/// A float32 tensor with its shape.
struct Array {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

/// Writes a C-order little-endian float32 .npy file (format 1.0).
inline void writeNpy(const std::string& path, const Array& a) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int64_t d : a.shape)
    dict += std::to_string(d) + ", ";
  dict += "), }";
  // Magic (6) + version (2) + length (2) + dict + '\n', padded to 64.
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::ofstream f(path, std::ios::binary);
  const uint16_t len = static_cast<uint16_t>(dict.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.put(static_cast<char>(len & 0xff));
  f.put(static_cast<char>(len >> 8));
  f << dict;
  f.write(reinterpret_cast<const char*>(a.data.data()),
          static_cast<std::streamsize>(a.data.size() * sizeof(float)));
  if (!f)
    throw std::runtime_error("cannot write " + path);
}

/// Reads a float32 .npy file written by numpy.save (format 1.0 or 2.0);
/// only the element data is returned, the shape is checked by the caller
/// through the element count.
inline std::vector<float> readNpy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[8];
  if (!f.read(magic, 8) || std::string(magic + 1, 5) != "NUMPY")
    throw std::runtime_error(path + ": not a .npy file");
  uint32_t len = 0;
  unsigned char b[4] = {0, 0, 0, 0};
  f.read(reinterpret_cast<char*>(b), magic[6] == 1 ? 2 : 4);
  len = b[0] | (b[1] << 8) | (b[2] << 16) | (uint32_t(b[3]) << 24);
  std::string header(len, ' ');
  f.read(header.data(), len);
  if (header.find("'<f4'") == std::string::npos ||
      header.find("'fortran_order': False") == std::string::npos)
    throw std::runtime_error(path + ": expected C-order <f4, got " + header);
  std::vector<float> out;
  float v;
  while (f.read(reinterpret_cast<char*>(&v), sizeof v))
    out.push_back(v);
  return out;
}

/// A scratch directory removed on destruction.
class TempDir {
public:
  TempDir() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "hpvm_approx_XXXXXX")
            .string();
    if (!mkdtemp(tmpl.data()))
      throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// The directory's path.
  const std::string& path() const { return path_; }
  /// A file name inside the directory.
  std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

/// Collects oracle cases, runs oracle.py once on all of them and returns
/// each case's output.
class OracleBatch {
public:
  /// Writes a tensor for later cases; returns its file name.
  std::string addTensor(const Array& a) {
    const std::string name = "t" + std::to_string(tensors_++) + ".npy";
    writeNpy(dir_.file(name), a);
    return name;
  }
  /// Adds a convolution case ("conv", "perf_row", "perf_col" or "samp") on
  /// tensors written by addTensor; returns its index.
  size_t addConv(const std::string& op, const std::string& x,
                 const std::string& w, const hpvm::rt::ConvArgs& a, int rate,
                 int offset) {
    const size_t i = cases_.size();
    const std::string id = std::to_string(i);
    cases_.push_back({{"op", op},
                      {"x", x},
                      {"w", w},
                      {"out", "y" + id + ".npy"},
                      {"pad", {a.padH, a.padW}},
                      {"stride", {a.strideH, a.strideW}},
                      {"groups", a.groups},
                      {"rate", rate},
                      {"offset", offset}});
    return i;
  }
  /// Adds an elementwise rounding case ("half" or "bf16").
  size_t addRound(const std::string& op, const Array& x) {
    const size_t i = cases_.size();
    const std::string id = std::to_string(i);
    writeNpy(dir_.file("x" + id + ".npy"), x);
    cases_.push_back(
        {{"op", op}, {"x", "x" + id + ".npy"}, {"out", "y" + id + ".npy"}});
    return i;
  }
  /// Runs the oracle; throws with its exit status on failure.
  void run() {
    std::ofstream(dir_.file("cases.json")) << cases_.dump();
    const std::string cmd = std::string("/usr/bin/python3 ") + HPVM_SOURCE_DIR +
                            "/tests/approx/oracle.py " + dir_.path();
    const int rc = std::system(cmd.c_str());
    if (rc != 0)
      throw std::runtime_error("oracle failed (" + std::to_string(rc) +
                               "): " + cmd);
  }
  /// The oracle's output of case i (after run()).
  std::vector<float> result(size_t i) const {
    return readNpy(dir_.file("y" + std::to_string(i) + ".npy"));
  }

private:
  TempDir dir_;
  size_t tensors_ = 0;
  nlohmann::json cases_ = nlohmann::json::array();
};

/// A tensor of the given shape with uniform values in [-1, 1).
inline Array randomArray(std::vector<int64_t> shape, uint32_t seed) {
  Array a;
  a.shape = std::move(shape);
  int64_t n = 1;
  for (int64_t d : a.shape)
    n *= d;
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  a.data.resize(n);
  for (float& v : a.data)
    v = dist(gen);
  return a;
}

/// Index of the first element where got and want differ by more than
/// 1e-4 + 1e-4 * |want| (float32 accumulation over at most a few thousand
/// products of values in [-1, 1] stays far below it), or -1.
inline int64_t firstMismatch(const std::vector<float>& got,
                             const std::vector<float>& want) {
  if (got.size() != want.size())
    return 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1e-4f + 1e-4f * std::fabs(want[i])))
      return static_cast<int64_t>(i);
  return -1;
}

} // namespace hpvm::test

#endif // HPVM_TESTS_APPROX_ORACLE_H
