// TensorApiTest.cpp - HPVM's tensor C API: creation, weight and dataset
// readers with their size errors, label readers, accuracy functions and
// batch memory tracking.
#include "base/Errors.h"
#include "core/Core.h"
#include "kernels/Kernels.h"
#include "tensorUtils.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

/// A scratch directory for one test, removed afterwards.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/hpvm_rt_tensorapi_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string file(const std::string& name) const { return path + "/" + name; }
};

template <class T>
void writeFile(const std::string& path, const std::vector<T>& values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()),
            std::streamsize(values.size() * sizeof(T)));
}

std::string readText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string errorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const hpvm::rt::UserError& e) {
    return e.what();
  }
  return "";
}

std::vector<float> iota(size_t n, float start = 0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = start + float(i);
  return v;
}

} // namespace

TEST_CASE("TensorApi: created tensors expose HPVM's struct fields") {
  auto* t = static_cast<Tensor*>(create4DTensor(0, nchw, 2, 3, 4, 5));
  CHECK(t->num_elems == 120);
  CHECK(t->size_in_bytes == 480);
  CHECK(t->dims.num_dims == 4);
  CHECK(t->dims.dim_sizes[0] == 2);
  CHECK(t->dims.dim_sizes[3] == 5);
  CHECK(t->host_data != nullptr);
  CHECK(t->gpu_data == nullptr);
  CHECK(t->data_placement == HOST);
  auto* m = static_cast<Tensor*>(create2DTensor(0, 6, 7));
  CHECK(m->dims.num_dims == 2);
  CHECK(m->num_elems == 42);
  CHECK(hpvm::rt::shapeOf(m) == hpvm::rt::Shape{6, 7, 1, 1});
  auto* c = static_cast<Tensor*>(create3DTensor(0, 2, 3, 4));
  CHECK(c->dims.num_dims == 3);
  CHECK(hpvm::rt::shapeOf(c) == hpvm::rt::Shape{2, 3, 4, 1});
  std::vector<float> data = iota(42);
  initTensorData(m, data.data(), 42 * 4);
  CHECK(static_cast<float*>(m->host_data)[41] == 41.f);
  CHECK(errorOf([&] { initTensorData(m, data.data(), 40); }) ==
        "initTensorData: got 40 bytes for a tensor of shape 6x7x1x1 (168 "
        "bytes)");
  CHECK(errorOf([] { create4DTensor(0, nhwc, 1, 1, 1, 1); }) ==
        "create4DTensor: only the NCHW data format (0) is supported, got 1");
  freeTensor(t);
  freeTensor(m);
  freeTensor(c);
}

TEST_CASE("TensorApi: readTrainedWeights reads raw float32 and rejects a "
          "file of the wrong size") {
  TempDir dir;
  std::string path = dir.file("conv2d_1_w.bin");
  writeFile(path, iota(24, 1));
  Tensor* t = readTrainedWeights(path.c_str(), 0, 2, 3, 2, 2);
  CHECK(hpvm::rt::shapeOf(t) == hpvm::rt::Shape{2, 3, 2, 2});
  CHECK(static_cast<float*>(t->host_data)[0] == 1.f);
  CHECK(static_cast<float*>(t->host_data)[23] == 24.f);
  CHECK(errorOf([&] { readTrainedWeights(path.c_str(), 0, 2, 3, 3, 3); }) ==
        "weight file '" + path +
            "' has 96 bytes; expected 216 bytes (2x3x3x3 float32)");
  std::string missing = dir.file("missing.bin");
  CHECK(errorOf([&] { readTrainedWeights(missing.c_str(), 0, 1, 1, 1, 1); }) ==
        "cannot open weight file '" + missing + "': No such file or directory");
  freeTensor(t);
}

TEST_CASE("TensorApi: readInputBatch reads a slice and reports a short "
          "dataset") {
  TempDir dir;
  std::string path = dir.file("test_input.bin");
  writeFile(path, iota(5 * 2 * 2 * 2)); // 5 images of 2x2x2.
  Tensor* t = readInputBatch(path.c_str(), 0, 3, 5, 2, 2, 2);
  CHECK(hpvm::rt::shapeOf(t) == hpvm::rt::Shape{2, 2, 2, 2});
  CHECK(static_cast<float*>(t->host_data)[0] == 24.f);
  CHECK(static_cast<float*>(t->host_data)[15] == 39.f);
  CHECK(errorOf([&] { readInputBatch(path.c_str(), 0, 4, 6, 2, 2, 2); }) ==
        "dataset '" + path +
            "' has 160 bytes (5 images of 2x2x2 float32); images [4, 6) "
            "need 192 bytes");
  CHECK(errorOf([&] { readInputBatch(path.c_str(), 0, 3, 3, 2, 2, 2); }) ==
        "readInputBatch: bad image range [3, 3) of dataset '" + path + "'");
  freeTensor(t);
}

TEST_CASE("TensorApi: label readers and accuracy as HPVM computes it") {
  TempDir dir;
  std::string labels = dir.file("test_labels.bin");
  writeFile(labels, std::vector<int32_t>{2, 0, 1, 1});
  uint32_t* all = readLabels3(labels.c_str(), 4);
  CHECK(all[0] == 2);
  CHECK(all[3] == 1);
  uint32_t* part = readLabelsBatch3(labels.c_str(), 1, 3);
  CHECK(part[0] == 0);
  CHECK(part[1] == 1);
  CHECK(errorOf([&] { readLabelsBatch3(labels.c_str(), 2, 5); }) ==
        "labels file '" + labels +
            "' has 16 bytes (4 labels); labels [2, 5) need 20 bytes");

  // Scores for 4 images x 3 classes; image 3 ties classes 1 and 2 (the
  // lower index wins, as in HPVM).
  auto* result = static_cast<Tensor*>(create4DTensor(0, nchw, 4, 3, 1, 1));
  std::vector<float> scores = {0.1f, 0.2f, 0.7f, 0.5f, 0.4f, 0.1f,
                               0.3f, 0.3f, 0.4f, 0.2f, 0.4f, 0.4f};
  initTensorData(result, scores.data(), scores.size() * 4);
  char cwd[4096];
  REQUIRE(getcwd(cwd, sizeof cwd));
  REQUIRE(chdir(dir.path.c_str()) == 0);
  float accuracy = computeAccuracy3(all, result);
  std::string written = readText("final_accuracy");
  dumpFinalAccuracy(12.5f);
  std::string dumped = readText("final_accuracy");
  REQUIRE(chdir(cwd) == 0);
  CHECK(accuracy == 75.f);
  CHECK(written == "75.000000");
  CHECK(dumped == "12.500000");

  std::vector<uint8_t> small = {2, 0, 0, 2};
  CHECK(computeTop5Accuracy(small.data(), 4, result, 3) == 100.f);
  std::vector<uint32_t> bad = {0, 3, 0, 0};
  CHECK(errorOf([&] { computeAccuracy3(bad.data(), result); }) ==
        "label 3 of image 1 is out of range for 3 classes");
  free(all);
  free(part);
  freeTensor(result);
}

TEST_CASE("TensorApi: freeBatchMemory frees batch tensors and keeps "
          "weights") {
  void* weight = create4DTensor(0, nchw, 1, 1, 1, 4);
  startMemTracking();
  void* batch = create4DTensor(0, nchw, 1, 1, 1, 4);
  void* sum = tensorAdd(batch, weight);
  CHECK(sum == batch);
  void* pooled = tensorPooling(batch, 0, 1, 2, 0, 0, 1, 2);
  CHECK(static_cast<Tensor*>(pooled)->num_elems == 2);
  freeBatchMemory();
  // The weight is still usable; new batch tensors work as before.
  void* next = create4DTensor(0, nchw, 1, 1, 1, 4);
  CHECK(tensorAdd(next, weight) == next);
  freeBatchMemory();
  CHECK(static_cast<Tensor*>(weight)->num_elems == 4);
  freeTensor(weight);
}

TEST_CASE("TensorApi: HPVM's output utilities write exact bytes") {
  TempDir dir;
  void* t = create4DTensor(0, nchw, 1, 2, 1, 2);
  fillTensorWithVal(t, 2.5f);
  std::string path = dir.file("out.bin");
  dumpOutput(t, path.c_str());
  std::string bytes = readText(path);
  REQUIRE(bytes.size() == 16);
  float first;
  std::memcpy(&first, bytes.data() + 12, 4);
  CHECK(first == 2.5f);
  fillTensorWithOnes(t);
  CHECK(static_cast<float*>(static_cast<Tensor*>(t)->host_data)[3] == 1.f);
  char cwd[4096];
  REQUIRE(getcwd(cwd, sizeof cwd));
  REQUIRE(chdir(dir.path.c_str()) == 0);
  dumpFinalAccuracy(50.f);
  dumpFinalAccuracy(75.25f);
  dumpExecutionAccuracies();
  std::string runs = readText("run_accuracies.txt");
  REQUIRE(chdir(cwd) == 0);
  // Earlier tests may have recorded accuracies too; ours come last.
  CHECK(runs.size() >= 20);
  CHECK(runs.substr(runs.size() - 20) == "50.000000\n75.250000\n");
  freeTensor(t);
}
