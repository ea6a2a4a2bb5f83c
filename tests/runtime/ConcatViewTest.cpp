// ConcatViewTest.cpp - zero-copy concatenation in the executor: a graph of
// dense-block-like concatenations (prefixes of a later concatenation, a
// part in two concatenations at different offsets, a concatenation inside
// another, a part of 8 channels, a batch norm that would work in place on
// a view) gives bit for bit the results of the plan that copies, at batch
// 1 (with views) and 2 (without), over repeated launches and when buffers
// are freed after their last use.
#include "GraphTestUtil.h"
#include "core/Core.h"
#include "core/Launch.h"
#include "hpvm.h"
#include "tensor_runtime.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

using namespace hpvm::rt::test;

using hpvm::rt::Shape;

/// The graph's weights (external tensors the leaf reads).
struct Weights {
  void *wA, *wB, *wD, *wE, *wF, *wH, *wK;
  void *bn1[4], *bn2[4];
};

/// The network's weights, new for each launch (the runtime frees every
/// tensor at the end of a test case: RuntimeCleanup.cpp).
Weights weights() {
  Weights m{};
  m.wA = randomTensor({32, 16, 3, 3}, 1, -0.2f, 0.2f);
  m.wB = randomTensor({16, 32, 1, 1}, 2, -0.3f, 0.3f);
  m.wD = randomTensor({32, 48, 1, 1}, 3, -0.3f, 0.3f);
  m.wE = randomTensor({8, 16, 1, 1}, 4, -0.3f, 0.3f);
  m.wF = randomTensor({16, 80, 1, 1}, 5, -0.3f, 0.3f);
  m.wH = randomTensor({16, 16, 1, 1}, 6, -0.3f, 0.3f);
  m.wK = randomTensor({32, 16, 1, 1}, 7, -0.3f, 0.3f);
  auto bn = [](void** p, int64_t c, unsigned seed) {
    p[0] = randomTensor({1, c, 1, 1}, seed, 0.5f, 1.5f);
    p[1] = randomTensor({1, c, 1, 1}, seed + 1, -1.f, 1.f);
    p[2] = randomTensor({1, c, 1, 1}, seed + 2, -1.f, 1.f);
    p[3] = randomTensor({1, c, 1, 1}, seed + 3, 0.2f, 1.f);
  };
  bn(m.bn1, 48, 10);
  bn(m.bn2, 80, 20);
  return m;
}

void* conv(void* x, void* w, int pad) {
  return __hpvm__tensor_convolution(x, w, pad, pad, 1, 1);
}

void* bnRelu(void* x, void* const* p) {
  return __hpvm__tensor_relu(
      __hpvm__tensor_batchnorm(x, p[0], p[1], p[2], p[3], 1e-5));
}

// x: N x 16 x 6 x 6; the result N x 232 x 6 x 6. Channels in brackets.
void* denseGraph(void* x) {
  const Weights W = weights();
  void* a = __hpvm__tensor_relu(conv(x, W.wA, 1)); // [32]
  void* b = conv(a, W.wB, 0);                      // [16], reads a
  void* s = __hpvm_rt__tensor_concat(2, b, a);     // [48] other order
  void* c1 = __hpvm_rt__tensor_concat(2, a, b);    // [48] prefix of c2
  void* d = conv(bnRelu(c1, W.bn1), W.wD, 0);      // [32]
  void* c2 = __hpvm_rt__tensor_concat(3, a, b, d); // [80]
  void* f = conv(bnRelu(c2, W.bn2), W.wF, 0);      // [16]
  void* g = __hpvm_rt__tensor_concat(2, s, f);     // [64] s inside
  void* e = conv(x, W.wE, 0);                      // [8]
  void* odd = __hpvm_rt__tensor_concat(2, e, b);   // [24] not 16-blocks
  void* h = conv(x, W.wH, 0);                      // [16]
  void* k = conv(x, W.wK, 0);                      // [32]
  void* t1 = __hpvm_rt__tensor_concat(2, f, h);    // [32] inside t2
  void* t2 = __hpvm_rt__tensor_concat(2, t1, k);   // [64]
  return __hpvm_rt__tensor_concat(4, c2, g, odd, t2);
}

/// One launch of the graph on x under \p settings (bound), with or without
/// channel views; returns the output's values and sets \p views to the
/// plan's channel views.
std::vector<float> launch(hpvm::rt::LaunchSettings& settings, void* x,
                          bool channelViews, int64_t& views) {
  settings.setChannelViews(channelViews);
  OneIn args{x, 0, {nullptr, 0}};
  __hpvm__wait(__hpvm__launch(0, rootOf<leafOf<denseGraph>>, (void*)&args));
  views = settings.results().channelViews;
  std::vector<float> out = valuesOf(args.r.tensor);
  freeTensor(args.r.tensor);
  return out;
}

// Placed (last concatenation first): t2 takes t1 and k; t1 (inside t2)
// takes f and h; g takes s (f is in t1 already); c2 takes a, b and d; c1
// is a view of c2's first channels; s (inside g) copies b and a, which
// are in c2.
constexpr int64_t kViewsAtBatch1 = 9;

} // namespace

TEST_CASE("Concat views: outputs equal the copying plan's bit for bit at "
          "batch 1 and 2, over repeated launches") {
  hpvm::rt::LaunchSettings settings;
  hpvm::rt::LaunchScope scope(settings);
  for (int64_t N : {1, 2}) {
    INFO("batch " << N);
    for (unsigned seed : {100u, 200u}) {
      void* x = randomTensor({N, 16, 6, 6}, seed + unsigned(N), -1.f, 1.f);
      int64_t views = -1;
      const std::vector<float> copied = launch(settings, x, false, views);
      CHECK(views == 0);
      REQUIRE(copied.size() == size_t(N) * 232 * 36);
      // Twice: the first launch sets the views up, the second reuses them.
      for (int round = 0; round < 2; ++round) {
        CHECK(launch(settings, x, true, views) == copied);
        CHECK(views == (N == 1 ? kViewsAtBatch1 : 0));
      }
      freeTensor(x);
    }
  }
}

TEST_CASE("Concat views: buffers freed after their last use keep the views "
          "correct") {
  hpvm::rt::LaunchSettings settings;
  hpvm::rt::LaunchScope scope(settings);
  // HPVM_RT_KEEP_BYTES=0: every buffer (a view's whole after its last
  // reader) is freed during the launch and set up again on the next.
  const char* old = std::getenv("HPVM_RT_KEEP_BYTES");
  const std::string saved = old ? old : "";
  setenv("HPVM_RT_KEEP_BYTES", "0", 1);
  void* x = randomTensor({1, 16, 6, 6}, 7, -1.f, 1.f);
  int64_t views = -1;
  const std::vector<float> copied = launch(settings, x, false, views);
  for (int round = 0; round < 3; ++round) {
    CHECK(launch(settings, x, true, views) == copied);
    CHECK(views == kViewsAtBatch1);
  }
  freeTensor(x);
  if (old)
    setenv("HPVM_RT_KEEP_BYTES", saved.c_str(), 1);
  else
    unsetenv("HPVM_RT_KEEP_BYTES");
}
