// OutputBufferTest.cpp - root outputs computed straight into the caller's
// buffers (LaunchSettings::setOutputBuffers(), what the program library's
// hpvm_rt_run does for torch2hpvm's modules): the same values as without,
// in the caller's memory, whole batches and sub-batches; and a buffer that
// is misaligned or of another size is left alone.
#include "GraphTestUtil.h"
#include "core/Core.h"
#include "core/Launch.h"
#include "hpvm.h"
#include "tensor_runtime.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace hpvm::rt::test;

// x: N x 4 x 8 x 8; a convolution with a broadcast bias and ReLU (oneDNN
// computes it in a blocked layout, reordered into the output), pooled.
void convLeaf(void* x, size_t) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  void* w = randomTensor({16, 4, 3, 3}, 11, -0.3f, 0.3f);
  void* b = randomTensor({1, 16, 1, 1}, 12, -0.2f, 0.2f);
  void* y = __hpvm__tensor_relu(
      __hpvm__tensor_add(__hpvm__tensor_convolution(x, w, 1, 1, 1, 1), b));
  __hpvm__return(2, __hpvm__tensor_pool_max(y, 2, 2, 0, 0, 2, 2), (size_t)0);
}

/// Launches convLeaf on \p x; returns the output tensor (the caller frees
/// it).
Tensor* launch(void* x) {
  OneIn args{x, 0, {nullptr, 0}};
  __hpvm__wait(__hpvm__launch(0, rootOf<convLeaf>, (void*)&args));
  return static_cast<Tensor*>(args.r.tensor);
}

/// 64-byte aligned floats, freed at the end of the scope.
struct AlignedFloats {
  explicit AlignedFloats(size_t n)
      : data(static_cast<float*>(std::aligned_alloc(64, (n + 16) * 4))) {}
  ~AlignedFloats() { std::free(data); }
  float* data;
};

/// HPVM_RT_SUB_BATCH set for a scope.
struct SubBatchScope {
  explicit SubBatchScope(const char* v) { setenv("HPVM_RT_SUB_BATCH", v, 1); }
  ~SubBatchScope() { unsetenv("HPVM_RT_SUB_BATCH"); }
};

} // namespace

TEST_CASE("OutputBuffers: outputs are computed into the caller's buffer") {
  for (const char* sub : {"0", "3"}) { // whole batch; 3 + 3 + 1 images
    CAPTURE(sub);
    SubBatchScope scope(sub);
    const int64_t n = 7, values = 16 * 4 * 4;
    void* x = randomTensor({n, 4, 8, 8}, 10, -1.f, 1.f);
    hpvm::rt::LaunchSettings settings;
    hpvm::rt::LaunchScope bound(settings);
    Tensor* plain = launch(x);
    const std::vector<float> want = valuesOf(plain);
    freeTensor(plain);

    AlignedFloats buffer(size_t(n * values));
    std::memset(buffer.data, 0xff, size_t(n * values) * 4); // NaNs
    const int64_t elems = n * values;
    settings.setOutputBuffers(&buffer.data, &elems, 1);
    Tensor* out = launch(x);
    hpvm_request_tensor(out, 0);
    CHECK(out->host_data == buffer.data);
    CHECK(std::memcmp(buffer.data, want.data(), want.size() * 4) == 0);
    freeTensor(out); // the buffer is the caller's: not freed
    buffer.data[0] = 1.f;

    // Misaligned, or another size: the output gets a buffer of its own.
    float* shifted = buffer.data + 1;
    settings.setOutputBuffers(&shifted, &elems, 1);
    out = launch(x);
    CHECK(out->host_data != shifted);
    CHECK(valuesOf(out) == want);
    freeTensor(out);
    const int64_t fewer = elems - 1;
    settings.setOutputBuffers(&buffer.data, &fewer, 1);
    out = launch(x);
    CHECK(out->host_data != buffer.data);
    CHECK(valuesOf(out) == want);
    freeTensor(out);
    settings.setOutputBuffers(nullptr, nullptr, 0);
    freeTensor(x);
  }
}
