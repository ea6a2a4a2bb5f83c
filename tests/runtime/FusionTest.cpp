// FusionTest.cpp - HPVM fused nodes of traced programs (reference 7.1),
// node ids, configurations applied per fused node and their mismatch
// errors, fused execution against the reference kernels, op records.
#include "ChainGraph.h"
#include "base/Errors.h"
#include "core/Core.h"
#include "core/Launch.h"
#include "hpvm.h"
#include "kernels/Kernels.h"
#include "kernels/Reference.h"
#include "tensor_runtime.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

namespace {

using namespace hpvm::rt;
using test::bindPair;
using test::chainConfig;
using test::ChainIn;
using test::edgePair;
using test::outPair;

void* randomTensor(const Shape& s, unsigned seed, float scale = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  void* t = create4DTensor(0, nchw, s[0], s[1], s[2], s[3]);
  auto* tensor = static_cast<Tensor*>(t);
  auto* p = static_cast<float*>(tensor->host_data);
  for (size_t i = 0; i < tensor->num_elems; ++i)
    p[i] = dist(gen);
  hostModified(tensor);
  return t;
}

const float* hostOf(void* t) {
  hpvm_request_tensor(t, 0);
  return static_cast<const float*>(static_cast<Tensor*>(t)->host_data);
}

void checkClose(void* got, const std::vector<float>& want, double tol) {
  auto* t = static_cast<Tensor*>(got);
  REQUIRE(t->num_elems == want.size());
  const float* p = hostOf(got);
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::abs(double(p[i]) - want[i]) /
                                std::max(1.0, std::abs(double(want[i]))));
  CHECK(worst <= tol);
}

struct Chain : test::ChainGraph {
  std::vector<float> reference() {
    std::vector<float> conv(2 * 4 * 8 * 8), pooled(2 * 4 * 4 * 4), dense(20),
        out(20);
    ConvArgs ca{1, 1, 1, 1, 1};
    ref::conv2d(hostOf(x), 2, 1, 8, 8, hostOf(w1), 4, 3, 3, ca, conv.data());
    ref::add(conv.data(), hostOf(b1), 2, 4, 64, true, conv.data());
    ref::act(conv.data(), int64_t(conv.size()), Act::Tanh, 0, 0, conv.data());
    PoolArgs pa;
    pa.kh = pa.kw = pa.strideH = pa.strideW = 2;
    ref::pool2d(conv.data(), 2, 4, 8, 8, pa, pooled.data());
    ref::dense(pooled.data(), 2, 64, hostOf(w2), 10, dense.data());
    ref::add(dense.data(), hostOf(b2), 2, 10, 1, true, dense.data());
    ref::act(dense.data(), 20, Act::Tanh, 0, 0, dense.data());
    ref::softmax(dense.data(), 2, 10, out.data());
    return out;
  }
};

std::string configError(Chain& chain) {
  try {
    chain.run();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// --- A residual block with node ids -----------------------------------------

HPVM_TEST_LEAF2(rConv1, 1, __hpvm__tensor_convolution(a, b, 1, 1, 1, 1))
HPVM_TEST_LEAF2(rAdd1, 2, __hpvm__tensor_add(a, b))
HPVM_TEST_LEAF1(rRelu1, 3, __hpvm__tensor_relu(a))
HPVM_TEST_LEAF2(rConv2, 4, __hpvm__tensor_convolution(a, b, 1, 1, 1, 1))
HPVM_TEST_LEAF2(rAdd2, 5, __hpvm__tensor_add(a, b))
HPVM_TEST_LEAF2(rAdd3, 6, __hpvm__tensor_add(a, b))
HPVM_TEST_LEAF1(rRelu2, 7, __hpvm__tensor_relu(a))

// x, w1, b1, w2, b2: relu(x + b2 + conv(relu(b1 + conv(x, w1)), w2)).
void residualRoot(void*, size_t, void*, size_t, void*, size_t, void*, size_t,
                  void*, size_t) {
  __hpvm__hint(hpvm::CPU_TARGET);
  void* c1 = __hpvm__createNodeND(0, rConv1);
  bindPair(c1, 0, 0);
  bindPair(c1, 1, 1);
  void* a1 = __hpvm__createNodeND(0, rAdd1);
  edgePair(c1, a1, 0);
  bindPair(a1, 2, 1);
  void* r1 = __hpvm__createNodeND(0, rRelu1);
  edgePair(a1, r1, 0);
  void* c2 = __hpvm__createNodeND(0, rConv2);
  edgePair(r1, c2, 0);
  bindPair(c2, 3, 1);
  void* a2 = __hpvm__createNodeND(0, rAdd2);
  edgePair(c2, a2, 0);
  bindPair(a2, 4, 1);
  void* a3 = __hpvm__createNodeND(0, rAdd3);
  bindPair(a3, 0, 0);
  edgePair(a2, a3, 1);
  void* r2 = __hpvm__createNodeND(0, rRelu2);
  edgePair(a3, r2, 0);
  outPair(r2);
}

} // namespace

TEST_CASE("Fusion: a LeNet-shaped chain forms HPVM's fused nodes and "
          "matches the reference kernels") {
  LaunchSettings settings;
  LaunchScope scope(settings);
  Chain chain;
  void* out = chain.run();
  const std::vector<FusedNodeInfo>& nodes = settings.results().nodes;
  REQUIRE(nodes.size() == 3);
  CHECK(nodes[0].ordinal == 1);
  CHECK(nodes[0].firstOpId == 0);
  CHECK(nodes[0].ops == std::vector<HpvmOp>{HpvmOp::Conv, HpvmOp::Add,
                                            HpvmOp::Tanh, HpvmOp::MaxPool});
  CHECK(nodes[0].leafNames == std::vector<std::string>{"convNode", "addNode",
                                                       "tanhNode", "poolNode"});
  CHECK(nodes[1].ops ==
        std::vector<HpvmOp>{HpvmOp::Mul, HpvmOp::Add, HpvmOp::Tanh});
  CHECK(nodes[2].ordinal == 3);
  CHECK(nodes[2].ops == std::vector<HpvmOp>{HpvmOp::Softmax});
  checkClose(out, chain.reference(), 1e-5);
}

namespace {

/// Runs residualRoot on fixed random data; returns the output and the
/// reference result.
std::pair<void*, std::vector<float>> runResidual() {
  void* x = randomTensor({2, 4, 6, 6}, 11);
  void* w1 = randomTensor({4, 4, 3, 3}, 12, 0.3f);
  void* b1 = randomTensor({1, 4, 1, 1}, 13, 0.3f);
  void* w2 = randomTensor({4, 4, 3, 3}, 14, 0.3f);
  void* b2 = randomTensor({1, 4, 1, 1}, 15, 0.3f);
  ChainIn args{x, 0, w1, 0, b1, 0, w2, 0, b2, 0, {nullptr, 0}};
  __hpvm__wait(__hpvm__launch(0, residualRoot, (void*)&args));
  const int64_t n = 2 * 4 * 36;
  std::vector<float> t1(n), t2(n);
  ConvArgs ca{1, 1, 1, 1, 1};
  ref::conv2d(hostOf(x), 2, 4, 6, 6, hostOf(w1), 4, 3, 3, ca, t1.data());
  ref::add(t1.data(), hostOf(b1), 2, 4, 36, true, t1.data());
  ref::act(t1.data(), n, Act::Relu, 0, 0, t1.data());
  ref::conv2d(t1.data(), 2, 4, 6, 6, hostOf(w2), 4, 3, 3, ca, t2.data());
  ref::add(t2.data(), hostOf(b2), 2, 4, 36, true, t2.data());
  ref::add(hostOf(x), t2.data(), 2, 4, 36, false, t2.data());
  ref::act(t2.data(), n, Act::Relu, 0, 0, t2.data());
  void* out = args.r.tensor;
  return {out, t2};
}

} // namespace

TEST_CASE("Fusion: node ids key fused nodes and residual blocks fuse as "
          "HPVM's ResNet") {
  LaunchSettings settings;
  LaunchScope scope(settings);
  auto [out, want] = runResidual();
  const std::vector<FusedNodeInfo>& nodes = settings.results().nodes;
  REQUIRE(nodes.size() == 4);
  std::vector<int> ids;
  for (const FusedNodeInfo& n : nodes)
    ids.push_back(n.firstOpId);
  CHECK(ids == std::vector<int>{1, 4, 6, 7});
  CHECK(nodes[1].ops == std::vector<HpvmOp>{HpvmOp::Conv, HpvmOp::Add});
  CHECK(nodes[2].ops == std::vector<HpvmOp>{HpvmOp::Add});
  CHECK(nodes[3].ops == std::vector<HpvmOp>{HpvmOp::Relu});
  checkClose(out, want, 1e-5);
}

namespace {

// --- Two hard sigmoids around a residual add ---------------------------------

HPVM_TEST_LEAF2(hConv, 1, __hpvm__tensor_convolution(a, b, 1, 1, 1, 1))
HPVM_TEST_LEAF2(hBias, 2, __hpvm__tensor_add(a, b))
HPVM_TEST_LEAF1(hGate1, 3, __hpvm_rt__tensor_hard_sigmoid(a, 0.2f, 0.5f))
HPVM_TEST_LEAF2(hResidual, 4, __hpvm__tensor_add(a, b))
HPVM_TEST_LEAF1(hGate2, 5, __hpvm_rt__tensor_hard_sigmoid(a, 0.4f, 0.45f))

// x, w, b: hs2(x + hs1(b + conv(x, w))).
void gatesRoot(void*, size_t, void*, size_t, void*, size_t) {
  __hpvm__hint(hpvm::CPU_TARGET);
  void* c = __hpvm__createNodeND(0, hConv);
  bindPair(c, 0, 0);
  bindPair(c, 1, 1);
  void* b = __hpvm__createNodeND(0, hBias);
  edgePair(c, b, 0);
  bindPair(b, 2, 1);
  void* g1 = __hpvm__createNodeND(0, hGate1);
  edgePair(b, g1, 0);
  void* r = __hpvm__createNodeND(0, hResidual);
  bindPair(r, 0, 0);
  edgePair(g1, r, 1);
  void* g2 = __hpvm__createNodeND(0, hGate2);
  edgePair(r, g2, 0);
  outPair(g2);
}

struct __attribute__((__packed__)) GatesIn {
  void* x;
  size_t xb;
  void* w;
  size_t wb;
  void* b;
  size_t bb;
  struct {
    void* tensor;
    size_t bytes;
  } r;
};

} // namespace

TEST_CASE("Fusion: a second hard sigmoid with other parameters after a "
          "residual add computes its own") {
  // oneDNN 2.6 would compute a post-op chain's second linear step with the
  // first one's alpha and beta (kernels/Elementwise.cpp): the second gate
  // stays out of the convolution's chain, and the result is exact.
  void* x = randomTensor({2, 4, 6, 6}, 21);
  void* w = randomTensor({4, 4, 3, 3}, 22, 0.3f);
  void* b = randomTensor({1, 4, 1, 1}, 23, 0.3f);
  GatesIn args{x, 0, w, 0, b, 0, {nullptr, 0}};
  __hpvm__wait(__hpvm__launch(0, gatesRoot, (void*)&args));
  const int64_t n = 2 * 4 * 36;
  std::vector<float> y(n);
  ref::conv2d(hostOf(x), 2, 4, 6, 6, hostOf(w), 4, 3, 3,
              ConvArgs{1, 1, 1, 1, 1}, y.data());
  ref::add(y.data(), hostOf(b), 2, 4, 36, true, y.data());
  ref::act(y.data(), n, Act::HardSigmoid, 0.2f, 0.5f, y.data());
  ref::add(hostOf(x), y.data(), 2, 4, 36, false, y.data());
  ref::act(y.data(), n, Act::HardSigmoid, 0.4f, 0.45f, y.data());
  checkClose(args.r.tensor, y, 1e-5);
}

TEST_CASE("Fusion: with a zero storage budget buffers are freed after "
          "their last use and results stay exact") {
  LaunchSettings settings;
  LaunchScope scope(settings);
  setenv("HPVM_RT_KEEP_BYTES", "0", 1);
  settings.setConfiguration(nullptr, ""); // Rebuilds schedules.
  for (int round = 0; round < 2; ++round) {
    auto [out, want] = runResidual();
    checkClose(out, want, 1e-5);
    Chain chain;
    checkClose(chain.run(), chain.reference(), 1e-5);
  }
  unsetenv("HPVM_RT_KEEP_BYTES");
  settings.setConfiguration(nullptr, "");
  auto [out, want] = runResidual();
  checkClose(out, want, 1e-5);
}

TEST_CASE("Fusion: a configuration sets each op's knob and records report "
          "ops, knobs and FLOPs") {
  LaunchSettings settings;
  LaunchScope scope(settings);
  Chain chain;
  Configuration conf = chainConfig();
  conf.nodes[0].ops[0].knobId = 123; // Row perforation, rate 2.
  settings.setConfiguration(&conf, "test.conf");
  settings.setRecording(true);
  void* out = chain.run();
  const std::vector<OpRecord>& records = settings.results().records;
  REQUIRE(records.size() == 8);
  CHECK(records[0].op == HpvmOp::Conv);
  CHECK(records[0].knob.id == 123);
  CHECK(records[0].knob.variant == Variant::PerfRow);
  CHECK(records[0].knob.rate == 2);
  CHECK(records[0].fusedOrdinal == 1);
  CHECK(records[0].flops == 2.0 * 4 * 8 * 8 * 2 * 1 * 3 * 3);
  CHECK(records[0].inputShapes ==
        std::vector<std::vector<int64_t>>{{2, 1, 8, 8}, {4, 1, 3, 3}});
  CHECK(records[0].outputShape == std::vector<int64_t>{2, 4, 8, 8});
  CHECK(records[4].op == HpvmOp::Mul);
  CHECK(records[4].fusedOrdinal == 2);
  CHECK(records[4].knob.id == 11);
  CHECK(records[7].op == HpvmOp::Softmax);
  CHECK(records[7].fusedOrdinal == 3);
  for (const OpRecord& r : records)
    CHECK(r.seconds >= 0);
  // Softmax rows still sum to one under the approximation.
  const float* p = hostOf(out);
  for (int row = 0; row < 2; ++row) {
    double sum = 0;
    for (int k = 0; k < 10; ++k)
      sum += p[row * 10 + k];
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
  }
  settings.setRecording(false);
  // Back to exact: the reference result again.
  settings.setConfiguration(nullptr, "");
  checkClose(chain.run(), chain.reference(), 1e-5);
}

TEST_CASE("Fusion: configuration mismatches name the line and fused node") {
  LaunchSettings settings;
  LaunchScope scope(settings);
  Chain chain;
  Configuration conf = chainConfig();
  conf.nodes[1].ops.pop_back();
  settings.setConfiguration(&conf, "test.conf");
  CHECK(configError(chain) ==
        "test.conf:4:7: line '2' of configuration 'conf1' lists 'mul add' "
        "but the program's fused node 2 (name '2': mul add tanh; node "
        "functions mulNode, addNode, tanhNode) has 'mul add tanh'");

  conf = chainConfig();
  conf.nodes.pop_back();
  settings.setConfiguration(&conf, "test.conf");
  CHECK(configError(chain) ==
        "test.conf:2:1: configuration 'conf1' has no line for fused node 3 "
        "(name '3': softmax; node functions softmaxNode)");

  conf = chainConfig();
  NodeConfig extra = conf.nodes.back();
  extra.name = "4";
  extra.key = 9;
  extra.line = 6;
  conf.nodes.push_back(extra);
  settings.setConfiguration(&conf, "test.conf");
  CHECK(configError(chain) ==
        "test.conf:6:1: line '4' (key 9) of configuration 'conf1' matches "
        "no fused node of the program (3 fused nodes, names 1..3)");

  conf = chainConfig(121);
  settings.setConfiguration(&conf, "test.conf");
  CHECK(configError(chain) ==
        "test.conf:5:7: knob 121 cannot be applied to softmax of fused node "
        "3 (name '3': softmax; node functions softmaxNode)");
  settings.setConfiguration(nullptr, "");
  checkClose(chain.run(), chain.reference(), 1e-5);
}

namespace {

void cudnnConv(void* a, size_t, void* b, size_t) {
  __hpvm__hint(hpvm::CUDNN_TARGET);
  void* r = __hpvm__tensor_convolution(a, b, 1, 1, 1, 1);
  __hpvm__return(2, r, (size_t)0);
}

void cudnnRelu(void* a, size_t) {
  __hpvm__hint(hpvm::CUDNN_TARGET);
  void* r = __hpvm__tensor_relu(a);
  __hpvm__return(2, r, (size_t)0);
}

void cudnnRoot(void*, size_t, void*, size_t) {
  __hpvm__hint(hpvm::CPU_TARGET);
  void* conv = __hpvm__createNodeND(0, cudnnConv);
  bindPair(conv, 0, 0);
  bindPair(conv, 1, 1);
  void* relu = __hpvm__createNodeND(0, cudnnRelu);
  edgePair(conv, relu, 0);
  outPair(relu);
}

struct __attribute__((__packed__)) TwoIn {
  void* x;
  size_t xb;
  void* w;
  size_t wb;
  struct {
    void* tensor;
    size_t bytes;
  } r;
};

} // namespace

TEST_CASE("Fusion: programs without TENSOR_TARGET nodes (HPVM's cudnn "
          "target) run exact and ignore the configuration") {
  LaunchSettings settings;
  LaunchScope scope(settings);
  void* x = randomTensor({1, 2, 5, 5}, 21);
  void* w = randomTensor({3, 2, 3, 3}, 22, 0.5f);
  Configuration conf = chainConfig();
  settings.setConfiguration(&conf, "test.conf");
  TwoIn args{x, 0, w, 0, {nullptr, 0}};
  __hpvm__wait(__hpvm__launch(0, cudnnRoot, (void*)&args));
  settings.setConfiguration(nullptr, "");
  const std::vector<FusedNodeInfo>& nodes = settings.results().nodes;
  REQUIRE(nodes.size() == 2); // Only TENSOR_TARGET leaves fuse.
  CHECK(nodes[0].ops == std::vector<HpvmOp>{HpvmOp::Conv});
  std::vector<float> want(3 * 25);
  ref::conv2d(hostOf(x), 1, 2, 5, 5, hostOf(w), 3, 3, 3,
              ConvArgs{1, 1, 1, 1, 1}, want.data());
  ref::act(want.data(), 75, Act::Relu, 0, 0, want.data());
  checkClose(args.r.tensor, want, 1e-5);
}
