// ConvertOptionsTest.cpp - split, shuffle, limit, scale and normalise
// semantics, chunk boundaries, and the dataset.json manifest.
#include "DatasetTestUtil.h"

#include "hpvm_ds/Convert.h"
#include "hpvm_ds/Dataset.h"

#include <nlohmann/json.hpp>

#include <cstring>

using namespace hpvm::ds;
using namespace hpvm::ds::test;

namespace {

/// Ten 1x1x2 images: image i holds pixels (i, 100 + i); label i.
void writeTen(const TempDir& dir) {
  std::string px;
  for (int i = 0; i < 10; ++i) {
    px += static_cast<char>(i);
    px += static_cast<char>(100 + i);
  }
  writeFile(dir / "img", idx(0x08, {10, 1, 2}, px));
  std::string lab;
  for (int i = 0; i < 10; ++i)
    lab += static_cast<char>(i);
  writeFile(dir / "lab", idx(0x08, {10}, lab));
}

std::vector<int32_t> labelsOf(const std::string& path) {
  std::string b = readFile(path);
  std::vector<int32_t> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

std::vector<float> floatsOf(const std::string& path) {
  std::string b = readFile(path);
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

} // namespace

TEST_CASE("Datasets: --split writes consecutive parts in file order") {
  TempDir dir;
  writeTen(dir);
  ToolRun r = runTool({"convert", dir / "img", dir / "lab", "--split",
                       "tune=3,test=4", "-o", dir / "out"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(labelsOf(dir / "out/tune_labels.bin") == std::vector<int32_t>{0, 1, 2});
  CHECK(labelsOf(dir / "out/test_labels.bin") ==
        std::vector<int32_t>{3, 4, 5, 6});
  CHECK(floatsOf(dir / "out/test_input.bin") ==
        std::vector<float>{3, 103, 4, 104, 5, 105, 6, 106});
  CHECK(r.out ==
        "torch2hpvm-dataset: 10 images of 1x1x2 (idx, uint8)\n"
        "  tune         3 images -> " +
            dir / "out/tune_input.bin" + ", " + dir / "out/tune_labels.bin" +
            "\n"
            "  test         4 images -> " +
            dir / "out/test_input.bin" + ", " + dir / "out/test_labels.bin" +
            "\n"
            "  3 images not written (not in --split/--limit)\n" +
            r.out.substr(r.out.find("  values in [0, 106] after "
                                    "--scale 1; ")));
}

TEST_CASE("Datasets: --shuffle is a fixed permutation per seed, applied "
          "before --limit and --split") {
  TempDir dir;
  writeTen(dir);
  REQUIRE(runTool({"convert", dir / "img", dir / "lab", "--shuffle", "42",
                   "--name", "all", "-q", "-o", dir / "a"})
              .code == 0);
  // The order is part of the format's contract: Fisher-Yates over
  // std::mt19937_64(42), identical on every platform.
  std::vector<int32_t> order{1, 7, 9, 0, 3, 8, 4, 2, 5, 6};
  CHECK(labelsOf(dir / "a/all_labels.bin") == order);
  std::vector<float> px = floatsOf(dir / "a/all_input.bin");
  for (size_t k = 0; k < order.size(); ++k) {
    CHECK(px[2 * k] == static_cast<float>(order[k]));
    CHECK(px[2 * k + 1] == static_cast<float>(100 + order[k]));
  }
  REQUIRE(runTool({"convert", dir / "img", dir / "lab", "--shuffle", "42",
                   "--limit", "6", "--split", "x=2,y=4", "-q", "-o", dir / "b"})
              .code == 0);
  CHECK(labelsOf(dir / "b/x_labels.bin") == std::vector<int32_t>{1, 7});
  CHECK(labelsOf(dir / "b/y_labels.bin") == std::vector<int32_t>{9, 0, 3, 8});
  REQUIRE(runTool({"convert", dir / "img", dir / "lab", "--shuffle", "43",
                   "--name", "all", "-q", "-o", dir / "c"})
              .code == 0);
  CHECK(labelsOf(dir / "c/all_labels.bin") != order);
}

TEST_CASE("Datasets: --limit takes the first images, and chunk size does not "
          "change the output") {
  TempDir dir;
  writeTen(dir);
  REQUIRE(runTool({"convert", dir / "img", dir / "lab", "--limit", "4", "-q",
                   "-o", dir / "l"})
              .code == 0);
  CHECK(labelsOf(dir / "l/tune_labels.bin") == std::vector<int32_t>{0, 1});
  CHECK(labelsOf(dir / "l/test_labels.bin") == std::vector<int32_t>{2, 3});

  for (bool shuffle : {false, true}) {
    CAPTURE(shuffle);
    std::string out[2];
    for (int64_t chunk : {1, 3}) {
      OpenOptions oo;
      auto src = openSource({dir / "img", dir / "lab"}, oo);
      ConvertOptions co;
      co.outDir = dir / ("k" + std::to_string(chunk));
      co.split = parseSplit("a=4,b=5");
      co.chunk = chunk;
      co.manifest = false;
      if (shuffle)
        co.shuffleSeed = 7;
      ConvertResult res = convert(*src, co);
      CHECK(res.unused == 1);
      CHECK(res.parts.size() == 2);
      out[chunk == 1 ? 0 : 1] = readFile(co.outDir + "/a_input.bin") +
                                readFile(co.outDir + "/b_input.bin") +
                                readFile(co.outDir + "/b_labels.bin");
    }
    CHECK(out[0] == out[1]);
    CHECK(out[0].size() == 9 * 2 * 4 + 5 * 4);
  }
}

TEST_CASE("Datasets: --scale fractions and decimals, --normalize per "
          "channel") {
  CHECK(parseScale("1/255").num == 1.0f);
  CHECK(parseScale("1/255").den == 255.0f);
  CHECK(parseScale("0.5").num == 0.5f);
  CHECK(parseScale("0.5").den == 1.0f);
  CHECK_THROWS_WITH(parseScale("-2"),
                    "--scale: '-2' is not a positive number or fraction (for "
                    "example 1/255)");
  auto [m, s] = parseNormalize("0.4914,0.4822,0.4465,0.247,0.243,0.261", 3);
  CHECK(m == std::vector<float>{0.4914f, 0.4822f, 0.4465f});
  CHECK(s == std::vector<float>{0.247f, 0.243f, 0.261f});
  auto [m1, s1] = parseNormalize("0.5,0.25", 3);
  CHECK(m1 == std::vector<float>{0.5f, 0.5f, 0.5f});
  CHECK(s1 == std::vector<float>{0.25f, 0.25f, 0.25f});
  CHECK_THROWS_WITH(parseNormalize("0.5,x", 1),
                    "--normalize: 'x' in '0.5,x' is not a number");
  CHECK(parseSplit("tune=5000,test=5000").size() == 2);
  CHECK(parseSplit("tune=5000,test=5000")[1].name == "test");
  CHECK(parseSplit("tune=5000,test=5000")[1].count == 5000);
  CHECK_THROWS_WITH(parseSplit("a=0"),
                    "--split: 'a=0' is not NAME=COUNT (NAME of 1 to 100 "
                    "letters, digits and _, COUNT positive), as in "
                    "tune=5000,test=5000");
  CHECK(parseSplit(std::string(100, 'n') + "=1")[0].name ==
        std::string(100, 'n'));
}

TEST_CASE("Datasets: dataset.json records source, transform and parts") {
  TempDir dir;
  writeTen(dir);
  REQUIRE(runTool({"convert", dir / "img", dir / "lab", "--scale", "1/2",
                   "--normalize", "1,2", "--shuffle", "3", "--split",
                   "tune=4,test=4", "-q", "-o", dir / "out"})
              .code == 0);
  auto j = nlohmann::json::parse(readFile(dir / "out/dataset.json"));
  CHECK(j["source"]["format"] == "idx");
  CHECK(j["source"]["images"] == 10);
  CHECK(j["shape"] == nlohmann::json({1, 1, 2}));
  CHECK(j["scale"] == "1/2");
  CHECK(j["normalize"]["mean"] == nlohmann::json({1.0}));
  CHECK(j["normalize"]["std"] == nlohmann::json({2.0}));
  CHECK(j["shuffle_seed"] == 3);
  CHECK(j["unused"] == 2);
  CHECK(j["parts"][1]["name"] == "test");
  CHECK(j["parts"][1]["input"] == "test_input.bin");
  CHECK(j["parts"][1]["count"] == 4);
  REQUIRE(runTool({"convert", dir / "img", dir / "lab", "--no-manifest", "-q",
                   "-o", dir / "nm"})
              .code == 0);
  CHECK(listDir(dir / "nm") ==
        std::vector<std::string>{"test_input.bin", "test_labels.bin",
                                 "tune_input.bin", "tune_labels.bin"});
}
