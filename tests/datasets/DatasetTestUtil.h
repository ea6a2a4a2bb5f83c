// DatasetTestUtil.h - helpers for the dataset tests: temporary directories,
// file I/O, running /usr/bin/python3 (NumPy writes fixtures and reference
// outputs) and running torch2hpvm-dataset in-process.
#ifndef HPVM_TESTS_DATASETS_DATASETTESTUTIL_H
#define HPVM_TESTS_DATASETS_DATASETTESTUTIL_H

#include "hpvm_ds/Tool.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace hpvm::ds::test {

namespace fs = std::filesystem;

/// The Debian package's Fashion-MNIST files.
inline const std::string kFashion = "/usr/share/datasets/fashion-mnist";

/// A fresh directory under the system temp dir, removed on destruction.
class TempDir {
public:
  TempDir() {
    std::string tmpl =
        (fs::temp_directory_path() / "hpvm-ds-test-XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    REQUIRE(::mkdtemp(buf.data()) != nullptr);
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// Path of \p name inside the directory.
  std::string operator/(const std::string& name) const {
    return (fs::path(path_) / name).string();
  }
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

/// The whole content of \p path ("" and a failed check if unreadable).
inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  CHECK_MESSAGE(in.good(), "cannot read " << path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

/// Runs \p script with /usr/bin/python3 in \p dir. It can use numpy (as
/// np), os, gzip, struct and fashion(NAME, HEADER_BYTES), which reads a
/// Fashion-MNIST IDX file of kFashion as a flat uint8 array.
inline void runPython(const TempDir& dir, const std::string& script) {
  std::string file = dir / "script.py";
  writeFile(file,
            "import numpy as np, os, gzip, struct\n"
            "os.chdir('" +
                dir.path() +
                "')\n"
                "def fashion(name, skip):\n"
                "    data = gzip.open('" +
                kFashion +
                "/' + name).read()\n"
                "    return np.frombuffer(data, np.uint8, offset=skip)\n" +
                script);
  int rc = std::system(("/usr/bin/python3 " + file).c_str());
  REQUIRE_MESSAGE(rc == 0, "python failed: " << script);
}

/// Result of one in-process torch2hpvm-dataset run.
struct ToolRun {
  int code = -1;
  std::string out, err;
};

inline ToolRun runTool(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  ToolRun r;
  r.code = hpvm::ds::runTool(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

/// Files in \p dir (names only, sorted).
inline std::vector<std::string> listDir(const std::string& dir) {
  std::vector<std::string> names;
  if (!fs::exists(dir))
    return names;
  for (const auto& e : fs::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// Big-endian 32-bit integer bytes (IDX headers).
inline std::string be32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i)
    s[static_cast<size_t>(i)] = static_cast<char>((v >> (24 - 8 * i)) & 0xFF);
  return s;
}

/// An IDX file: magic 0x0000TTDD, the dims, then \p data.
inline std::string idx(unsigned type, const std::vector<uint32_t>& dims,
                       const std::string& data) {
  std::string s = be32((type << 8) | static_cast<uint32_t>(dims.size()));
  for (uint32_t d : dims)
    s += be32(d);
  return s + data;
}

} // namespace hpvm::ds::test

#endif // HPVM_TESTS_DATASETS_DATASETTESTUTIL_H
