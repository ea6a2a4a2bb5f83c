// ToolTest.cpp - torch2hpvm-dataset info (text checked against NumPy's
// statistics, JSON, validation) and the command line itself.
#include "DatasetTestUtil.h"

#include <nlohmann/json.hpp>

using namespace hpvm::ds::test;

TEST_CASE("Datasets: info on Fashion-MNIST matches NumPy's statistics") {
  TempDir dir;
  std::string img = kFashion + "/t10k-images-idx3-ubyte.gz",
              lab = kFashion + "/t10k-labels-idx1-ubyte.gz";
  ToolRun r = runTool({"info", img, lab});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  runPython(dir, R"(
d = '/usr/share/datasets/fashion-mnist/'
x = fashion('t10k-images-idx3-ubyte.gz', 16).astype(np.float64)
y = fashion('t10k-labels-idx1-ubyte.gz', 8)
out = 'source:  %st10k-images-idx3-ubyte.gz, ' % d
out += '%st10k-labels-idx1-ubyte.gz (idx)\n' % d
out += 'images:  10000 of 1x28x28 (uint8)\n'
out += 'values:  min %.6g, max %.6g\n' % (x.min(), x.max())
out += 'mean:    %.6g\nstd:     %.6g\n' % (x.mean(), x.std())
h = np.bincount(y)
out += 'labels:  %d classes present, 0..%d\n' % ((h > 0).sum(), len(h) - 1)
out += ''.join('  %4d: %d\n' % (k, n) for k, n in enumerate(h))
open('expected', 'w').write(out)
)");
  CHECK(r.out == readFile(dir / "expected"));
}

TEST_CASE("Datasets: info --json on a converted bin pair") {
  TempDir dir;
  ToolRun c = runTool({"convert", kFashion + "/t10k-images-idx3-ubyte.gz",
                       kFashion + "/t10k-labels-idx1-ubyte.gz", "--scale",
                       "1/255", "--limit", "1000", "-q", "-o", dir / "d"});
  REQUIRE(c.code == 0);
  ToolRun r = runTool(
      {"info", dir / "d/test_input.bin", "--shape", "1,28,28", "--json"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["format"] == "bin");
  CHECK(j["labels_path"] == dir / "d/test_labels.bin");
  CHECK(j["count"] == 500);
  CHECK(j["shape"] == nlohmann::json({1, 28, 28}));
  CHECK(j["min"] == 0.0);
  CHECK(j["max"] == 1.0);
  CHECK(j["non_finite"] == 0);
  int64_t total = 0;
  for (int64_t n : j["label_histogram"])
    total += n;
  CHECK(total == 500);
  CHECK(j["label_histogram"].size() == 10);
}

TEST_CASE("Datasets: info says exactly how a bin pair misses the model's "
          "input shape") {
  TempDir dir;
  writeFile(dir / "tune_input.bin", std::string(4 * 784 * 4, '\0'));
  writeFile(dir / "tune_labels.bin", std::string(4 * 4, '\0'));
  ToolRun r = runTool({"info", dir / "tune_input.bin", "--shape", "3,32,32"});
  CHECK(r.code == 1);
  CHECK(r.out.empty());
  CHECK(r.err == "torch2hpvm-dataset: error: " + dir / "tune_input.bin" +
                     ": 12544 bytes is not a whole number of 3x32x32 float32 "
                     "images (12288 bytes each); with the 4 labels of " +
                     dir / "tune_labels.bin" +
                     " it holds 784 floats per image (for example 1x28x28)\n");
  ToolRun idxShape = runTool(
      {"info", kFashion + "/t10k-images-idx3-ubyte.gz", "--shape", "3,32,32"});
  CHECK(idxShape.code == 1);
  CHECK(idxShape.err == "torch2hpvm-dataset: error: " + kFashion +
                            "/t10k-images-idx3-ubyte.gz: images are 1x28x28 "
                            "(read as NCHW), but --shape says 3x32x32\n");
}

TEST_CASE("Datasets: command line help, version and usage errors") {
  ToolRun help = runTool({"--help"});
  CHECK(help.code == 0);
  CHECK(help.out.find("convert") != std::string::npos);
  CHECK(help.out.find("info") != std::string::npos);
  ToolRun sub = runTool({"convert", "--help"});
  CHECK(sub.code == 0);
  CHECK(sub.out.find("--normalize") != std::string::npos);
  ToolRun ver = runTool({"--version"});
  CHECK(ver.code == 0);
  CHECK(ver.out == "torch2hpvm-dataset 0.1.0\n");
  ToolRun none = runTool({});
  CHECK(none.code == 1);
  CHECK(none.err.rfind("torch2hpvm-dataset: error: ", 0) == 0);
  ToolRun noOut = runTool({"convert", "x"});
  CHECK(noOut.code == 1);
  CHECK(noOut.err == "torch2hpvm-dataset: error: --output is required\n"
                     "Run 'torch2hpvm-dataset convert --help' for usage.\n");
  ToolRun badLayout = runTool({"info", "x", "--layout", "chw"});
  CHECK(badLayout.code == 1);
  CHECK(badLayout.err.find("--layout") != std::string::npos);
}
