// StorageTest.cpp - tensor storage: blocked layouts round-trip through
// ensureHost, a layer chain runs without NCHW in between, cached weights
// follow hostModified, program-given buffers are adopted, and the thread
// count is honoured.
#include "KernelTestUtil.h"

#include <omp.h>

#include <cstdlib>
#include <thread>

using namespace hpvm::rt;
using namespace hpvm::rt::test;

TEST_CASE("Kernels: a blocked conv output round-trips through ensureHost") {
  TestTensor x({2, 16, 9, 9}), w({32, 16, 3, 3}), y({2, 32, 9, 9});
  x.set(randomVec(x.size(), 1));
  w.set(randomVec(w.size(), 2, -0.1f, 0.1f));
  ConvArgs a;
  a.padH = a.padW = 1;
  runConv(x.get(), w.get(), a, PostOps{}, KnobSpec{}, y.get());
  // The valid copy is oneDNN's; the host buffer is filled only on demand.
  CHECK(y.get()->impl != nullptr);
  std::vector<float> want(y.size());
  ref::conv2d(x.values().data(), 2, 16, 9, 9, w.values().data(), 32, 3, 3, a,
              want.data());
  std::vector<float> first = y.values();
  checkClose(first, want, 1e-5, 2e-5, "ensureHost after conv");
  // A second ensureHost is a no-op; values stay identical.
  CHECK(y.values() == first);
  CHECK(y.get()->num_elems == y.size());
  CHECK(y.get()->size_in_bytes == y.size() * sizeof(float));
}

TEST_CASE("Kernels: a conv-pool-bn-add-conv-dense-softmax chain matches "
          "the reference without NCHW in between") {
  const size_t N = 3;
  TestTensor x({N, 3, 12, 12}), w1({16, 3, 3, 3}), w2({24, 16, 3, 3});
  x.set(randomVec(x.size(), 10));
  w1.set(randomVec(w1.size(), 11, -0.3f, 0.3f));
  w2.set(randomVec(w2.size(), 12, -0.1f, 0.1f));
  TestTensor g({1, 16, 1, 1}), be({1, 16, 1, 1}), m({1, 16, 1, 1}),
      v({1, 16, 1, 1}), bias({1, 16, 1, 1});
  g.set(randomVec(16, 13, 0.5f, 1.5f));
  be.set(randomVec(16, 14));
  m.set(randomVec(16, 15));
  v.set(randomVec(16, 16, 0.1f, 1.f));
  bias.set(randomVec(16, 17));
  TestTensor fw({1, 1, 24 * 6 * 6, 10});
  fw.set(randomVec(fw.size(), 18, -0.05f, 0.05f));

  ConvArgs pad1;
  pad1.padH = pad1.padW = 1;
  PoolArgs pool;
  pool.kh = pool.kw = pool.strideH = pool.strideW = 2;
  TestTensor c1({N, 16, 12, 12}), p1({N, 16, 6, 6}), c2({N, 24, 6, 6}),
      out({N, 10, 1, 1});
  PostOps relu;
  relu.act = Act::Relu;
  runConv(x.get(), w1.get(), pad1, relu, KnobSpec{}, c1.get());
  runPool(c1.get(), pool, KnobSpec{}, p1.get());
  runBatchNorm(p1.get(), g.get(), be.get(), m.get(), v.get(), 1e-5, Act::None,
               0, 0, KnobSpec{}, p1.get());
  runAdd(p1.get(), bias.get(), Act::Tanh, 0, 0, KnobSpec{}, p1.get());
  runConv(p1.get(), w2.get(), pad1, relu, KnobSpec{}, c2.get());
  runDense(c2.get(), fw.get(), PostOps{}, KnobSpec{}, out.get());
  runSoftmax(out.get(), KnobSpec{}, out.get());

  // The same chain with the reference kernels.
  std::vector<float> r1(c1.size()), r2(p1.size()), r3(c2.size()),
      r4(out.size());
  ref::conv2d(x.values().data(), N, 3, 12, 12, w1.values().data(), 16, 3, 3,
              pad1, r1.data());
  ref::act(r1.data(), int64_t(r1.size()), Act::Relu, 0, 0, r1.data());
  ref::pool2d(r1.data(), N, 16, 12, 12, pool, r2.data());
  ref::batchNorm(r2.data(), N, 16, 36, g.values().data(), be.values().data(),
                 m.values().data(), v.values().data(), 1e-5, r2.data());
  ref::add(r2.data(), bias.values().data(), N, 16, 36, true, r2.data());
  ref::act(r2.data(), int64_t(r2.size()), Act::Tanh, 0, 0, r2.data());
  ref::conv2d(r2.data(), N, 16, 6, 6, w2.values().data(), 24, 3, 3, pad1,
              r3.data());
  ref::act(r3.data(), int64_t(r3.size()), Act::Relu, 0, 0, r3.data());
  ref::dense(r3.data(), N, 24 * 36, fw.values().data(), 10, r4.data());
  ref::softmax(r4.data(), N, 10, r4.data());
  checkClose(out.values(), r4, 1e-5, 1e-6, "chain output");
  checkClose(c2.values(), r3, 1e-5, 2e-5, "chain conv2");
}

TEST_CASE("Kernels: cached weights follow hostModified") {
  TestTensor x({1, 8, 5, 5}), w({4, 8, 3, 3}), bias({1, 4, 1, 1}),
      y({1, 4, 3, 3});
  x.set(randomVec(x.size(), 20));
  w.set(randomVec(w.size(), 21));
  bias.set(randomVec(4, 22));
  PostOps post;
  post.bias = bias.get();
  auto check = [&](const char* what) {
    runConv(x.get(), w.get(), ConvArgs{}, post, KnobSpec{}, y.get());
    std::vector<float> want(y.size());
    ref::conv2d(x.values().data(), 1, 8, 5, 5, w.values().data(), 4, 3, 3,
                ConvArgs{}, want.data());
    ref::add(want.data(), bias.values().data(), 1, 4, 9, true, want.data());
    checkClose(y.values(), want, 1e-5, 2e-5, what);
  };
  check("first run");
  // New weights written into the same host buffer.
  float* wp = static_cast<float*>(w.get()->host_data);
  for (size_t i = 0; i < w.size(); ++i)
    wp[i] = -wp[i] * 0.5f;
  hostModified(w.get());
  check("after new weights");
  // New bias: the folded bias is derived again too.
  bias.set(randomVec(4, 23, 5.f, 6.f));
  check("after new bias");
}

TEST_CASE("Kernels: a program-given host buffer is adopted, not freed") {
  std::vector<float> buf = randomVec(2 * 3 * 4 * 4, 30);
  std::vector<size_t> dims{2, 3, 4, 4};
  Tensor t{};
  t.dims.num_dims = 4;
  t.dims.dim_sizes = dims.data();
  t.host_data = buf.data();
  hostModified(&t);
  TestTensor y({2, 3, 4, 4});
  runAct(&t, Act::Relu, 0, 0, KnobSpec{}, y.get());
  std::vector<float> want(buf.size());
  ref::act(buf.data(), int64_t(buf.size()), Act::Relu, 0, 0, want.data());
  CHECK(y.values() == want);
  // In place into the program's buffer.
  runAct(&t, Act::Relu, 0, 0, KnobSpec{}, &t);
  ensureHost(&t);
  CHECK(t.host_data == buf.data());
  CHECK(buf == want);
  releaseStorage(&t);
  CHECK(t.impl == nullptr);
  CHECK(t.host_data == buf.data());
}

TEST_CASE("Kernels: releaseStorage frees every buffer and the tensor can be "
          "used again") {
  TestTensor x({1, 4, 6, 6}), w({4, 4, 1, 1}), y({1, 4, 6, 6});
  x.set(randomVec(x.size(), 40));
  w.set(randomVec(w.size(), 41));
  runConv(x.get(), w.get(), ConvArgs{}, PostOps{}, KnobSpec{}, y.get());
  releaseStorage(y.get());
  CHECK(y.get()->impl == nullptr);
  CHECK(y.get()->host_data == nullptr);
  runConv(x.get(), w.get(), ConvArgs{}, PostOps{}, KnobSpec{}, y.get());
  std::vector<float> want(y.size());
  ref::conv2d(x.values().data(), 1, 4, 6, 6, w.values().data(), 4, 1, 1,
              ConvArgs{}, want.data());
  checkClose(y.values(), want, 1e-5, 2e-5, "after release");
}

TEST_CASE("Kernels: setNumThreads sets the thread count and results do not "
          "depend on it") {
  int before = numThreads();
  TestTensor x({4, 16, 10, 10}), w({16, 16, 3, 3});
  x.set(randomVec(x.size(), 50));
  w.set(randomVec(w.size(), 51, -0.1f, 0.1f));
  std::vector<std::vector<float>> results;
  for (int n : {1, 2}) {
    setNumThreads(n);
    CHECK(numThreads() == n);
    TestTensor y({4, 16, 8, 8});
    runConv(x.get(), w.get(), ConvArgs{}, PostOps{}, KnobSpec{}, y.get());
    results.push_back(y.values());
  }
  checkClose(results[1], results[0], 1e-6, 1e-6, "1 vs 2 threads");
  setNumThreads(0);
  CHECK(numThreads() >= 1);
  setNumThreads(before);
}

TEST_CASE("Kernels: the thread count applies to kernels called from another "
          "thread") {
  int before = numThreads();
  setNumThreads(1);
  int seen = -1;
  std::thread worker([&] {
    // A fresh thread starts from OpenMP's defaults; the kernel applies the
    // chosen count before it runs.
    omp_set_num_threads(3);
    TestTensor x({1, 16, 4, 4}), y({1, 16, 4, 4});
    x.set(randomVec(x.size(), 60));
    runAct(x.get(), Act::Relu, 0, 0, KnobSpec{}, y.get());
    seen = omp_get_max_threads();
  });
  worker.join();
  CHECK(seen == 1);
  setNumThreads(before);
}
