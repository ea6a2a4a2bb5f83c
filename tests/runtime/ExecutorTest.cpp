// ExecutorTest.cpp - small HPVM-C dataflow graphs through hpvm.h: values
// flowing along edges and bindings, fan-out, nested internal nodes, the
// launch struct layout, plan reuse across launches and eager calls.
#include "core/Executor.h"
#include "GraphTestUtil.h"
#include "core/Core.h"
#include "hpvm.h"
#include "kernels/Kernels.h"
#include "tensor_runtime.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace {

using namespace hpvm::rt::test;

using hpvm::rt::Shape;

void* makeTensor(const Shape& s, const std::vector<float>& values) {
  void* t = create4DTensor(0, nchw, s[0], s[1], s[2], s[3]);
  auto* tensor = static_cast<Tensor*>(t);
  REQUIRE(tensor->num_elems == values.size());
  std::memcpy(tensor->host_data, values.data(), values.size() * 4);
  hpvm::rt::hostModified(tensor);
  return t;
}

/// Copies a (packed) field so that doctest can bind it.
template <class T> T val(T v) { return v; }

void addNode(void* a, size_t, void* b, size_t) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, a, b, 0);
  void* r = __hpvm__tensor_add(a, b);
  __hpvm__return(2, r, (size_t)0);
}

void reluNode(void* a, size_t) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, a, 0);
  void* r = __hpvm__tensor_relu(a);
  __hpvm__return(2, r, (size_t)0);
}

void tanhNode(void* a, size_t) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, a, 0);
  void* r = __hpvm__tensor_tanh(a);
  __hpvm__return(2, r, (size_t)0);
}

// x + b, then relu: two nodes and an edge.
void addReluRoot(void* x, size_t, void* b, size_t) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, x, b, 0);
  void* add = __hpvm__createNodeND(0, addNode);
  __hpvm__bindIn(add, 0, 0, 0);
  __hpvm__bindIn(add, 1, 1, 0);
  __hpvm__bindIn(add, 2, 2, 0);
  __hpvm__bindIn(add, 3, 3, 0);
  void* relu = __hpvm__createNodeND(0, reluNode);
  __hpvm__edge(add, relu, 1, 0, 0, 0);
  __hpvm__edge(add, relu, 1, 1, 1, 0);
  __hpvm__bindOut(relu, 0, 0, 0);
  __hpvm__bindOut(relu, 1, 1, 0);
}

struct __attribute__((__packed__)) TwoIn {
  void* x;
  size_t xBytes;
  void* b;
  size_t bBytes;
  struct {
    void* tensor;
    size_t bytes;
  } r;
};

// The same computation one level down: root -> inner -> (add, relu).
void innerNode(void*, size_t, void*, size_t) {
  __hpvm__hint(hpvm::CPU_TARGET);
  void* add = __hpvm__createNodeND(0, addNode);
  __hpvm__bindIn(add, 2, 0, 0);
  __hpvm__bindIn(add, 3, 1, 0);
  __hpvm__bindIn(add, 0, 2, 0);
  __hpvm__bindIn(add, 1, 3, 0);
  void* relu = __hpvm__createNodeND(0, reluNode);
  __hpvm__edge(add, relu, 1, 0, 0, 0);
  __hpvm__edge(add, relu, 1, 1, 1, 0);
  __hpvm__bindOut(relu, 0, 0, 0);
  __hpvm__bindOut(relu, 1, 1, 0);
}

// Parameters in the opposite order (b first), re-ordered by the bindIns.
void nestedRoot(void*, size_t, void*, size_t) {
  __hpvm__hint(hpvm::CPU_TARGET);
  void* inner = __hpvm__createNodeND(0, innerNode);
  for (unsigned i = 0; i < 4; ++i)
    __hpvm__bindIn(inner, i, i, 0);
  __hpvm__bindOut(inner, 0, 0, 0);
  __hpvm__bindOut(inner, 1, 1, 0);
}

// t = tanh(x); out = relu(t) + (t + t): one output read by three ops.
void fanOutRoot(void*, size_t) {
  __hpvm__hint(hpvm::CPU_TARGET);
  void* t = __hpvm__createNodeND(0, tanhNode);
  __hpvm__bindIn(t, 0, 0, 0);
  __hpvm__bindIn(t, 1, 1, 0);
  void* relu = __hpvm__createNodeND(0, reluNode);
  __hpvm__edge(t, relu, 1, 0, 0, 0);
  __hpvm__edge(t, relu, 1, 1, 1, 0);
  void* twice = __hpvm__createNodeND(0, addNode);
  __hpvm__edge(t, twice, 1, 0, 0, 0);
  __hpvm__edge(t, twice, 1, 1, 1, 0);
  __hpvm__edge(t, twice, 1, 0, 2, 0);
  __hpvm__edge(t, twice, 1, 1, 3, 0);
  void* sum = __hpvm__createNodeND(0, addNode);
  __hpvm__edge(relu, sum, 1, 0, 0, 0);
  __hpvm__edge(relu, sum, 1, 1, 1, 0);
  __hpvm__edge(twice, sum, 1, 0, 2, 0);
  __hpvm__edge(twice, sum, 1, 1, 3, 0);
  __hpvm__bindOut(sum, 0, 0, 0);
  __hpvm__bindOut(sum, 1, 1, 0);
}

// Two outputs of different types from the root: a tensor and an int.
void pairNode(void* a, size_t) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  void* r = __hpvm__tensor_relu(a);
  __hpvm__return(2, r, 7);
}

void pairRoot(void*, size_t) {
  __hpvm__hint(hpvm::CPU_TARGET);
  void* n = __hpvm__createNodeND(0, pairNode);
  __hpvm__bindIn(n, 0, 0, 0);
  __hpvm__bindIn(n, 1, 1, 0);
  __hpvm__bindOut(n, 1, 0, 0);
  __hpvm__bindOut(n, 0, 1, 0);
}

struct __attribute__((__packed__)) PairIn {
  void* x;
  size_t xBytes;
  struct {
    int seven;
    void* tensor;
  } r;
};

const std::vector<float> kX = {-4, -3, -2, -1, 0, 1, 2, 3};

std::vector<float> addReluExpected(const std::vector<float>& x) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    out[i] = std::max(0.f, x[i] + (i < 4 ? 1.f : -1.5f));
  return out;
}

} // namespace

TEST_CASE("Executor: two nodes and an edge compute relu(x + b)") {
  void* x = makeTensor({1, 2, 2, 2}, kX);
  void* b = makeTensor({1, 2, 1, 1}, {1.f, -1.5f});
  TwoIn args{x, 0, b, 0, {nullptr, 99}};
  void* handle = __hpvm__launch(0, addReluRoot, (void*)&args);
  __hpvm__wait(handle);
  REQUIRE(val(args.r.tensor) != nullptr);
  CHECK(val(args.r.bytes) == 0);
  CHECK(val(args.r.tensor) != x);
  CHECK(valuesOf(args.r.tensor) == addReluExpected(kX));
  // The in-place add never writes into the program's input tensor.
  CHECK(valuesOf(x) == kX);
  CHECK(val(args.x) == x);
  CHECK(val(args.b) == b);
}

TEST_CASE("Executor: a nested internal node forwards bindings by position") {
  void* x = makeTensor({1, 2, 2, 2}, kX);
  void* b = makeTensor({1, 2, 1, 1}, {1.f, -1.5f});
  TwoIn args{b, 0, x, 0, {nullptr, 99}};
  __hpvm__wait(__hpvm__launch(0, nestedRoot, (void*)&args));
  CHECK(valuesOf(args.r.tensor) == addReluExpected(kX));
  CHECK(val(args.r.bytes) == 0);
}

TEST_CASE("Executor: fan-out feeds one output to three ops") {
  void* x = makeTensor({1, 2, 2, 2}, kX);
  OneIn args{x, 0, {nullptr, 0}};
  __hpvm__wait(__hpvm__launch(0, fanOutRoot, (void*)&args));
  std::vector<float> got = valuesOf(args.r.tensor);
  REQUIRE(got.size() == kX.size());
  for (size_t i = 0; i < kX.size(); ++i) {
    float t = std::tanh(kX[i]);
    CHECK(got[i] == doctest::Approx(std::max(0.f, t) + (t + t)).epsilon(1e-6));
  }
  CHECK(valuesOf(x) == kX);
}

TEST_CASE("Executor: root outputs are written after the parameters in "
          "bindOut order with their own types") {
  void* x = makeTensor({1, 2, 2, 2}, kX);
  PairIn args{x, 0, {0, nullptr}};
  __hpvm__wait(__hpvm__launch(0, pairRoot, (void*)&args));
  CHECK(val(args.r.seven) == 7);
  REQUIRE(val(args.r.tensor) != nullptr);
  CHECK(valuesOf(args.r.tensor) == std::vector<float>{0, 0, 0, 0, 0, 1, 2, 3});
}

TEST_CASE("Executor: repeated launches reuse the plan with new inputs and "
          "replan for a new batch size") {
  void* b = makeTensor({1, 2, 1, 1}, {1.f, -1.5f});
  int64_t built = hpvm::rt::plansBuilt();
  for (int round = 0; round < 3; ++round) {
    std::vector<float> xs = kX;
    for (float& v : xs)
      v *= float(round + 1);
    void* x = makeTensor({1, 2, 2, 2}, xs);
    TwoIn args{x, 0, b, 0, {nullptr, 0}};
    __hpvm__wait(__hpvm__launch(0, addReluRoot, (void*)&args));
    CHECK(valuesOf(args.r.tensor) == addReluExpected(xs));
    freeTensor(args.r.tensor);
    freeTensor(x);
  }
  // One plan (or none if an earlier test cached it) for three launches.
  CHECK(hpvm::rt::plansBuilt() - built <= 1);
  built = hpvm::rt::plansBuilt();
  std::vector<float> two = kX;
  two.insert(two.end(), kX.begin(), kX.end());
  void* x2 = makeTensor({2, 2, 2, 2}, two);
  TwoIn args{x2, 0, b, 0, {nullptr, 0}};
  __hpvm__wait(__hpvm__launch(0, addReluRoot, (void*)&args));
  std::vector<float> want = addReluExpected(kX);
  want.insert(want.end(), want.begin(), want.end());
  CHECK(valuesOf(args.r.tensor) == want);
  CHECK(hpvm::rt::plansBuilt() == built + 1);
  // Results of earlier launches stay valid (each launch gets new outputs).
  void* x1 = makeTensor({1, 2, 2, 2}, kX);
  TwoIn again{x1, 0, b, 0, {nullptr, 0}};
  __hpvm__wait(__hpvm__launch(0, addReluRoot, (void*)&again));
  CHECK(valuesOf(again.r.tensor) == addReluExpected(kX));
  CHECK(valuesOf(args.r.tensor) == want);
  // Back to the first batch size: its plan is still cached.
  CHECK(hpvm::rt::plansBuilt() == built + 1);
}

TEST_CASE("Executor: direct calls outside a launch compute eagerly and in "
          "place as HPVM does") {
  void* x = makeTensor({1, 2, 2, 2}, kX);
  void* b = makeTensor({1, 2, 1, 1}, {1.f, -1.5f});
  void* sum = tensorAdd(x, b);
  CHECK(sum == x);
  void* r = tensorRelu(sum);
  CHECK(r == x);
  CHECK(valuesOf(x) == addReluExpected(kX));
  void* y = __hpvm__tensor_pool_max(x, 2, 2, 0, 0, 2, 2);
  CHECK(y != x);
  CHECK(valuesOf(y) == std::vector<float>{0, 1.5f});
  CHECK(static_cast<Tensor*>(y)->dims.dim_sizes[2] == 1);
}
