// DatasetTest.cpp - locating labels by HPVM's naming and the exact dataset
// size and label checks.
#include "CodegenTestGraphs.h"
#include "codegen/Datasets.h"
#include "support/Diagnostics.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

using namespace hpvm::fe;
using namespace hpvm::fe::testing;

namespace {

/// Writes \p n images of 1x2x2 floats and, unless labelsBytes < 0, labels.
void writeSet(const std::string& dir, const std::string& prefix, int64_t n,
              std::vector<int32_t> labels) {
  writeFile(dir + "/" + prefix + "_input.bin",
            std::string(static_cast<size_t>(n) * 16, '\0'));
  std::string bytes(labels.size() * 4, '\0');
  std::memcpy(bytes.data(), labels.data(), bytes.size());
  writeFile(dir + "/" + prefix + "_labels.bin", bytes);
}

} // namespace

TEST_CASE("Dataset: labels default to HPVM's naming") {
  CHECK(defaultLabelsPath("data/tune_input.bin", "tune") ==
        "data/tune_labels.bin");
  CHECK(defaultLabelsPath("/a/input_dir/test_input_v2.bin", "test") ==
        "/a/input_dir/test_labels_v2.bin");
  CHECK_THROWS_WITH_AS(defaultLabelsPath("/d/images.bin", "tune"),
                       "cannot derive the tune labels file from "
                       "'/d/images.bin' (HPVM names them X_input.bin and "
                       "X_labels.bin); give --tune-labels FILE",
                       UserError);
}

TEST_CASE("Dataset: a valid set is counted") {
  std::string dir = scratchDir("dataset-ok");
  writeSet(dir, "tune", 3, {0, 1, 9});
  Dataset ds = checkDataset("tune", dir + "/tune_input.bin", "", 1, 2, 2, 10);
  CHECK(ds.count == 3);
  CHECK(ds.inputBytes == 48);
  CHECK(ds.labelsPath == dir + "/tune_labels.bin");
}

TEST_CASE("Dataset: every size and label error is exact") {
  std::string dir = scratchDir("dataset-bad");
  std::string in = dir + "/test_input.bin";

  CHECK_THROWS_WITH_AS(
      checkDataset("test", in, "", 1, 2, 2, 10),
      ("test input '" + in + "': cannot open: No such file or directory")
          .c_str(),
      UserError);

  writeFile(in, "");
  CHECK_THROWS_WITH_AS(checkDataset("test", in, "", 1, 2, 2, 10),
                       ("test input '" + in + "' is empty").c_str(), UserError);

  writeFile(in, std::string(40, '\0'));
  CHECK_THROWS_WITH_AS(
      checkDataset("test", in, "", 1, 2, 2, 10),
      ("test input '" + in +
       "': 40 bytes is not a whole number of images for the model input "
       "1x2x2 (16 bytes of float32 per image)")
          .c_str(),
      UserError);

  writeFile(in, std::string(32, '\0'));
  // No labels file where HPVM's naming points: a set without labels.
  CHECK(checkDataset("test", in, "", 1, 2, 2, 10).labelsPath.empty());
  CHECK(checkDataset("test", in, "", 1, 2, 2, 10).count == 2);
  CHECK_THROWS_WITH_AS(checkDataset("test", in, dir + "/nope.bin", 1, 2, 2, 10),
                       ("test labels '" + dir +
                        "/nope.bin': cannot open: No such file or directory")
                           .c_str(),
                       UserError);

  writeFile(dir + "/test_labels.bin", std::string(12, '\0'));
  CHECK_THROWS_WITH_AS(checkDataset("test", in, "", 1, 2, 2, 10),
                       ("test labels '" + dir +
                        "/test_labels.bin': expected 8 bytes (2 int32 "
                        "labels for the 2 images of '" +
                        in + "'), got 12 bytes")
                           .c_str(),
                       UserError);

  writeSet(dir, "test", 2, {3, 10});
  CHECK_THROWS_WITH_AS(checkDataset("test", in, "", 1, 2, 2, 10),
                       ("test labels '" + dir +
                        "/test_labels.bin': label 10 of image 1 is out of "
                        "range (the model has 10 classes)")
                           .c_str(),
                       UserError);
  writeSet(dir, "test", 2, {-1, 0});
  CHECK_THROWS_WITH_AS(checkDataset("test", in, "", 1, 2, 2, 1),
                       ("test labels '" + dir +
                        "/test_labels.bin': label -1 of image 0 is out of "
                        "range (the model has 1 class)")
                           .c_str(),
                       UserError);
}
