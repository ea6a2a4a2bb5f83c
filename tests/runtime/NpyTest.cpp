// NpyTest.cpp - the .npy writer: exact header bytes and NumPy reading it.
#include "command/Npy.h"
#include "base/Errors.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace hpvm::rt;

namespace {

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string padded(const std::string& dict) {
  std::string h = std::string("\x93NUMPY\x01\x00", 8);
  size_t len = 128 - 10;
  h += static_cast<char>(len);
  h += '\0';
  return h + dict + std::string(len - dict.size() - 1, ' ') + "\n";
}

} // namespace

TEST_CASE("Runtime: npy headers are padded to 64 bytes") {
  CHECK(npyHeader({10, 3}) ==
        padded("{'descr': '<f4', 'fortran_order': False, 'shape': (10, 3), "
               "}"));
  CHECK(npyHeader({5}) ==
        padded("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }"));
  for (auto shape : {std::vector<int64_t>{}, std::vector<int64_t>{1},
                     std::vector<int64_t>{123456789, 1000, 7, 7}})
    CHECK(npyHeader(shape).size() % 64 == 0);
}

TEST_CASE("Runtime: NumPy reads the arrays writeNpy writes") {
  char tmpl[] = "/tmp/hpvm_rt_npy_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  std::string dir = tmpl;
  std::vector<float> data(2 * 3 * 4);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<float>(i) * 0.5f - 3.f;
  writeNpy(dir + "/a.npy", {2, 3, 4}, data.data());
  std::string cmd = "/usr/bin/python3 -c \"import numpy as n; a=n.load('" +
                    dir + "/a.npy'); print(a.shape, a.dtype, a[1, 2, 3], " +
                    "float(a.sum()))\" > " + dir + "/py.txt";
  REQUIRE(std::system(cmd.c_str()) == 0);
  CHECK(readText(dir + "/py.txt") == "(2, 3, 4) float32 8.5 66.0\n");
  CHECK_THROWS_WITH_AS(writeNpy(dir + "/no/such/dir/a.npy", {1}, data.data()),
                       (dir + "/no/such/dir/a.npy: cannot write: No such "
                              "file or directory")
                           .c_str(),
                       UserError);
  std::filesystem::remove_all(dir);
}
