// ChainGraph.h - HPVM-C graphs the runtime tests (and the configuration
// fuzzer) launch: the edge helpers, one-op leaf macros, and a LeNet-shaped
// chain of eight ops in three fused nodes (conv add tanh pool_max, mul add
// tanh, softmax) with seeded random weights and its exact configuration.
#ifndef HPVM_TESTS_RUNTIME_CHAINGRAPH_H
#define HPVM_TESTS_RUNTIME_CHAINGRAPH_H

#include "GraphTestUtil.h"
#include "config/Configuration.h"
#include "hpvm.h"

#include <cstring>
#include <utility>
#include <vector>

namespace hpvm::rt::test {

inline void bindPair(void* node, unsigned parentPair, unsigned childPair) {
  __hpvm__bindIn(node, 2 * parentPair, 2 * childPair, 0);
  __hpvm__bindIn(node, 2 * parentPair + 1, 2 * childPair + 1, 0);
}

inline void edgePair(void* src, void* dst, unsigned childPair) {
  __hpvm__edge(src, dst, 1, 0, 2 * childPair, 0);
  __hpvm__edge(src, dst, 1, 1, 2 * childPair + 1, 0);
}

inline void outPair(void* node) {
  __hpvm__bindOut(node, 0, 0, 0);
  __hpvm__bindOut(node, 1, 1, 0);
}

#define HPVM_TEST_LEAF1(Name, Id, Call)                                        \
  inline void Name(void* a, size_t) {                                          \
    __hpvm__hint(hpvm::TENSOR_TARGET);                                         \
    __hpvm__attributes(1, a, 0);                                               \
    if (Id)                                                                    \
      __hpvm__node_id(Id);                                                     \
    void* r = Call;                                                            \
    __hpvm__return(2, r, (size_t)0);                                           \
  }
#define HPVM_TEST_LEAF2(Name, Id, Call)                                        \
  inline void Name(void* a, size_t, void* b, size_t) {                         \
    __hpvm__hint(hpvm::TENSOR_TARGET);                                         \
    __hpvm__attributes(2, a, b, 0);                                            \
    if (Id)                                                                    \
      __hpvm__node_id(Id);                                                     \
    void* r = Call;                                                            \
    __hpvm__return(2, r, (size_t)0);                                           \
  }

// --- A LeNet-shaped chain without node ids ----------------------------------

HPVM_TEST_LEAF2(convNode, 0, __hpvm__tensor_convolution(a, b, 1, 1, 1, 1))
HPVM_TEST_LEAF2(addNode, 0, __hpvm__tensor_add(a, b))
HPVM_TEST_LEAF1(tanhNode, 0, __hpvm__tensor_tanh(a))
HPVM_TEST_LEAF1(poolNode, 0, __hpvm__tensor_pool_max(a, 2, 2, 0, 0, 2, 2))
HPVM_TEST_LEAF2(mulNode, 0, __hpvm__tensor_mul(a, b))
HPVM_TEST_LEAF1(softmaxNode, 0, __hpvm__tensor_softmax(a))

// x, conv w, conv b, dense w, dense b.
inline void chainRoot(void*, size_t, void*, size_t, void*, size_t, void*,
                      size_t, void*, size_t) {
  __hpvm__hint(hpvm::CPU_TARGET);
  void* conv = __hpvm__createNodeND(0, convNode);
  bindPair(conv, 0, 0);
  bindPair(conv, 1, 1);
  void* bias = __hpvm__createNodeND(0, addNode);
  edgePair(conv, bias, 0);
  bindPair(bias, 2, 1);
  void* act = __hpvm__createNodeND(0, tanhNode);
  edgePair(bias, act, 0);
  void* pool = __hpvm__createNodeND(0, poolNode);
  edgePair(act, pool, 0);
  void* mul = __hpvm__createNodeND(0, mulNode);
  edgePair(pool, mul, 0);
  bindPair(mul, 3, 1);
  void* bias2 = __hpvm__createNodeND(0, addNode);
  edgePair(mul, bias2, 0);
  bindPair(bias2, 4, 1);
  void* act2 = __hpvm__createNodeND(0, tanhNode);
  edgePair(bias2, act2, 0);
  void* soft = __hpvm__createNodeND(0, softmaxNode);
  edgePair(act2, soft, 0);
  outPair(soft);
}

struct __attribute__((__packed__)) ChainIn {
  void* x;
  size_t xb;
  void* w1;
  size_t w1b;
  void* b1;
  size_t b1b;
  void* w2;
  size_t w2b;
  void* b2;
  size_t b2b;
  struct {
    void* tensor;
    size_t bytes;
  } r;
};

struct ChainGraph {
  void* x = randomTensor({2, 1, 8, 8}, 1, -1.f, 1.f);
  void* w1 = randomTensor({4, 1, 3, 3}, 2, -.5f, .5f);
  void* b1 = randomTensor({1, 4, 1, 1}, 3, -.5f, .5f);
  void* w2 = randomTensor({1, 1, 64, 10}, 4, -.2f, .2f);
  void* b2 = randomTensor({1, 10, 1, 1}, 5, -.2f, .2f);

  void* run() {
    ChainIn args{x, 0, w1, 0, b1, 0, w2, 0, b2, 0, {nullptr, 0}};
    __hpvm__wait(__hpvm__launch(0, chainRoot, (void*)&args));
    return args.r.tensor;
  }
};

inline Configuration chainConfig(int softmaxLineKnob = 11) {
  Configuration c;
  c.name = "conf1";
  c.line = 2;
  auto line = [&](const char* name, int key,
                  std::vector<std::pair<HpvmOp, int>> ops) {
    NodeConfig n;
    n.name = name;
    n.key = key;
    n.line = c.line + 1 + int(c.nodes.size());
    int col = int(std::strlen(name)) + 6;
    for (auto [op, knob] : ops) {
      n.ops.push_back(OpChoice{op, knob, n.line, col});
      col += 10;
    }
    c.nodes.push_back(n);
  };
  line("1", 1,
       {{HpvmOp::Conv, 11},
        {HpvmOp::Add, 11},
        {HpvmOp::Tanh, 11},
        {HpvmOp::MaxPool, 11}});
  line("2", 5, {{HpvmOp::Mul, 11}, {HpvmOp::Add, 11}, {HpvmOp::Tanh, 11}});
  line("3", 8, {{HpvmOp::Softmax, softmaxLineKnob}});
  return c;
}

} // namespace hpvm::rt::test

#endif // HPVM_TESTS_RUNTIME_CHAINGRAPH_H
