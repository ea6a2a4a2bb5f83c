// SubBatchTest.cpp - running a launch over sub-batches (core/SubBatch.h):
// a MobileNet-like graph (convolution with a broadcast bias, depthwise
// convolution, residual add, pooling, dense layer, softmax) split into
// slices gives the whole batch's outputs, profile records cover the whole
// batch, the op table's Batch column decides which graphs split, the split
// size follows the cache budget, and one thread takes a batch too large for
// slices image by image unless a layer is batch-bound.
#include "core/SubBatch.h"
#include "GraphTestUtil.h"
#include "core/Core.h"
#include "core/Executor.h"
#include "core/Launch.h"
#include "hpvm.h"
#include "kernels/Primitives.h"
#include "tensor_runtime.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace hpvm::rt::test;

using hpvm::rt::Shape;

// x: N x 8 x 12 x 12; the result N x 10 x 1 x 1 (class probabilities).
void blockLeaf(void* x, size_t) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  void* w1 = randomTensor({16, 8, 3, 3}, 1, -0.3f, 0.3f);
  void* b1 = randomTensor({1, 16, 1, 1}, 2, -0.2f, 0.2f);
  void* dw = randomTensor({16, 1, 3, 3}, 3, -0.5f, 0.5f);
  void* w2 = randomTensor({16, 16, 1, 1}, 4, -0.3f, 0.3f);
  void* fc = randomTensor({1, 1, 16 * 6 * 6, 10}, 5, -0.1f, 0.1f);
  void* a = __hpvm__tensor_clipped_relu(
      __hpvm__tensor_add(__hpvm__tensor_convolution(x, w1, 1, 1, 1, 1), b1),
      0.f, 6.f);
  void* d = __hpvm__tensor_relu(
      __hpvm__tensor_group_convolution(a, dw, 1, 1, 1, 1, 1, 16));
  void* r = __hpvm__tensor_add(__hpvm__tensor_convolution(d, w2, 0, 0, 1, 1),
                               a); // residual
  void* p = __hpvm__tensor_pool_mean(r, 2, 2, 0, 0, 2, 2);
  void* out = __hpvm__tensor_softmax(__hpvm__tensor_mul(p, fc));
  __hpvm__return(2, out, (size_t)0);
}

// x: N x 8 x 6 x 6; a ConvNeXt-like block (layer norm over each pixel's
// channels, GELU) and, when \p Attend, a self-attention over the 36 tokens
// of each image (Ops.def Batch Whole: the batch is never split).
template <bool Attend> void tokenLeaf(void* x, size_t) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  void* w = randomTensor({24, 8, 3, 3}, 6, -0.3f, 0.3f);
  void* scale = randomTensor({1, 24, 1, 1}, 7, 0.5f, 1.5f);
  void* bias = randomTensor({1, 24, 1, 1}, 8, -0.2f, 0.2f);
  void* y = __hpvm__tensor_convolution(x, w, 1, 1, 1, 1);
  y = __hpvm_rt__tensor_gelu(
      __hpvm_rt__tensor_layer_norm(y, scale, bias, 1e-5));
  if (Attend)
    y = __hpvm_rt__tensor_attention(y, 2);
  __hpvm__return(2, y, (size_t)0);
}

// x: N x 2 x 1 x 84; YOLO-like broadcast constants of batch 1 (Ops.def
// Batch Broadcast: shared by every slice): relu(x + anchors), then
// tanh(that * row), anchors 1 x 2 x 1 x 84 and row 1 x 1 x 1 x 84.
void broadcastLeaf(void* x, size_t) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  void* anchors = randomTensor({1, 2, 1, 84}, 70, -1.f, 1.f);
  void* row = randomTensor({1, 1, 1, 84}, 71, -2.f, 2.f);
  void* y = __hpvm__tensor_relu(__hpvm__tensor_add(x, anchors));
  y = __hpvm__tensor_tanh(__hpvm_rt__tensor_multiply(y, row));
  __hpvm__return(2, y, (size_t)0);
}

/// HPVM_RT_SUB_BATCH set for a scope.
class SubBatchEnv {
public:
  explicit SubBatchEnv(const char* value) {
    const char* old = std::getenv("HPVM_RT_SUB_BATCH");
    had_ = old != nullptr;
    saved_ = old ? old : "";
    if (value)
      setenv("HPVM_RT_SUB_BATCH", value, 1);
    else
      unsetenv("HPVM_RT_SUB_BATCH");
  }
  ~SubBatchEnv() {
    if (had_)
      setenv("HPVM_RT_SUB_BATCH", saved_.c_str(), 1);
    else
      unsetenv("HPVM_RT_SUB_BATCH");
  }

private:
  bool had_;
  std::string saved_;
};

template <void (*Leaf)(void*, size_t) = blockLeaf>
std::vector<float> launch(void* x) {
  OneIn args{x, 0, {nullptr, 0}};
  __hpvm__wait(__hpvm__launch(0, rootOf<Leaf>, (void*)&args));
  std::vector<float> out = valuesOf(args.r.tensor);
  freeTensor(args.r.tensor);
  return out;
}

/// The largest |a[i] - b[i]| (a and b of one size).
double maxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, double(std::fabs(a[i] - b[i])));
  return worst;
}

double flopsOf(const hpvm::rt::LaunchSettings& s) {
  double sum = 0;
  for (const hpvm::rt::OpRecord& r : s.results().records)
    sum += r.flops;
  return sum;
}

// x: N x 32 x H x W; a 3x3 convolution of 32 channels (on Winograd's
// algorithm where the CPU has AVX-512) or, when \p Depthwise, a depthwise
// one (never on Winograd), then a ReLU.
template <bool Depthwise> void wideLeaf(void* x, size_t) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  void* w = randomTensor({32, Depthwise ? 1 : 32, 3, 3}, 60, -0.2f, 0.2f);
  void* y = Depthwise
                ? __hpvm__tensor_group_convolution(x, w, 1, 1, 1, 1, 1, 32)
                : __hpvm__tensor_convolution(x, w, 1, 1, 1, 1);
  __hpvm__return(2, __hpvm__tensor_relu(y), (size_t)0);
}

/// The kernels' thread count set for a scope.
class ThreadsScope {
public:
  explicit ThreadsScope(int n) : saved_(hpvm::rt::numThreads()) {
    hpvm::rt::setNumThreads(n);
  }
  ~ThreadsScope() { hpvm::rt::setNumThreads(saved_); }

private:
  int saved_;
};

} // namespace

TEST_CASE("Sub-batches: a batch run in slices gives the whole batch's "
          "outputs and profile") {
  hpvm::rt::LaunchSettings settings;
  hpvm::rt::LaunchScope scope(settings);
  settings.setRecording(true);
  for (const int64_t N : {int64_t(10), int64_t(12)}) {
    INFO("batch " << N);
    void* x = randomTensor({N, 8, 12, 12}, 40 + unsigned(N), -1.f, 1.f);
    std::vector<float> whole;
    double wholeFlops = 0;
    size_t wholeRecords = 0;
    {
      SubBatchEnv env("0");
      whole = launch(x);
      wholeFlops = flopsOf(settings);
      wholeRecords = settings.results().records.size();
    }
    REQUIRE(whole.size() == size_t(N) * 10);
    SubBatchEnv env("4"); // 4 + 4 + 2 images, or 4 + 4 + 4
    const int64_t before = hpvm::rt::plansBuilt();
    for (int round = 0; round < 2; ++round) {
      const std::vector<float> split = launch(x);
      REQUIRE(split.size() == whole.size());
      CHECK(maxAbsDiff(split, whole) <= 1e-6);
      CHECK(settings.results().records.size() == wholeRecords);
      CHECK(flopsOf(settings) == doctest::Approx(wholeFlops).epsilon(1e-9));
    }
    // The slices' plans, built once: 4 images and 2 (the last of 10); at
    // batch 12 the plan of 4 is cached already.
    CHECK(hpvm::rt::plansBuilt() - before == (N == 10 ? 2 : 0));
    freeTensor(x);
  }
}

TEST_CASE("Sub-batches: the op table decides which graphs are split") {
  // Settings of its own: exact everywhere, whatever an earlier test left
  // in the process's unbound settings.
  hpvm::rt::LaunchSettings settings;
  hpvm::rt::LaunchScope scope(settings);
  void* x = randomTensor({10, 8, 6, 6}, 50, -1.f, 1.f);
  std::vector<float> whole, wholeAttend;
  {
    SubBatchEnv env("0");
    whole = launch<tokenLeaf<false>>(x);
    wholeAttend = launch<tokenLeaf<true>>(x);
  }
  SubBatchEnv env("4");
  // Layer norm (Batch Params) splits into 4 + 4 + 2 images.
  int64_t before = hpvm::rt::plansBuilt();
  std::vector<float> split = launch<tokenLeaf<false>>(x);
  CHECK(hpvm::rt::plansBuilt() - before == 2);
  REQUIRE(split.size() == whole.size());
  CHECK(maxAbsDiff(split, whole) <= 1e-6);
  // Attention (Batch Whole) keeps the batch whole: no new plan.
  before = hpvm::rt::plansBuilt();
  split = launch<tokenLeaf<true>>(x);
  CHECK(hpvm::rt::plansBuilt() - before == 0);
  CHECK(split == wholeAttend);
  freeTensor(x);
}

TEST_CASE("Sub-batches: the split follows the cache budget") {
  SubBatchEnv env(nullptr);
  hpvm::rt::BatchFacts f;
  f.separable = true;
  f.inputs = {0};
  const int64_t budget = hpvm::rt::subBatchBudgetBytes();
  f.bytesPerImage = budget / 64;
  CHECK(hpvm::rt::subBatchSize(f, 64, 1) == 64); // fits
  f.bytesPerImage = budget / 16;
  CHECK(hpvm::rt::subBatchSize(f, 64, 1) == 16);
  CHECK(hpvm::rt::subBatchSize(f, 64, 2) == 32); // twice the cache
  CHECK(hpvm::rt::subBatchSize(f, 50, 1) == 13); // equal slices: 13 x 3 + 11
  // kMinSubBatch images per thread just fit: slices of that many.
  f.bytesPerImage = budget / hpvm::rt::kMinSubBatch;
  CHECK(hpvm::rt::subBatchSize(f, 64, 1) == hpvm::rt::kMinSubBatch);
  CHECK(hpvm::rt::subBatchSize(f, 64, 2) == 2 * hpvm::rt::kMinSubBatch);
  CHECK(hpvm::rt::subBatchSize(f, 4, 1) == 4);
  // They overflow it (as an image that alone overflows it): on one thread
  // image by image, on more no slices; a batch-bound layer (Winograd)
  // keeps the batch whole on one thread too.
  f.bytesPerImage = budget / hpvm::rt::kMinSubBatch + 1;
  CHECK(hpvm::rt::subBatchSize(f, 64, 1) == 1);
  CHECK(hpvm::rt::subBatchSize(f, 64, 2) == 64);
  f.bytesPerImage = budget * 4;
  CHECK(hpvm::rt::subBatchSize(f, 64, 1) == 1);
  CHECK(hpvm::rt::subBatchSize(f, 16, 2) == 16);
  CHECK(hpvm::rt::subBatchSize(f, 4, 1) == 4);
  f.batchBound = true;
  CHECK(hpvm::rt::subBatchSize(f, 64, 1) == 64);
  f.bytesPerImage = budget / 16;
  CHECK(hpvm::rt::subBatchSize(f, 64, 1) == 16); // slices that fit: as before
  f.batchBound = false;
  f.bytesPerImage = budget * 4;
  f.separable = false;
  CHECK(hpvm::rt::subBatchSize(f, 64, 1) == 64);
  f.separable = true;
  SubBatchEnv off("0");
  CHECK(hpvm::rt::subBatchSize(f, 64, 1) == 64);
  SubBatchEnv fixed("8");
  CHECK(hpvm::rt::subBatchSize(f, 64, 1) == 8);
}

TEST_CASE("Sub-batches: one thread takes a batch too large for slices image "
          "by image, unless a layer runs faster on the whole batch") {
  hpvm::rt::LaunchSettings settings;
  hpvm::rt::LaunchScope scope(settings);
  SubBatchEnv env(nullptr);
  ThreadsScope one(1);
  // Input plus output of an image (2 x 32 x H x H floats) over a quarter
  // of the budget: not even kMinSubBatch images fit it.
  const int64_t budget = hpvm::rt::subBatchBudgetBytes();
  int64_t H = 16;
  while (2 * 32 * H * H * 4 <= budget / hpvm::rt::kMinSubBatch)
    H += 16;
  const int64_t N = 6;
  void* x = randomTensor({N, 32, H, H}, 61, -1.f, 1.f);
  // The depthwise graph is split: the whole batch's plan, then one image's.
  int64_t before = hpvm::rt::plansBuilt();
  const std::vector<float> depthwise = launch<wideLeaf<true>>(x);
  CHECK(hpvm::rt::plansBuilt() - before == 2);
  // The full convolution stays whole where it runs on Winograd.
  const bool winograd = hpvm::rt::kern::winogradApplies(
      hpvm::rt::ConvArgs{1, 1, 1, 1, 1}, {N, 32, H, H}, {32, 32, 3, 3},
      {N, 32, H, H});
  before = hpvm::rt::plansBuilt();
  const std::vector<float> full = launch<wideLeaf<false>>(x);
  CHECK(hpvm::rt::plansBuilt() - before == (winograd ? 1 : 2));
  // The same outputs as unsplit.
  SubBatchEnv off("0");
  const std::vector<float> depthwiseWhole = launch<wideLeaf<true>>(x);
  REQUIRE(depthwiseWhole.size() == depthwise.size());
  CHECK(maxAbsDiff(depthwise, depthwiseWhole) <= 1e-6);
  CHECK(full.size() == size_t(N * 32 * H * H));
  freeTensor(x);
}

TEST_CASE("Sub-batches: batch-1 constants broadcast by add and multiply are "
          "shared by every slice") {
  hpvm::rt::LaunchSettings settings;
  hpvm::rt::LaunchScope scope(settings);
  const int64_t N = 10;
  void* x = randomTensor({N, 2, 1, 84}, 72, -1.f, 1.f);
  // The reference: the leaf's constants again, a loop over every value.
  const std::vector<float> xv = valuesOf(x);
  void* anchors = randomTensor({1, 2, 1, 84}, 70, -1.f, 1.f);
  void* row = randomTensor({1, 1, 1, 84}, 71, -2.f, 2.f);
  const std::vector<float> av = valuesOf(anchors), rv = valuesOf(row);
  std::vector<float> want(xv.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const size_t w = i % 84, c = i / 84 % 2;
    want[i] = std::tanh(std::max(0.f, xv[i] + av[c * 84 + w]) * rv[w]);
  }
  std::vector<float> whole;
  {
    SubBatchEnv env("0");
    whole = launch<broadcastLeaf>(x);
  }
  REQUIRE(whole.size() == want.size());
  CHECK(maxAbsDiff(whole, want) <= 1e-6);
  SubBatchEnv env("4"); // 4 + 4 + 2 images
  const int64_t before = hpvm::rt::plansBuilt();
  const std::vector<float> split = launch<broadcastLeaf>(x);
  CHECK(hpvm::rt::plansBuilt() - before == 2);
  REQUIRE(split.size() == whole.size());
  CHECK(maxAbsDiff(split, whole) <= 1e-6);
  freeTensor(anchors);
  freeTensor(row);
  freeTensor(x);
}
