// CalibrationTest.cpp - int8 calibration files (exact bytes, exact round
// trip, every error with its exact message) and the min/max and percentile
// measurements.
#include "driver/Calibration.h"
#include "base/Errors.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace hpvm::rt;

namespace {

/// Writes \p text to a fresh temporary file and removes it on destruction.
class TempFile {
public:
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/hpvm_calib_XXXXXX";
    int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    close(fd);
    path_ = name;
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

/// The UserError message of reading \p text as a calibration ("F" stands
/// for the file's path).
std::string errorOf(const std::string& text) {
  TempFile f(text);
  try {
    readCalibration(f.path());
  } catch (const UserError& e) {
    std::string msg = e.what();
    const size_t at = msg.find(f.path());
    if (at != std::string::npos)
      msg.replace(at, f.path().size(), "F");
    return msg;
  }
  return "(no error)";
}

const std::string kHead = "torch2hpvm-int8-calibration 1\n";

} // namespace

TEST_CASE("Calibration: a file reads back exactly what was written") {
  Int8Calibration cal;
  cal.model = "lenet";
  cal.method = "percentile 99.99";
  cal.images = 1000;
  cal.nodes = {{1, HpvmOp::Conv, -1.f, 1.f, 0},
               {2, HpvmOp::GroupConv, 0.f, 0.1f, 0},
               {4, HpvmOp::Mul, -3.4028235e38f, 1.17549435e-38f, 0}};
  const std::string text = calibrationText(cal);
  CHECK(text == kHead +
                    "# Input ranges of the int8-capable nodes, measured on "
                    "exact fp32 runs;\n# lo >= 0: unsigned 8-bit input, "
                    "else signed.\nmodel lenet\nmethod percentile 99.99\n"
                    "images 1000\nnode 1 conv -1 1\nnode 2 group_conv 0 0.1\n"
                    "node 4 mul -3.4028235e+38 1.1754944e-38\n");
  TempFile f(text);
  Int8Calibration back = readCalibration(f.path());
  CHECK(back.model == "lenet");
  CHECK(back.method == "percentile 99.99");
  CHECK(back.images == 1000);
  REQUIRE(back.nodes.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(back.nodes[i].ordinal == cal.nodes[i].ordinal);
    CHECK(back.nodes[i].op == cal.nodes[i].op);
    CHECK(back.nodes[i].lo == cal.nodes[i].lo); // bit for bit
    CHECK(back.nodes[i].hi == cal.nodes[i].hi);
  }
  CHECK(back.nodes[2].line == 9);
}

TEST_CASE("Calibration: every malformed file gets its exact message") {
  CHECK(errorOf("") == "F: not an int8 calibration (the file is empty)");
  CHECK(errorOf("# only a comment\n") ==
        "F: not an int8 calibration (the file is empty)");
  CHECK(errorOf("hello\x01world\n") ==
        "F:1: not an int8 calibration (expected "
        "'torch2hpvm-int8-calibration 1' first, found 'hello\\x01world')");
  CHECK(errorOf("torch2hpvm-int8-calibration 2\n") ==
        "F:1: calibration version 2 (this program reads version 1)");
  CHECK(errorOf(kHead) == "F: int8 calibration lists no nodes");
  CHECK(errorOf(kHead + "node 1 conv 0\n") ==
        "F:2: expected 'node ORDINAL OP LO HI', found 'node 1 conv 0'");
  CHECK(errorOf(kHead + "node 0 conv 0 1\n") ==
        "F:2: expected 'node ORDINAL OP LO HI', found 'node 0 conv 0 1'");
  CHECK(errorOf(kHead + "node 1 convolution 0 1\n") ==
        "F:2: expected 'node ORDINAL OP LO HI', found 'node 1 convolution 0 "
        "1'");
  CHECK(errorOf(kHead + "node 1 conv 2 1\n") ==
        "F:2: node 1: range [2, 1] is not a finite interval");
  CHECK(errorOf(kHead + "node 1 conv nan 1\n") ==
        "F:2: node 1: range [nan, 1] is not a finite interval");
  CHECK(errorOf(kHead + "node 1 relu 0 1\n") ==
        "F:2: node 1: relu has no int8 knob (conv, group_conv, dilated_conv "
        "and mul have)");
  CHECK(errorOf(kHead + "node 1 conv 0 1\n\nnode 1 mul 0 1\n") ==
        "F:4: node 1 listed twice (first on line 2)");
  CHECK(errorOf(kHead + "scale 3\n") ==
        "F:2: unexpected line 'scale 3' (expected model, method, images or "
        "node lines)");
  CHECK(errorOf(kHead + "images -5\n") ==
        "F:2: unexpected line 'images -5' (expected model, method, images "
        "or node lines)");
  CHECK(errorOf(kHead + std::string(60, 'x') + "\n") ==
        "F:2: unexpected line '" + std::string(40, 'x') +
            "...' (expected model, method, images or node lines)");
  // Not a file at all.
  CHECK_THROWS_WITH_AS(readCalibration("/nonexistent/cal.txt"),
                       doctest::Contains("/nonexistent/cal.txt"), UserError);
}

TEST_CASE("Calibration: methods parse, and bad ones get their exact message") {
  CHECK_FALSE(parseCalibrationMethod("minmax").percentile);
  CHECK(parseCalibrationMethod("percentile").percent == 99.99);
  CHECK(parseCalibrationMethod("percentile:99.9").percent == 99.9);
  CHECK(parseCalibrationMethod("percentile:99.9").describe() ==
        "percentile 99.9");
  for (const char* bad : {"percentile:0", "percentile:101",
                          "percentile:", "median", "percentile:x"})
    CHECK_THROWS_WITH_AS(
        parseCalibrationMethod(bad),
        (std::string("bad value '") + bad +
         "' for --method: expected minmax, percentile or percentile:P with "
         "0 < P <= 100")
            .c_str(),
        UserError);
}

TEST_CASE("Calibration: min/max and percentile ranges of observed inputs") {
  // Node 1: 0..9999 (nonnegative); node 2: -500..99 (signed), in batches.
  std::vector<float> a(10000), b(600);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float(i);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float(int(i) - 500);
  for (bool percentile : {false, true}) {
    CalibrationMethod m;
    m.percentile = percentile;
    m.percent = 99.0;
    CalibrationRecorder rec(m);
    auto pass = [&] {
      rec.add(1, HpvmOp::Conv, a.data(), 5000);
      rec.add(1, HpvmOp::Conv, a.data() + 5000, 5000);
      rec.add(2, HpvmOp::Mul, b.data(), int64_t(b.size()));
    };
    pass();
    CHECK(rec.needsSecondPass() == percentile);
    if (percentile) {
      rec.nextPass();
      pass();
    }
    Int8Calibration cal = rec.result("m", 7);
    REQUIRE(cal.nodes.size() == 2);
    CHECK(cal.model == "m");
    CHECK(cal.images == 7);
    CHECK(cal.nodes[0].ordinal == 1);
    CHECK(cal.nodes[1].op == HpvmOp::Mul);
    if (!percentile) {
      CHECK(cal.method == "minmax");
      CHECK(cal.nodes[0].lo == 0.f);
      CHECK(cal.nodes[0].hi == 9999.f);
      CHECK(cal.nodes[1].lo == -500.f);
      CHECK(cal.nodes[1].hi == 99.f);
      continue;
    }
    CHECK(cal.method == "percentile 99");
    // 99% of 0..9999 lie below 9900; the bound is the upper edge of the
    // histogram bin (4096 bins over [0, 9999]) holding it.
    CHECK(cal.nodes[0].lo == 0.f);
    CHECK(cal.nodes[0].hi == doctest::Approx(9900).epsilon(0.001));
    CHECK(cal.nodes[0].hi >= 9900.f);
    // Magnitudes 0..500: the 99th percentile of 600 values is 494, and
    // the range stays symmetric-signed but within the observed one.
    CHECK(cal.nodes[1].hi == 99.f);
    CHECK(cal.nodes[1].lo == doctest::Approx(-494).epsilon(0.002));
    CHECK(cal.nodes[1].lo <= -494.f);
  }
}
