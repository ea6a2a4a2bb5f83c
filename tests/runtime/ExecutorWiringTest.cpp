// ExecutorWiringTest.cpp - every wiring error a launch reports, with its
// exact message: unbound input, positions out of range, type mismatches,
// cycles, outputs or inputs bound twice, and misuse of the API.
#include "base/Errors.h"
#include "core/Core.h"
#include "hpvm.h"
#include "tensor_runtime.h"

#include <doctest/doctest.h>

#include <string>

namespace {

const std::string kFile = __FILE__;
int lineA = 0, lineB = 0, bindAllLine = 0;

std::string at(int line) { return kFile + ":" + std::to_string(line); }

void leaf2(void* a, size_t, void* b, size_t) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  void* r = __hpvm__tensor_add(a, b);
  __hpvm__return(2, r, (size_t)0);
}

void leaf1(void* a, size_t) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  void* r = __hpvm__tensor_relu(a);
  __hpvm__return(2, r, (size_t)0);
}

void leafInt(int, size_t) { __hpvm__return(2, (void*)nullptr, (size_t)0); }

void bindAll(void* n) {
  bindAllLine = __LINE__ + 2;
  for (unsigned i = 0; i < 4; ++i)
    __hpvm__bindIn(n, i, i, 0);
}

void neverBoundRoot(void*, size_t, void*, size_t) {
  lineA = __LINE__ + 1;
  void* n = __hpvm__createNodeND(0, leaf2);
  __hpvm__bindIn(n, 0, 0, 0);
  __hpvm__bindIn(n, 1, 1, 0);
  __hpvm__bindIn(n, 2, 2, 0);
  __hpvm__bindOut(n, 0, 0, 0);
}

void parentRangeRoot(void*, size_t, void*, size_t) {
  void* n = __hpvm__createNodeND(0, leaf2);
  lineA = __LINE__ + 1;
  __hpvm__bindIn(n, 4, 0, 0);
}

void childRangeRoot(void*, size_t, void*, size_t) {
  void* n = __hpvm__createNodeND(0, leaf1);
  lineA = __LINE__ + 1;
  __hpvm__bindIn(n, 0, 2, 0);
}

void edgeRangeRoot(void*, size_t, void*, size_t) {
  void* a = __hpvm__createNodeND(0, leaf2);
  bindAll(a);
  void* b = __hpvm__createNodeND(0, leaf1);
  lineA = __LINE__ + 1;
  __hpvm__edge(a, b, 1, 0, 3, 0);
}

void edgeOutputRangeRoot(void*, size_t, void*, size_t) {
  void* a = __hpvm__createNodeND(0, leaf2);
  bindAll(a);
  void* b = __hpvm__createNodeND(0, leaf1);
  lineA = __LINE__ + 1;
  __hpvm__edge(a, b, 1, 2, 0, 0);
  __hpvm__edge(a, b, 1, 1, 1, 0);
  __hpvm__bindOut(b, 0, 0, 0);
}

void bindTypeRoot(void*, size_t, void*, size_t) {
  void* n = __hpvm__createNodeND(0, leafInt);
  lineA = __LINE__ + 1;
  __hpvm__bindIn(n, 0, 0, 0);
}

void edgeTypeRoot(void*, size_t, void*, size_t) {
  void* a = __hpvm__createNodeND(0, leaf2);
  bindAll(a);
  void* b = __hpvm__createNodeND(0, leafInt);
  lineA = __LINE__ + 1;
  __hpvm__edge(a, b, 1, 0, 0, 0);
  __hpvm__edge(a, b, 1, 1, 1, 0);
}

void cycleRoot(void*, size_t, void*, size_t) {
  void* a = __hpvm__createNodeND(0, leaf2);
  void* b = __hpvm__createNodeND(0, leaf1);
  __hpvm__bindIn(a, 0, 0, 0);
  __hpvm__bindIn(a, 1, 1, 0);
  __hpvm__edge(b, a, 1, 0, 2, 0);
  __hpvm__edge(b, a, 1, 1, 3, 0);
  __hpvm__edge(a, b, 1, 0, 0, 0);
  __hpvm__edge(a, b, 1, 1, 1, 0);
}

void outTwiceRoot(void*, size_t, void*, size_t) {
  void* a = __hpvm__createNodeND(0, leaf2);
  bindAll(a);
  lineA = __LINE__ + 1;
  __hpvm__bindOut(a, 0, 0, 0);
  lineB = __LINE__ + 1;
  __hpvm__bindOut(a, 1, 0, 0);
}

void outGapRoot(void*, size_t, void*, size_t) {
  void* a = __hpvm__createNodeND(0, leaf2);
  bindAll(a);
  __hpvm__bindOut(a, 1, 1, 0);
}

void inTwiceRoot(void*, size_t, void*, size_t) {
  void* a = __hpvm__createNodeND(0, leaf2);
  bindAll(a);
  lineB = __LINE__ + 1;
  __hpvm__bindIn(a, 2, 0, 0);
}

void foreignHandleRoot(void*, size_t, void*, size_t);
void* savedHandle = nullptr;

void innerMaker(void*, size_t, void*, size_t) {
  lineA = __LINE__ + 1;
  __hpvm__bindIn(savedHandle, 0, 0, 0);
}

void foreignHandleRoot(void*, size_t, void*, size_t) {
  savedHandle = __hpvm__createNodeND(0, leaf2);
  bindAll(savedHandle);
  void* inner = __hpvm__createNodeND(0, innerMaker);
  bindAll(inner);
}

void mixedLeaf(void* a, size_t) {
  __hpvm__tensor_relu(a);
  lineA = __LINE__ + 1;
  __hpvm__createNodeND(0, leaf1);
}

void mixedRoot(void*, size_t, void*, size_t) {
  void* n = __hpvm__createNodeND(0, mixedLeaf);
  __hpvm__bindIn(n, 0, 0, 0);
  __hpvm__bindIn(n, 1, 1, 0);
}

void badShapeRoot(void*, size_t, void*, size_t) {
  void* n = __hpvm__createNodeND(0, leaf2);
  __hpvm__bindIn(n, 0, 0, 0);
  __hpvm__bindIn(n, 1, 1, 0);
  __hpvm__bindIn(n, 0, 2, 0);
  __hpvm__bindIn(n, 1, 3, 0);
  void* m = __hpvm__createNodeND(0, leaf2);
  __hpvm__bindIn(m, 2, 0, 0);
  __hpvm__bindIn(m, 3, 1, 0);
  __hpvm__bindIn(m, 0, 2, 0);
  __hpvm__bindIn(m, 1, 3, 0);
}

struct __attribute__((__packed__)) Args {
  void* x;
  size_t xBytes;
  void* y;
  size_t yBytes;
  struct {
    void* tensor;
    size_t bytes;
  } r;
};

// (New for each launch: the runtime frees every tensor at the end of a
// test case, RuntimeCleanup.cpp.)
void* tensorX() { return create4DTensor(0, nchw, 1, 2, 2, 2); }

void* tensorY() { return create4DTensor(0, nchw, 1, 2, 1, 1); }

/// The message of the error launching \p root on x (1x2x2x2) and
/// y (1x2x1x1) reports ("" if none).
#define LAUNCH_ERROR(root)                                                     \
  [] {                                                                         \
    Args args{tensorX(), 0, tensorY(), 0, {nullptr, 0}};                       \
    try {                                                                      \
      __hpvm__wait(__hpvm__launch(0, root, (void*)&args));                     \
    } catch (const hpvm::rt::UserError& e) {                                   \
      return std::string(e.what());                                            \
    }                                                                          \
    return std::string();                                                      \
  }()

} // namespace

TEST_CASE("Executor: an input never bound is reported with the node and "
          "position") {
  std::string got = LAUNCH_ERROR(neverBoundRoot);
  CHECK(got == "parameter 3 of leaf2 (created at " + at(lineA) +
                   ") is never bound (by __hpvm__bindIn or __hpvm__edge in "
                   "neverBoundRoot)");
}

TEST_CASE("Executor: positions out of range are reported") {
  std::string got = LAUNCH_ERROR(parentRangeRoot);
  CHECK(got == at(lineA) + ": __hpvm__bindIn(leaf2, 4, 0): parent position "
                           "4 is out of range: parentRangeRoot has 4 "
                           "parameters");
  got = LAUNCH_ERROR(childRangeRoot);
  CHECK(got == at(lineA) + ": __hpvm__bindIn(leaf1, 0, 2): child position 2 "
                           "is out of range: leaf1 has 2 parameters");
  got = LAUNCH_ERROR(edgeRangeRoot);
  CHECK(got == at(lineA) + ": __hpvm__edge(leaf2, leaf1, 0, 3): destination "
                           "position 3 is out of range: leaf1 has 2 "
                           "parameters");
  got = LAUNCH_ERROR(edgeOutputRangeRoot);
  CHECK(got == at(lineA) + ": __hpvm__edge reads output 2 of leaf2, which "
                           "has 2 output(s)");
}

TEST_CASE("Executor: type mismatches are reported with both types") {
  std::string got = LAUNCH_ERROR(bindTypeRoot);
  CHECK(got == at(lineA) + ": __hpvm__bindIn(leafInt, 0, 0): type mismatch: "
                           "parameter 0 of bindTypeRoot (pointer) feeds "
                           "parameter 0 of leafInt (4-byte integer)");
  got = LAUNCH_ERROR(edgeTypeRoot);
  CHECK(got == at(lineA) + ": type mismatch: output 0 of leaf2 (pointer) "
                           "feeds parameter 0 of leafInt (4-byte integer)");
}

TEST_CASE("Executor: a cycle is reported with its nodes") {
  CHECK(LAUNCH_ERROR(cycleRoot) ==
        "cycle among the children of cycleRoot: leaf1 -> leaf2 -> leaf1");
}

TEST_CASE("Executor: outputs and inputs bound twice are reported") {
  std::string got = LAUNCH_ERROR(outTwiceRoot);
  CHECK(got == at(lineB) +
                   ": __hpvm__bindOut(leaf2, 1, 0): output 0 of "
                   "outTwiceRoot is already bound at " +
                   at(lineA));
  got = LAUNCH_ERROR(outGapRoot);
  CHECK(got == "output 0 of outGapRoot is never bound (__hpvm__bindOut "
               "binds output 1)");
  got = LAUNCH_ERROR(inTwiceRoot);
  CHECK(got == at(lineB) +
                   ": __hpvm__bindIn(leaf2, 2, 0): parameter 0 of "
                   "leaf2 is already bound at " +
                   at(bindAllLine));
}

TEST_CASE("Executor: misuse of node handles and node kinds is reported") {
  std::string got = LAUNCH_ERROR(foreignHandleRoot);
  CHECK(got == at(lineA) + ": __hpvm__bindIn: the node handle was not "
                           "created by innerMaker (handles are valid only in "
                           "the node function that created them)");
  got = LAUNCH_ERROR(mixedRoot);
  CHECK(got == "mixedLeaf both calls tensor operations and creates child "
               "nodes (at " +
                   at(lineA) + ")");
  int line = __LINE__ + 2;
  try {
    __hpvm__createNodeND(0, leaf1);
    got.clear();
  } catch (const hpvm::rt::UserError& e) {
    got = e.what();
  }
  CHECK(got == at(line) + ": __hpvm__createNodeND called outside a node "
                          "function of a launch");
}

TEST_CASE("Executor: shape errors name the node function and intrinsic") {
  CHECK(LAUNCH_ERROR(badShapeRoot) ==
        "node leaf2: __hpvm__tensor_add: cannot add 1x2x2x2 to 1x2x1x1 (need "
        "the same element count, one element per channel, or each dim the "
        "same or 1)");
  // A failed launch leaves the runtime usable.
  void* x = create4DTensor(0, nchw, 1, 2, 2, 2);
  CHECK(tensorRelu(x) == x);
}
