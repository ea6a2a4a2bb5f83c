// IrPrinterTest.cpp - dumpIr() and the scalar/shape formatting it uses, on
// graphs built by hand.
#include "ir/Printer.h"
#include "ir/Verify.h"
#include "support/Diagnostics.h"

#include <doctest/doctest.h>

#include <cstring>

using namespace hpvm::fe;

namespace {

std::shared_ptr<TensorData> zeros(std::vector<int64_t> dims) {
  auto t = std::make_shared<TensorData>();
  t->dims = std::move(dims);
  t->bytes.assign(static_cast<size_t>(t->numElements()) * 4, 0);
  return t;
}

} // namespace

TEST_CASE("IrPrinter: one line per node with shapes, operands and origins") {
  Graph g;
  g.input = g.addValue("input", DataType::Float, {1, 1, 28, 28});
  Value* w = g.addConstant("conv1.weight", zeros({32, 1, 5, 5}), 0);
  Value* c = g.addValue("c", DataType::Float, {1, 32, 28, 28});
  Node* conv =
      g.addNode(OpKind::Conv, {g.input, w}, c, {{"Conv_0", "Conv", 0}});
  conv->scalars = {Scalar::integer(2), Scalar::integer(2), Scalar::integer(1),
                   Scalar::integer(1)};
  Value* p = g.addValue("p", DataType::Float, {1, 32, 14, 14});
  Node* pool = g.addNode(OpKind::MaxPool, {c}, p,
                         {{"pool\n1", "MaxPool", 1}, {"#2", "Pad", 2}});
  pool->scalars = {Scalar::integer(2), Scalar::integer(2), Scalar::integer(0),
                   Scalar::integer(0), Scalar::integer(2), Scalar::integer(2)};
  Value* b = g.addValue("b", DataType::Float, {1, 32, 14, 14});
  Value* mean = g.addConstant("", zeros({1, 32, 1, 1}));
  Node* bn = g.addNode(OpKind::BatchNorm, {p, mean, mean, mean, mean}, b,
                       {{"bn", "BatchNormalization", 3}});
  bn->scalars = {Scalar::real(1e-05)};
  Value* r = g.addValue("r", DataType::Float, {-1, 32, 14, 14});
  Node* clip = g.addNode(OpKind::ClippedRelu, {b}, r, {{"clip", "Clip", 4}});
  clip->scalars = {Scalar::real(0.0), Scalar::real(6.0)};
  g.setOutput(r);
  verify(g);
  CHECK(dumpIr(g) ==
        "%1 = Conv(%input: 1x1x28x28, %conv1.weight: 32x1x5x5) -> 1x32x28x28"
        "  [pads 2 2 strides 1 1]  # Conv_0\n"
        "%2 = MaxPool(%1: 1x32x28x28) -> 1x32x14x14  [window 2 2 pads 0 0 "
        "strides 2 2]  # pool\\n1, #2\n"
        "%3 = BatchNorm(%2: 1x32x14x14, %const: 1x32x1x1, %const: 1x32x1x1, "
        "%const: 1x32x1x1, %const: 1x32x1x1) -> 1x32x14x14  [eps 1e-05]  # "
        "bn\n"
        "%4 = ClippedRelu(%3: 1x32x14x14) -> ?x32x14x14  [min 0 max 6]  # "
        "clip\n"
        "return %4: ?x32x14x14\n");
}

TEST_CASE("IrPrinter: ONNX-level nodes print their attributes") {
  Graph g;
  g.input = g.addValue("x", DataType::Float, {1, 3, 8, 8});
  Value* y = g.addValue("y", DataType::Float, {1, 3, 4, 4});
  Node* n = g.addNode(OpKind::OnnxMaxPool, {g.input}, y, {{"", "MaxPool", 5}});
  n->attrs["kernel_shape"] = std::vector<int64_t>{2, 2};
  n->attrs["auto_pad"] = std::string("NOTSET");
  n->attrs["scale"] = 0.1;
  g.setOutput(y);
  CHECK(dumpIr(g) == "%1 = OnnxMaxPool(%x: 1x3x8x8) -> 1x3x4x4  "
                     "[auto_pad='NOTSET' kernel_shape=[2 2] scale=0.1]  # #5\n"
                     "return %1: 1x3x4x4\n");
}

TEST_CASE("IrPrinter: scalars print in their shortest exact form") {
  CHECK(formatScalar(Scalar::integer(-3)) == "-3");
  CHECK(formatScalar(Scalar::real(1e-05)) == "1e-05");
  CHECK(formatScalar(Scalar::real(0.001)) == "0.001");
  CHECK(formatScalar(Scalar::real(6.0)) == "6");
  CHECK(formatScalar(Scalar::real(0.1 + 0.2)) == "0.30000000000000004");
  CHECK(formatShape({}) == "scalar");
  CHECK(formatShape({-1, 10}) == "?x10");
}

TEST_CASE("IrPrinter: names with control characters are escaped") {
  CHECK(escapeName("a\nb\tc\x01'\\") == "a\\nb\\tc\\x01\\'\\\\");
  // UTF-8 is kept; a byte outside a well-formed sequence (a lone lead or
  // continuation byte, an overlong form, a surrogate, past U+10FFFF) and C1
  // controls are escaped.
  CHECK(escapeName("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") ==
        "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  CHECK(escapeName("M\xb0mm") == "M\\xb0mm");
  CHECK(escapeName("a\xc3") == "a\\xc3");
  CHECK(escapeName("\xc0\xaf") == "\\xc0\\xaf");
  CHECK(escapeName("\xed\xa0\x80") == "\\xed\\xa0\\x80");
  CHECK(escapeName("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");
  CHECK(escapeName("\xc2\x85x") == "\\xc2\\x85x");
  CHECK(nodeContext("m.onnx", {"x\"; rm\n", "Conv", 3}) ==
        "m.onnx: node 'x\"; rm\\n' (Conv, #3)");
  CHECK(nodeContext("m.onnx", {"", "Relu", 4}) ==
        "m.onnx: node '#4' (Relu, #4)");
}
