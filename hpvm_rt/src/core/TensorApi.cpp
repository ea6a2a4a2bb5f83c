// TensorApi.cpp - HPVM's tensor C API: tensor creation and freeing, batch
// memory tracking, weight/dataset/label readers, accuracy functions, runtime
// initialisation.
#include "Core.h"
#include "base/Errors.h"
#include "core/Top1.h"
#include "kernels/Kernels.h"
#include "tensorUtils.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <unordered_set>
#include <vector>

#include <sys/stat.h>

namespace hpvm::rt {

namespace {

/// Batch memory tracking (startMemTracking / freeBatchMemory), and every
/// live tensor of the public API (freed by llvm_hpvm_cleanupTensorRt: the
/// program's weights, and whatever an error left behind mid-batch).
struct Tracking {
  bool on = false;
  std::unordered_set<Tensor*> tensors;
  std::unordered_set<Tensor*> live;
};

Tracking& tracking() {
  static Tracking t;
  return t;
}

/// Reports an error that escaped the program (a UserError thrown by the C
/// API or out of a launch in a program that does not catch it) through
/// reportError(): "hpvm_rt: error: <message>" and exit status 1 for a user
/// error, an internal-error report and abort for anything else.
[[noreturn]] void onTerminate() {
  if (std::exception_ptr e = std::current_exception())
    std::exit(reportError("hpvm_rt", e));
  std::abort();
}

Tensor* asTensor(void* t, const char* api) {
  if (!t)
    throw UserError(std::string(api) + ": tensor argument is NULL");
  return static_cast<Tensor*>(t);
}

/// Size of \p path in bytes; throws UserError naming it and \p what.
int64_t fileSize(const char* path, const char* what) {
  struct stat st;
  if (!path || stat(path, &st) != 0)
    throw UserError(std::string("cannot open ") + what + " '" +
                    (path ? path : "") + "': " + std::strerror(errno));
  return static_cast<int64_t>(st.st_size);
}

/// Reads \p bytes bytes at \p offset of \p path into \p dest.
void readBytes(const char* path, const char* what, int64_t offset,
               int64_t bytes, void* dest) {
  std::FILE* f = std::fopen(path, "rb");
  if (!f)
    throw UserError(std::string("cannot open ") + what + " '" + path +
                    "': " + std::strerror(errno));
  bool ok = std::fseek(f, static_cast<long>(offset), SEEK_SET) == 0 &&
            std::fread(dest, 1, static_cast<size_t>(bytes), f) ==
                static_cast<size_t>(bytes);
  std::fclose(f);
  if (!ok)
    throw UserError(std::string("cannot read ") + std::to_string(bytes) +
                    " bytes at offset " + std::to_string(offset) + " of " +
                    what + " '" + path + "'");
}

/// Writes \p text to \p path atomically (temporary file + rename).
void writeFileAtomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) {
      reportWarning("hpvm_rt", "cannot write '" + tmp + "'");
      return;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    reportWarning("hpvm_rt", "cannot rename '" + tmp + "' to '" + path +
                                 "': " + std::strerror(errno));
}

/// Accuracies given to dumpFinalAccuracy, for dumpExecutionAccuracies.
std::vector<float>& runAccuracies() {
  static std::vector<float> all;
  return all;
}

std::string fixed6(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%f", v);
  return buf;
}

/// Host data of a result tensor viewed as N x C.
const float* resultRows(void* result, const char* api, int64_t& n, int64_t& c) {
  Tensor* t = asTensor(result, api);
  ensureHost(t);
  Shape s = shapeOf(t);
  n = s[0];
  c = s[1] * s[2] * s[3];
  return static_cast<const float*>(t->host_data);
}

} // namespace

Shape shapeOf(const Tensor* t) {
  Shape s{1, 1, 1, 1};
  int n = t->dims.num_dims < 4 ? t->dims.num_dims : 4;
  for (int i = 0; i < n; ++i)
    s[i] = static_cast<int64_t>(t->dims.dim_sizes[i]);
  return s;
}

std::string shapeText(const Shape& s) {
  return std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" +
         std::to_string(s[2]) + "x" + std::to_string(s[3]);
}

Tensor* newTensor(const Shape& s, int numDims, bool tracked) {
  auto* t = static_cast<Tensor*>(std::calloc(1, sizeof(Tensor)));
  // Four extents are always stored (trailing ones 1) so that kernels may
  // read dims 0..3 of 2-D and 3-D tensors.
  t->dims.dim_sizes = new size_t[4];
  for (int i = 0; i < 4; ++i)
    t->dims.dim_sizes[i] = static_cast<size_t>(s[i]);
  t->dims.num_dims = numDims;
  t->data_type = float_type;
  t->cur_type = float_type;
  t->data_format = nchw;
  t->data_placement = HOST;
  t->num_elems = static_cast<size_t>(numElements(s));
  t->size_in_bytes = t->num_elems * sizeof(float);
  if (tracked) {
    tracking().live.insert(t);
    if (tracking().on)
      tracking().tensors.insert(t);
  }
  return t;
}

void deleteTensor(Tensor* t) {
  if (!t)
    return;
  tracking().live.erase(t);
  releaseStorage(t);
  delete[] t->dims.dim_sizes;
  std::free(t);
}

const KnobSpec& exactKnob() {
  static const KnobSpec knob{};
  return knob;
}

} // namespace hpvm::rt

using namespace hpvm::rt;

namespace {

void* createPublic(const Shape& s, int numDims) {
  for (int64_t d : s)
    if (d <= 0)
      throw UserError("cannot create a tensor of shape " + shapeText(s) +
                      ": every extent must be positive");
  Tensor* t = newTensor(s, numDims, /*tracked=*/true);
  allocHost(t);
  return t;
}

} // namespace

extern "C" {

void llvm_hpvm_initTensorRt(int) {
  static bool done = false;
  if (done)
    return;
  done = true;
  std::set_terminate(onTerminate);
  if (const char* env = std::getenv("HPVM_NUM_THREADS")) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (end == env || *end || n < 0)
      throw UserError(std::string("HPVM_NUM_THREADS='") + env +
                      "' is not a thread count (a number >= 0; 0 = all cores)");
    setNumThreads(static_cast<int>(n));
  }
}

void llvm_hpvm_cleanupTensorRt(void) {
  std::fflush(stdout);
  std::unordered_set<Tensor*> live = std::move(tracking().live);
  tracking() = Tracking();
  for (Tensor* t : live)
    deleteTensor(t);
}

void llvm_hpvm_initApproxhpvmRt(int gpuId) { llvm_hpvm_initTensorRt(gpuId); }

void llvm_hpvm_cleanupApproxhpvmRt(void) { llvm_hpvm_cleanupTensorRt(); }

void* create4DTensor(int, int data_format, size_t n, size_t c, size_t h,
                     size_t w) {
  if (data_format != nchw)
    throw UserError(
        "create4DTensor: only the NCHW data format (0) is supported, got " +
        std::to_string(data_format));
  return createPublic({static_cast<int64_t>(n), static_cast<int64_t>(c),
                       static_cast<int64_t>(h), static_cast<int64_t>(w)},
                      4);
}

void* create3DTensor(int, size_t d1, size_t d2, size_t d3) {
  return createPublic({static_cast<int64_t>(d1), static_cast<int64_t>(d2),
                       static_cast<int64_t>(d3), 1},
                      3);
}

void* create2DTensor(int, size_t d1, size_t d2) {
  return createPublic(
      {static_cast<int64_t>(d1), static_cast<int64_t>(d2), 1, 1}, 2);
}

void initTensorData(void* tensor, void* data, size_t bytes) {
  Tensor* t = asTensor(tensor, "initTensorData");
  if (bytes != t->size_in_bytes)
    throw UserError("initTensorData: got " + std::to_string(bytes) +
                    " bytes for a tensor of shape " + shapeText(shapeOf(t)) +
                    " (" + std::to_string(t->size_in_bytes) + " bytes)");
  allocHost(t);
  std::memcpy(t->host_data, data, bytes);
  hostModified(t);
}

void freeTensor(void* tensor) {
  if (!tensor)
    return;
  auto* t = static_cast<Tensor*>(tensor);
  tracking().tensors.erase(t);
  deleteTensor(t);
}

void hpvm_request_tensor(void* tensor, int) {
  ensureHost(asTensor(tensor, "hpvm_request_tensor"));
}

void startMemTracking(void) {
  tracking().tensors.clear();
  tracking().on = true;
}

void freeBatchMemory(void) {
  std::unordered_set<Tensor*> batch = std::move(tracking().tensors);
  tracking().tensors.clear();
  for (Tensor* t : batch)
    deleteTensor(t);
}

struct Tensor* readTrainedWeights(const char* file, int, long d1, long d2,
                                  long d3, long d4) {
  Shape s{d1, d2, d3, d4};
  int64_t want = numElements(s) * 4;
  int64_t have = fileSize(file, "weight file");
  if (have != want)
    throw UserError("weight file '" + std::string(file) + "' has " +
                    std::to_string(have) + " bytes; expected " +
                    std::to_string(want) + " bytes (" + shapeText(s) +
                    " float32)");
  auto* t = static_cast<Tensor*>(createPublic(s, 4));
  readBytes(file, "weight file", 0, want, t->host_data);
  hostModified(t);
  return t;
}

struct Tensor* readInputBatch(const char* file, long, long start, long end,
                              long d2, long d3, long d4) {
  Shape image{1, d2, d3, d4};
  if (start < 0 || end <= start)
    throw UserError("readInputBatch: bad image range [" +
                    std::to_string(start) + ", " + std::to_string(end) +
                    ") of dataset '" + file + "'");
  int64_t imageBytes = numElements(image) * 4;
  int64_t have = fileSize(file, "dataset");
  if (have < end * imageBytes)
    throw UserError("dataset '" + std::string(file) + "' has " +
                    std::to_string(have) + " bytes (" +
                    std::to_string(have / imageBytes) + " images of " +
                    std::to_string(d2) + "x" + std::to_string(d3) + "x" +
                    std::to_string(d4) + " float32); images [" +
                    std::to_string(start) + ", " + std::to_string(end) +
                    ") need " + std::to_string(end * imageBytes) + " bytes");
  auto* t = static_cast<Tensor*>(createPublic({end - start, d2, d3, d4}, 4));
  readBytes(file, "dataset", start * imageBytes, (end - start) * imageBytes,
            t->host_data);
  hostModified(t);
  return t;
}

uint8_t* readLabels(const char* file, int n) {
  int64_t have = fileSize(file, "labels file");
  if (n < 0 || have < n)
    throw UserError("labels file '" + std::string(file) + "' has " +
                    std::to_string(have) + " bytes; " + std::to_string(n) +
                    " one-byte labels were asked for");
  auto* labels = static_cast<uint8_t*>(std::malloc(n > 0 ? n : 1));
  readBytes(file, "labels file", 0, n, labels);
  return labels;
}

uint32_t* readLabelsBatch3(const char* file, int start, int end) {
  if (start < 0 || end < start)
    throw UserError("bad label range [" + std::to_string(start) + ", " +
                    std::to_string(end) + ") of labels file '" + file + "'");
  int64_t have = fileSize(file, "labels file");
  if (have < int64_t(end) * 4)
    throw UserError("labels file '" + std::string(file) + "' has " +
                    std::to_string(have) + " bytes (" +
                    std::to_string(have / 4) + " labels); labels [" +
                    std::to_string(start) + ", " + std::to_string(end) +
                    ") need " + std::to_string(int64_t(end) * 4) + " bytes");
  int64_t n = end - start;
  auto* labels = static_cast<uint32_t*>(std::malloc(n > 0 ? n * 4 : 4));
  readBytes(file, "labels file", int64_t(start) * 4, n * 4, labels);
  return labels;
}

uint32_t* readLabels3(const char* file, int n) {
  return readLabelsBatch3(file, 0, n);
}

float computeAccuracy3(uint32_t* labels, void* result) {
  int64_t n = 0, c = 0;
  const float* data = resultRows(result, "computeAccuracy3", n, c);
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (labels[i] >= static_cast<uint64_t>(c))
      throw UserError("label " + std::to_string(labels[i]) + " of image " +
                      std::to_string(i) + " is out of range for " +
                      std::to_string(c) + " classes");
    correct += top1(data + i * c, c) == static_cast<int64_t>(labels[i]);
  }
  float accuracy = n ? 100.0f * float(correct) / float(n) : 0.0f;
  std::printf("batch_dim = %lld, num_classes = %lld\n",
              static_cast<long long>(n), static_cast<long long>(c));
  std::printf("****** Accuracy = %f \n\n", accuracy);
  writeFileAtomically("final_accuracy", fixed6(accuracy));
  return accuracy;
}

float computeTop5Accuracy(uint8_t* labels, int num_labels, void* result,
                          unsigned num_classes) {
  int64_t n = 0, c = 0;
  const float* data = resultRows(result, "computeTop5Accuracy", n, c);
  if (num_classes != c)
    throw UserError("computeTop5Accuracy: result has " + std::to_string(c) +
                    " classes, " + std::to_string(num_classes) + " were given");
  if (num_labels > n)
    throw UserError("computeTop5Accuracy: " + std::to_string(num_labels) +
                    " labels for a result of " + std::to_string(n) + " images");
  int64_t correct = 0;
  for (int i = 0; i < num_labels; ++i) {
    if (labels[i] >= c)
      throw UserError("label " + std::to_string(labels[i]) + " of image " +
                      std::to_string(i) + " is out of range for " +
                      std::to_string(c) + " classes");
    const float* row = data + int64_t(i) * c;
    // The label is in the top five if fewer than five classes beat it
    // (ties rank the lower index first).
    int64_t better = 0;
    for (int64_t j = 0; j < c; ++j)
      better += row[j] > row[labels[i]] ||
                (row[j] == row[labels[i]] && j < int64_t(labels[i]));
    correct += better < 5;
  }
  float accuracy =
      num_labels ? 100.0f * float(correct) / float(num_labels) : 0.0f;
  std::printf("****** Top-5 Accuracy = %f \n\n", accuracy);
  return accuracy;
}

void dumpFinalAccuracy(float accuracy) {
  std::printf("**** Final Accuracy = %f \n", accuracy);
  writeFileAtomically("final_accuracy", fixed6(accuracy));
  runAccuracies().push_back(accuracy);
}

void dumpExecutionAccuracies(void) {
  std::string text;
  for (float a : runAccuracies())
    text += fixed6(a) + "\n";
  writeFileAtomically("run_accuracies.txt", text);
}

void dumpOutput(void* tensor, const char* file) {
  Tensor* t = asTensor(tensor, "dumpOutput");
  ensureHost(t);
  writeFileAtomically(file, std::string(static_cast<const char*>(t->host_data),
                                        t->size_in_bytes));
}

void printTensorDims(void* tensor) {
  Tensor* t = asTensor(tensor, "printTensorDims");
  std::printf("Num_elems = %zu\n", t->num_elems);
  for (int i = 0; i < t->dims.num_dims; ++i)
    std::printf("dim[%d] = %zu\n", i, t->dims.dim_sizes[i]);
}

void printTensorValues(void* tensor) {
  Tensor* t = asTensor(tensor, "printTensorValues");
  ensureHost(t);
  const auto* p = static_cast<const float*>(t->host_data);
  for (size_t i = 0; i < t->num_elems; ++i)
    std::printf("%f,", p[i]);
  std::printf("\n");
}

void fillTensorWithVal(void* tensor, float value) {
  Tensor* t = asTensor(tensor, "fillTensorWithVal");
  allocHost(t);
  auto* p = static_cast<float*>(t->host_data);
  for (size_t i = 0; i < t->num_elems; ++i)
    p[i] = value;
  hostModified(t);
}

void fillTensorWithOnes(void* tensor) { fillTensorWithVal(tensor, 1.0f); }

} // extern "C"
