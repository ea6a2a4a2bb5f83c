// GateFoldTest.cpp - squeeze-and-excitation gates folded into the
// convolution reading their product (Groups.cpp, ConvGated.h): a graph of
// two gated blocks (a 1x1 projection with batch norm and a residual; a
// 3x3 convolution with padding and 4 output channels) and a gated
// convolution whose filter is too large to fold. At batch 1 the foldable gates
// fold and the outputs agree with the unfolded plan's; at batch 2 nothing
// folds; calibration sees the gated activation either way.
#include "GraphTestUtil.h"
#include "core/Core.h"
#include "core/Launch.h"
#include "hpvm.h"
#include "tensor_runtime.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace {

using namespace hpvm::rt::test;

void* conv(void* x, void* w, int pad) {
  return __hpvm__tensor_convolution(x, w, pad, pad, 1, 1);
}

/// A gate for x (N x C x 16 x 16): sigmoid(w2 relu(w1 mean(x))).
void* gateOf(void* x, void* w1, void* w2) {
  void* squeezed = __hpvm__tensor_pool_mean(x, 16, 16, 0, 0, 16, 16);
  return __hpvm_rt__tensor_sigmoid(
      conv(__hpvm__tensor_relu(conv(squeezed, w1, 0)), w2, 0));
}

// x: N x 32 x 16 x 16. Block 1: y = relu(bn(conv1x1(x * g1)) + conv1x1(x))
// (16 channels; the filter, 16 values per input channel, folds). Block 2:
// z = conv3x3(y * g2) (4 channels, 36 values per input channel: folds).
// Block 3: conv3x3(g3 * z) with 8 channels (72 values: 4 x 72 > 256
// pixels, does not fold).
void* gatedGraph(void* x) {
  void* g1 = gateOf(x, randomTensor({8, 32, 1, 1}, 1, -0.5f, 0.5f),
                    randomTensor({32, 8, 1, 1}, 2, -0.5f, 0.5f));
  void* p = conv(__hpvm_rt__tensor_multiply(x, g1),
                 randomTensor({16, 32, 1, 1}, 3, -0.3f, 0.3f), 0);
  p = __hpvm__tensor_batchnorm(p, randomTensor({1, 16, 1, 1}, 4, 0.5f, 1.5f),
                               randomTensor({1, 16, 1, 1}, 5, -1.f, 1.f),
                               randomTensor({1, 16, 1, 1}, 6, -1.f, 1.f),
                               randomTensor({1, 16, 1, 1}, 7, 0.2f, 1.f), 1e-5);
  void* skip = conv(x, randomTensor({16, 32, 1, 1}, 8, -0.3f, 0.3f), 0);
  void* y = __hpvm__tensor_relu(__hpvm__tensor_add(p, skip));
  void* g2 = gateOf(y, randomTensor({4, 16, 1, 1}, 9, -0.5f, 0.5f),
                    randomTensor({16, 4, 1, 1}, 10, -0.5f, 0.5f));
  void* z = conv(__hpvm_rt__tensor_multiply(y, g2),
                 randomTensor({4, 16, 3, 3}, 11, -0.3f, 0.3f), 1);
  void* g3 = gateOf(z, randomTensor({2, 4, 1, 1}, 12, -0.5f, 0.5f),
                    randomTensor({4, 2, 1, 1}, 13, -0.5f, 0.5f));
  return conv(__hpvm_rt__tensor_multiply(z, g3),
              randomTensor({8, 4, 3, 3}, 14, -0.3f, 0.3f), 1);
}

/// One launch of the graph on x with or without gate folding; sets
/// \p folded to the plan's folded gates.
std::vector<float> launch(hpvm::rt::LaunchSettings& settings, void* x,
                          bool fold, int64_t& folded) {
  settings.setGateFolding(fold);
  OneIn args{x, 0, {nullptr, 0}};
  __hpvm__wait(__hpvm__launch(0, rootOf<leafOf<gatedGraph>>, (void*)&args));
  folded = settings.results().gatesFolded;
  std::vector<float> out = valuesOf(args.r.tensor);
  freeTensor(args.r.tensor);
  return out;
}

void checkClose(const std::vector<float>& got, const std::vector<float>& want,
                double tol) {
  REQUIRE(got.size() == want.size());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::abs(double(got[i]) - want[i]));
    scale = std::max(scale, std::abs(double(want[i])));
  }
  CHECK(scale > 0.1);
  CHECK(worst <= tol * scale);
}

/// The convolutions' inputs a calibration observer saw, by fused node.
std::map<int, std::vector<float>> seen;

void observe(void*, int ordinal, hpvm::rt::HpvmOp op, const float* data,
             int64_t n) {
  if (op == hpvm::rt::HpvmOp::Conv)
    seen[ordinal].assign(data, data + n);
}

} // namespace

TEST_CASE("Gate folding: foldable gates fold at batch 1 and agree with "
          "the multiply over repeated launches, and nothing folds at batch "
          "2") {
  hpvm::rt::LaunchSettings settings;
  hpvm::rt::LaunchScope scope(settings);
  for (int64_t N : {1, 2}) {
    INFO("batch " << N);
    void* x = randomTensor({N, 32, 16, 16}, 40 + unsigned(N), -1.f, 1.f);
    int64_t folded = -1;
    const std::vector<float> multiplied = launch(settings, x, false, folded);
    CHECK(folded == 0);
    REQUIRE(multiplied.size() == size_t(N) * 8 * 16 * 16);
    // Twice: the first launch derives the gated filters, the second
    // refills them with the same gates.
    for (int round = 0; round < 2; ++round) {
      checkClose(launch(settings, x, true, folded), multiplied, 1e-5);
      CHECK(folded == (N == 1 ? 2 : 0));
    }
    freeTensor(x);
  }
  // A new image: new gates, the filters scaled anew.
  void* a = randomTensor({1, 32, 16, 16}, 50, -1.f, 1.f);
  void* b = randomTensor({1, 32, 16, 16}, 51, -1.f, 1.f);
  int64_t folded = -1;
  const std::vector<float> wantA = launch(settings, a, false, folded);
  const std::vector<float> wantB = launch(settings, b, false, folded);
  checkClose(launch(settings, a, true, folded), wantA, 1e-5);
  checkClose(launch(settings, b, true, folded), wantB, 1e-5);
  CHECK(wantA != wantB);
  freeTensor(a);
  freeTensor(b);
}

TEST_CASE("Gate folding: an input observer (calibration) sees the gated "
          "activation, not the ungated one") {
  hpvm::rt::LaunchSettings settings;
  hpvm::rt::LaunchScope scope(settings);
  settings.setInputObserver(observe, nullptr);
  void* x = randomTensor({1, 32, 16, 16}, 60, -1.f, 1.f);
  int64_t folded = -1;
  seen.clear();
  launch(settings, x, false, folded);
  const std::map<int, std::vector<float>> multiplied = seen;
  seen.clear();
  launch(settings, x, true, folded);
  CHECK(folded == 2);
  REQUIRE(seen.size() == multiplied.size());
  for (const auto& entry : multiplied) {
    const int ordinal = entry.first;
    const std::vector<float>& want = entry.second;
    INFO("fused node " << ordinal);
    REQUIRE(seen.count(ordinal) == 1);
    checkClose(seen[ordinal], want, 1e-6);
  }
  settings.setInputObserver(nullptr, nullptr);
  freeTensor(x);
}
