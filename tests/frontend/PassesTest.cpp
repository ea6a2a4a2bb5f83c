// PassesTest.cpp - the simplification passes, checked on IR dumps before
// and after each one, and on the constants they rewrite.
#include "GraphQueries.h"
#include "LowerToHpvm.h"
#include "ir/Printer.h"
#include "ir/Verify.h"
#include "lower/Lowering.h"
#include "onnx/ModelLoader.h"
#include "passes/ConstantFolding.h"
#include "passes/Fusions.h"
#include "passes/LayoutRegions.h"
#include "passes/Simplify.h"
#include "passes/TokenOrder.h"
#include "support/Diagnostics.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace hpvm::fe;
using namespace hpvm::fe::test;

namespace {

/// Loads a model given as protobuf text (written to a temporary file).
std::unique_ptr<Graph> loadText(const std::string& text) {
  char path[] = "/tmp/passes_test_XXXXXX.onnxtxt";
  int fd = mkstemps(path, 8);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(path) << text;
  std::unique_ptr<Graph> g;
  try {
    g = loadModel(path, {});
  } catch (...) {
    std::remove(path);
    throw;
  }
  std::remove(path);
  return g;
}

/// A one-input model text: input 1x2x6x6 named "input", \p body holding the
/// nodes and initializers, output \p out with shape \p outDims.
std::string model(const std::string& body, const std::string& out,
                  const std::string& outDims, int opset = 13) {
  auto dims = [](const std::string& list) {
    std::string s;
    size_t start = 0;
    while (start < list.size()) {
      size_t end = list.find(',', start);
      if (end == std::string::npos)
        end = list.size();
      s += "dim { dim_value: " + list.substr(start, end - start) + " } ";
      start = end + 1;
    }
    return s;
  };
  return "ir_version: 7 opset_import { version: " + std::to_string(opset) +
         " } graph { name: 'g' " + body +
         " input { name: 'input' type { tensor_type { elem_type: 1 shape { " +
         dims("1,2,6,6") + "} } } } output { name: '" + out +
         "' type { tensor_type { elem_type: 1 shape { " + dims(outDims) +
         "} } } } }";
}

} // namespace

TEST_CASE("Passes: Pad is folded into the following Conv") {
  std::unique_ptr<Graph> g = loadModel(fixture("Pad"), {});
  CHECK(dumpIr(*g) ==
        "%1 = OnnxPad(%input: 1x2x6x6, %pads: 8) -> 1x2x8x8  [mode='constant']"
        "  # pad\n"
        "%2 = OnnxConv(%1: 1x2x8x8, %w: 2x2x3x3) -> 1x2x6x6  "
        "[kernel_shape=[3 3]]  # conv\n"
        "return %2: 1x2x6x6\n");
  foldPads(*g);
  verify(*g);
  CHECK(dumpIr(*g) ==
        "%1 = OnnxConv(%input: 1x2x6x6, %w: 2x2x3x3) -> 1x2x6x6  "
        "[auto_pad='NOTSET' kernel_shape=[3 3] pads=[1 1 1 1]]  # conv, pad\n"
        "return %1: 1x2x6x6\n");
}

TEST_CASE("Passes: the view(x.size(0), -1) shape computation folds away") {
  std::unique_ptr<Graph> g = loadModel(fixture("Gather"), {});
  REQUIRE(g->nodes().size() == 9);
  foldConstants(*g);
  verify(*g);
  CHECK(dumpIr(*g) ==
        "%1 = OnnxReshape(%input: 1x2x6x6, %view_target: 2) -> 1x72  "
        "# view_Reshape\n"
        "%2 = OnnxGemm(%1: 1x72, %w: 3x72) -> 1x3  [transB=1]  # fc\n"
        "return %2: 1x3\n");
  const Value* target = g->nodes()[0]->inputs[1];
  REQUIRE(target->isConstant());
  CHECK(target->constant->toInts() == std::vector<int64_t>{1, -1});
  aliasReshapes(*g);
  verify(*g);
  CHECK(dumpIr(*g) == "%1 = OnnxGemm(%input: 1x2x6x6, %w: 3x72) -> 1x3  "
                      "[transB=1]  # fc\n"
                      "return %1: 1x3\n");
}

TEST_CASE("Passes: Identity and inference Dropout are removed") {
  std::unique_ptr<Graph> g = loadModel(fixture("Dropout"), {});
  removeIdentities(*g);
  eliminateDeadNodes(*g);
  verify(*g);
  CHECK(dumpIr(*g) == "%1 = OnnxRelu(%input: 1x2x6x6) -> 1x2x6x6  # relu\n"
                      "return %1: 1x2x6x6\n");
  g = loadModel(fixture("Identity"), {});
  removeIdentities(*g);
  CHECK(dumpIr(*g) == "%1 = OnnxRelu(%input: 1x2x6x6) -> 1x2x6x6  # relu\n"
                      "return %1: 1x2x6x6\n");
}

TEST_CASE("Passes: nodes that do not reach the output are eliminated") {
  std::unique_ptr<Graph> g = loadText(model(
      "node { input: 'input' output: 'dead' name: 'unused' op_type: 'Tanh' } "
      "node { input: 'input' output: 'y' name: 'relu' op_type: 'Relu' }",
      "y", "1,2,6,6"));
  REQUIRE(g->nodes().size() == 2);
  eliminateDeadNodes(*g);
  verify(*g);
  CHECK(dumpIr(*g) == "%1 = OnnxRelu(%input: 1x2x6x6) -> 1x2x6x6  # relu\n"
                      "return %1: 1x2x6x6\n");
}

TEST_CASE("Passes: Gemm transB, alpha and beta are folded into constants") {
  std::unique_ptr<Graph> g = loadModel(fixture("Gemm"), {});
  const Node& gemm = *g->nodes()[1];
  std::vector<float> w = gemm.inputs[1]->constant->toFloats(); // 4 x 72
  std::vector<float> b = gemm.inputs[2]->constant->toFloats(); // 4
  lowerToHpvm(*g);
  REQUIRE(g->nodes().size() == 2);
  const Value* weight = g->nodes()[0]->inputs[1];
  const Value* bias = g->nodes()[1]->inputs[1];
  CHECK(weight->shape == std::vector<int64_t>{1, 1, 72, 4});
  CHECK(bias->shape == std::vector<int64_t>{1, 4, 1, 1});
  std::vector<float> wt = weight->constant->toFloats();
  std::vector<float> bt = bias->constant->toFloats();
  REQUIRE(wt.size() == 288);
  for (int k = 0; k < 72; ++k)
    for (int n = 0; n < 4; ++n)
      CHECK(wt[static_cast<size_t>(k * 4 + n)] ==
            0.5f * w[static_cast<size_t>(n * 72 + k)]);
  for (int n = 0; n < 4; ++n)
    CHECK(bt[static_cast<size_t>(n)] ==
          static_cast<float>(2.0 * b[static_cast<size_t>(n)]));
}

TEST_CASE("Passes: asymmetric pads fold when the extra pad is never read") {
  // 6x6, 2x2 window, stride 2, pads bottom/right 1: symmetric pad 0 gives
  // the same 3 outputs per axis, and the extra row/column is never read.
  std::unique_ptr<Graph> g = loadText(model(
      "node { input: 'input' input: 'w' output: 'y' name: 'conv' op_type: "
      "'Conv' attribute { name: 'kernel_shape' ints: 2 ints: 2 type: INTS } "
      "attribute { name: 'strides' ints: 2 ints: 2 type: INTS } attribute { "
      "name: 'pads' ints: 0 ints: 0 ints: 1 ints: 1 type: INTS } } "
      "initializer { name: 'w' dims: 1 dims: 2 dims: 2 dims: 2 data_type: 1 "
      "float_data: [1, 2, 3, 4, 5, 6, 7, 8] }",
      "y", "1,1,3,3"));
  lowerToHpvm(*g);
  CHECK(dumpIr(*g) == "%1 = Conv(%input: 1x2x6x6, %w: 1x2x2x2) -> 1x1x3x3  "
                      "[pads 0 0 strides 2 2]  # conv\n"
                      "return %1: 1x1x3x3\n");
}

TEST_CASE("Passes: a scalar added to an activation becomes a per-channel "
          "constant") {
  std::unique_ptr<Graph> g = loadText(
      model("node { input: 'input' input: 'c' output: 'y' name: 'add' op_type: "
            "'Add' } initializer { name: 'c' data_type: 1 float_data: 0.25 }",
            "y", "1,2,6,6"));
  lowerToHpvm(*g);
  CHECK(dumpIr(*g) == "%1 = Add(%input: 1x2x6x6, %c: 1x2x1x1) -> 1x2x6x6  "
                      "# add\n"
                      "return %1: 1x2x6x6\n");
  CHECK(g->nodes()[0]->inputs[1]->constant->toFloats() ==
        std::vector<float>{0.25f, 0.25f});
}

TEST_CASE("Passes: Clip(0, inf) is a Relu and opset-6 Clip reads "
          "attributes") {
  std::unique_ptr<Graph> g = loadText(model(
      "node { input: 'input' output: 'a' name: 'relu6' op_type: 'Clip' "
      "attribute { name: 'min' f: 0 type: FLOAT } attribute { name: 'max' "
      "f: 6 type: FLOAT } } node { input: 'a' output: 'y' name: 'relu' "
      "op_type: 'Clip' attribute { name: 'min' f: 0 type: FLOAT } }",
      "y", "1,2,6,6", 10));
  lowerToHpvm(*g);
  CHECK(dumpIr(*g) == "%1 = ClippedRelu(%input: 1x2x6x6) -> 1x2x6x6  [min 0 "
                      "max 6]  # relu6\n"
                      "%2 = Relu(%1: 1x2x6x6) -> 1x2x6x6  # relu\n"
                      "return %2: 1x2x6x6\n");
}

TEST_CASE("Passes: zero Pad after Relu folds into MaxPool") {
  std::unique_ptr<Graph> g = loadText(model(
      "node { input: 'input' output: 'r' name: 'relu' op_type: 'Relu' } "
      "node { input: 'r' input: 'pads' output: 'p' name: 'pad' op_type: "
      "'Pad' } node { input: 'p' output: 'y' name: 'pool' op_type: "
      "'MaxPool' attribute { name: 'kernel_shape' ints: 3 ints: 3 type: "
      "INTS } attribute { name: 'strides' ints: 2 ints: 2 type: INTS } } "
      "initializer { name: 'pads' dims: 8 data_type: 7 int64_data: [0, 0, 1, "
      "1, 0, 0, 1, 1] }",
      "y", "1,2,3,3"));
  lowerToHpvm(*g);
  CHECK(dumpIr(*g) == "%1 = Relu(%input: 1x2x6x6) -> 1x2x6x6  # relu\n"
                      "%2 = MaxPool(%1: 1x2x6x6) -> 1x2x3x3  [window 3 3 pads "
                      "1 1 strides 2 2]  # pool, pad\n"
                      "return %2: 1x2x3x3\n");
}

TEST_CASE("Passes: opset-13 Softmax's default axis is the class axis") {
  std::unique_ptr<Graph> g = loadText(model(
      "node { input: 'input' output: 'f' name: 'flatten' op_type: 'Flatten' }"
      " node { input: 'f' input: 'w' output: 'g' name: 'fc' op_type: 'MatMul'"
      " } node { input: 'g' output: 'y' name: 'softmax' op_type: 'Softmax' }"
      " initializer { name: 'w' dims: 72 dims: 1 data_type: 1 float_data: ["
      "0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,"
      " 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,"
      " 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0"
      "] }",
      "y", "1,1"));
  lowerToHpvm(*g);
  CHECK(dumpIr(*g) == "%1 = Mul(%input: 1x2x6x6, %w: 1x1x72x1) -> 1x1x1x1  "
                      "# fc\n"
                      "%2 = Softmax(%1: 1x1x1x1) -> 1x1x1x1  # softmax\n"
                      "return %2: 1x1x1x1\n");
}

TEST_CASE("Passes: zero Pad folds into AveragePool, counting the pads") {
  std::unique_ptr<Graph> g = loadText(model(
      "node { input: 'input' input: 'pads' output: 'p' name: 'pad' op_type: "
      "'Pad' } node { input: 'p' output: 'y' name: 'pool' op_type: "
      "'AveragePool' attribute { name: 'kernel_shape' ints: 2 ints: 2 type: "
      "INTS } attribute { name: 'strides' ints: 2 ints: 2 type: INTS } } "
      "initializer { name: 'pads' dims: 8 data_type: 7 int64_data: [0, 0, 1, "
      "1, 0, 0, 1, 1] }",
      "y", "1,2,4,4"));
  foldPads(*g);
  CHECK(dumpIr(*g) == "%1 = OnnxAveragePool(%input: 1x2x6x6) -> 1x2x4x4  "
                      "[auto_pad='NOTSET' count_include_pad=1 "
                      "kernel_shape=[2 2] pads=[1 1 1 1] strides=[2 2]]  # "
                      "pool, pad\n"
                      "return %1: 1x2x4x4\n");
  lowerNodes(*g);
  CHECK(dumpIr(*g) == "%1 = AvgPool(%input: 1x2x6x6) -> 1x2x4x4  [window 2 "
                      "2 pads 1 1 strides 2 2]  # pool, pad\n"
                      "return %1: 1x2x4x4\n");
}

TEST_CASE("Passes: view(-1, K) on a symbolic batch aliases before Gemm") {
  std::unique_ptr<Graph> g = loadText(
      "ir_version: 7 opset_import { version: 13 } graph { name: 'g' "
      "node { input: 'input' input: 'shape' output: 'f' name: 'view' "
      "op_type: 'Reshape' } node { input: 'f' input: 'w' output: 'y' name: "
      "'fc' op_type: 'Gemm' } initializer { name: 'shape' dims: 2 "
      "data_type: 7 int64_data: [-1, 8] } initializer { name: 'w' dims: 8 "
      "dims: 1 data_type: 1 float_data: [1, 2, 3, 4, 5, 6, 7, 8] } "
      "input { name: 'input' type { tensor_type { elem_type: 1 shape { "
      "dim { dim_param: 'N' } dim { dim_value: 2 } dim { dim_value: 2 } "
      "dim { dim_value: 2 } } } } } output { name: 'y' type { tensor_type { "
      "elem_type: 1 shape { dim { dim_param: 'N' } dim { dim_value: 1 } } } "
      "} } }");
  lowerToHpvm(*g);
  CHECK(dumpIr(*g) == "%1 = Mul(%input: 1x2x2x2, %w: 1x1x8x1) -> 1x1x1x1  "
                      "# fc\n"
                      "return %1: 1x1x1x1\n");
}

TEST_CASE("Passes: a Split whose sizes are computed from a shape becomes "
          "Slices once they fold") {
  // ONNX's shape inference cannot place the outputs (the sizes are no
  // constant yet); folding gives them, and the Split nodes the loader left
  // become channel slices.
  std::unique_ptr<Graph> g = loadText(
      "ir_version: 7 opset_import { version: 13 } graph { name: 'g' "
      "node { input: 'input' input: 'input' output: 'pair' op_type: "
      "'Concat' attribute { name: 'axis' i: 1 type: INT } } "
      "node { input: 'input' output: 'shape' op_type: 'Shape' } "
      "node { input: 'shape' input: 'one' input: 'two' output: 'c' "
      "op_type: 'Slice' } "
      "node { input: 'c' input: 'c' output: 'sizes' op_type: 'Concat' "
      "attribute { name: 'axis' i: 0 type: INT } } "
      "node { input: 'pair' input: 'sizes' output: 'a' output: 'b' name: "
      "'split' op_type: 'Split' attribute { name: 'axis' i: 1 type: INT } } "
      "node { input: 'b' input: 'a' output: 'y' name: 'sub' op_type: 'Sub' "
      "} initializer { name: 'one' dims: 1 data_type: 7 int64_data: [1] } "
      "initializer { name: 'two' dims: 1 data_type: 7 int64_data: [2] } "
      "input { name: 'input' type { tensor_type { elem_type: 1 shape { "
      "dim { dim_param: 'N' } dim { dim_value: 3 } dim { dim_value: 4 } "
      "dim { dim_value: 4 } } } } } output { name: 'y' type { tensor_type { "
      "elem_type: 1 shape { dim { dim_param: 'N' } dim { dim_value: 3 } dim "
      "{ dim_value: 4 } dim { dim_value: 4 } } } } } }");
  CHECK(g->nodes()[4]->kind == OpKind::OnnxSplit);
  lowerToHpvm(*g);
  CHECK(dumpIr(*g) ==
        "%1 = Concat(%input: 1x3x4x4, %input: 1x3x4x4) -> 1x6x4x4  # #0\n"
        "%2 = ChannelSlice(%1: 1x6x4x4) -> 1x3x4x4  [begin 0 end 3]  # split\n"
        "%3 = ChannelSlice(%1: 1x6x4x4) -> 1x3x4x4  [begin 3 end 6]  # split\n"
        "%4 = Sub(%3: 1x3x4x4, %2: 1x3x4x4) -> 1x3x4x4  # sub\n"
        "return %4: 1x3x4x4\n");
}

TEST_CASE("Passes: sequence-first tokens are put batch first: a merged "
          "Transpose split, per-token ops on B x T x D, the mean over axis "
          "0 taken over the tokens") {
  // B x D x T tokens made T x B x D at once (torch.onnx merges
  // transpose(1, 2) and permute(1, 0, 2) into one (2, 0, 1)), a Linear
  // and a ReLU on them, the mean over axis 0.
  const std::string text =
      "ir_version: 7 opset_import { version: 13 } graph { name: 'g' "
      "node { input: 'input' input: 'shape' output: 'bdt' name: 'view' "
      "op_type: 'Reshape' } "
      "node { input: 'bdt' output: 'tbd' name: 'permute' op_type: "
      "'Transpose' attribute { name: 'perm' ints: [2, 0, 1] type: INTS } } "
      "node { input: 'tbd' input: 'w' output: 'lin' name: 'linear' op_type: "
      "'MatMul' } "
      "node { input: 'lin' output: 'act' name: 'relu' op_type: 'Relu' } "
      "node { input: 'act' output: 'y' name: 'mean' op_type: 'ReduceMean' "
      "attribute { name: 'axes' ints: [0] type: INTS } attribute { name: "
      "'keepdims' i: 0 type: INT } } "
      "initializer { name: 'shape' dims: 3 data_type: 7 int64_data: [1, 4, "
      "6] } initializer { name: 'w' dims: 4 dims: 4 data_type: 1 float_data: "
      "[1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1] } "
      "input { name: 'input' type { tensor_type { elem_type: 1 shape { "
      "dim { dim_value: 1 } dim { dim_value: 4 } dim { dim_value: 2 } "
      "dim { dim_value: 3 } } } } } output { name: 'y' type { tensor_type { "
      "elem_type: 1 shape { dim { dim_value: 1 } dim { dim_value: 4 } } } } "
      "} }";
  std::unique_ptr<Graph> g = loadText(text);
  foldConstants(*g);
  makeTokensBatchFirst(*g);
  CHECK(dumpIr(*g) ==
        "%1 = OnnxReshape(%input: 1x4x2x3, %shape: 3) -> 1x4x6  # view\n"
        "%2 = OnnxTranspose(%1: 1x4x6) -> 1x6x4  [perm=[0 2 1]]  # permute\n"
        "%3 = OnnxMatMul(%2: 1x6x4, %w: 4x4) -> 1x6x4  # linear\n"
        "%4 = OnnxRelu(%3: 1x6x4) -> 1x6x4  # relu\n"
        "%5 = OnnxReduceMean(%4: 1x6x4) -> 1x4  [axes=[1] keepdims=0]  # "
        "mean\n"
        "return %5: 1x4\n");
  // Then the token stage: a 1x1 conv, a ReLU and the mean, channel-first.
  g = loadText(text);
  lowerToHpvm(*g);
  CHECK(dumpIr(*g) ==
        "%1 = Conv(%input: 1x4x2x3, %w: 4x4x1x1) -> 1x4x2x3  [pads 0 0 "
        "strides 1 1]  # linear\n"
        "%2 = Relu(%1: 1x4x2x3) -> 1x4x2x3  # relu\n"
        "%3 = AvgPool(%2: 1x4x2x3) -> 1x4x1x1  [window 2 3 pads 0 0 strides "
        "1 1]  # mean\n"
        "return %3: 1x4x1x1\n");
}

TEST_CASE("Passes: afterPass sees every pass in order") {
  std::unique_ptr<Graph> g = loadModel(fixture("Relu"), {});
  std::vector<std::string> passes;
  PipelineOptions opts;
  opts.afterPass = [&](const std::string& pass, const Graph&) {
    passes.push_back(pass);
  };
  lowerToHpvm(*g, opts);
  CHECK(passes == std::vector<std::string>{
                      "eliminate-dead-nodes", "expand-quantized-ops",
                      "fold-constants", "remove-identities",
                      "eliminate-dead-nodes", "fold-pads", "alias-reshapes",
                      "fuse-channel-shuffles", "fuse-layer-norms",
                      "make-tokens-batch-first", "make-anchor-maps-images",
                      "make-sequences-images", "make-tokens-channel-first",
                      "fuse-gelus", "fuse-silus", "make-channel-first", "lower",
                      "eliminate-dead-nodes"});
}

TEST_CASE("Lowering: a Concat of more than 64 activations becomes a tree of "
          "concats, and a one-input Concat disappears") {
  std::string inputs;
  for (int i = 0; i < 70; ++i)
    inputs += "input: 'r' ";
  std::unique_ptr<Graph> g = loadText(
      model("node { input: 'input' output: 'r' name: 'relu' op_type: 'Relu' }"
            " node { " +
                inputs +
                "output: 'c' name: 'join' op_type: 'Concat' attribute { "
                "name: 'axis' i: 1 type: INT } }"
                " node { input: 'c' output: 'y' name: 'alone' op_type: "
                "'Concat' attribute { name: 'axis' i: -3 type: INT } }",
            "y", "1,140,6,6"));
  lowerToHpvm(*g);
  auto parts = [](int n) {
    std::string s;
    for (int i = 0; i < n; ++i)
      s += std::string(i ? ", " : "") + "%1: 1x2x6x6";
    return s;
  };
  CHECK(dumpIr(*g) ==
        "%1 = Relu(%input: 1x2x6x6) -> 1x2x6x6  # relu\n"
        "%2 = Concat(" +
            parts(64) +
            ") -> 1x128x6x6  # join\n"
            "%3 = Concat(" +
            parts(6) +
            ") -> 1x12x6x6  # join\n"
            "%4 = Concat(%2: 1x128x6x6, %3: 1x12x6x6) -> 1x140x6x6  # join\n"
            "return %4: 1x140x6x6\n");
}

TEST_CASE("Passes: constant Sub, Div, Transpose and Slice fold") {
  // t = [[1, 2, 3], [4, 5, 6]]^T = [[1, 4], [2, 5], [3, 6]]; rows 1..2,
  // column 1: [5, 6]; (x - 1) / 2 = [2, 2.5], broadcast per channel.
  std::unique_ptr<Graph> g = loadText(model(
      "initializer { name: 'm' dims: 2 dims: 3 data_type: 1 float_data: 1 "
      "float_data: 2 float_data: 3 float_data: 4 float_data: 5 float_data: 6 "
      "} initializer { name: 's' dims: 2 data_type: 7 int64_data: 1 "
      "int64_data: 1 } initializer { name: 'e' dims: 2 data_type: 7 "
      "int64_data: 3 int64_data: 2 } initializer { name: 'one' data_type: 1 "
      "float_data: 1 } initializer { name: 'two' data_type: 1 float_data: 2 "
      "} initializer { name: 'shape' dims: 3 data_type: 7 int64_data: 2 "
      "int64_data: 1 int64_data: 1 }"
      " node { input: 'm' output: 't' name: 'tr' op_type: 'Transpose' "
      "attribute { name: 'perm' ints: 1 ints: 0 type: INTS } }"
      " node { input: 't' input: 's' input: 'e' output: 'sl' name: 'slice' "
      "op_type: 'Slice' }"
      " node { input: 'sl' input: 'one' output: 'd' name: 'sub' op_type: "
      "'Sub' }"
      " node { input: 'd' input: 'two' output: 'q' name: 'div' op_type: "
      "'Div' }"
      " node { input: 'q' input: 'shape' output: 'c' name: 'r' op_type: "
      "'Reshape' }"
      " node { input: 'input' input: 'c' output: 'y' name: 'add' op_type: "
      "'Add' }",
      "y", "1,2,6,6"));
  foldConstants(*g);
  REQUIRE(g->nodes().size() == 1);
  const Value* c = g->nodes()[0]->inputs[1];
  REQUIRE(c->isConstant());
  CHECK(c->constant->dims == std::vector<int64_t>{2, 1, 1});
  CHECK(c->constant->toFloats() == std::vector<float>{2.0f, 2.5f});
}

TEST_CASE("Passes: constant Pow, Sqrt and Erf fold") {
  // erf(sqrt([-3, 4]^2) - 3) = erf([0, 1]).
  std::unique_ptr<Graph> g = loadText(model(
      "initializer { name: 'c' dims: 2 dims: 1 dims: 1 data_type: 1 "
      "float_data: -3 float_data: 4 } initializer { name: 'two' data_type: 1 "
      "float_data: 2 } initializer { name: 'three' data_type: 1 float_data: "
      "3 }"
      " node { input: 'c' input: 'two' output: 'p' name: 'pow' op_type: "
      "'Pow' }"
      " node { input: 'p' output: 's' name: 'sqrt' op_type: 'Sqrt' }"
      " node { input: 's' input: 'three' output: 'd' name: 'sub' op_type: "
      "'Sub' }"
      " node { input: 'd' output: 'e' name: 'erf' op_type: 'Erf' }"
      " node { input: 'input' input: 'e' output: 'y' name: 'add' op_type: "
      "'Add' }",
      "y", "1,2,6,6"));
  foldConstants(*g);
  REQUIRE(g->nodes().size() == 1);
  const Value* c = g->nodes()[0]->inputs[1];
  REQUIRE(c->isConstant());
  CHECK(c->constant->toFloats() == std::vector<float>{0.f, std::erf(1.f)});
}

TEST_CASE("Passes: the class-token broadcast (ConstantOfShape, Equal, Where, "
          "Expand) folds") {
  // x.expand(1, -1, -1, -1) of a 2x1x1 constant as PyTorch exports it:
  // ones = [1, 1, 1, 1]; where(target == -ones, ones, target) = [1, 1, 1,
  // 1]; expanding broadcasts the constant to 1x2x1x1.
  std::unique_ptr<Graph> g = loadText(model(
      "initializer { name: 'rank' dims: 1 data_type: 7 int64_data: 4 }"
      " initializer { name: 'minus1' dims: 1 data_type: 7 int64_data: -1 }"
      " initializer { name: 'target' dims: 4 data_type: 7 int64_data: 1 "
      "int64_data: -1 int64_data: -1 int64_data: -1 }"
      " initializer { name: 'c' dims: 2 dims: 1 dims: 1 data_type: 1 "
      "float_data: 0.5 float_data: -2 }"
      " node { input: 'rank' output: 'ones' name: 'cos' op_type: "
      "'ConstantOfShape' attribute { name: 'value' type: TENSOR t { dims: 1 "
      "data_type: 7 int64_data: 1 } } }"
      " node { input: 'ones' input: 'minus1' output: 'neg' name: 'mul' "
      "op_type: 'Mul' }"
      " node { input: 'target' input: 'neg' output: 'keep' name: 'eq' "
      "op_type: 'Equal' }"
      " node { input: 'keep' input: 'ones' input: 'target' output: 'shape' "
      "name: 'where' op_type: 'Where' }"
      " node { input: 'c' input: 'shape' output: 'e' name: 'expand' "
      "op_type: 'Expand' }"
      " node { input: 'input' input: 'e' output: 'y' name: 'add' op_type: "
      "'Add' }",
      "y", "1,2,6,6"));
  foldConstants(*g);
  REQUIRE(g->nodes().size() == 1);
  const Value* c = g->nodes()[0]->inputs[1];
  REQUIRE(c->isConstant());
  CHECK(c->constant->dims == std::vector<int64_t>{1, 2, 1, 1});
  CHECK(c->constant->toFloats() == std::vector<float>{0.5f, -2.f});
}

TEST_CASE("Passes: Expand broadcasts both ways and ConstantOfShape "
          "defaults to float zeros") {
  // expand([[0], .., [5]] (6x1), [1, 6]) + ConstantOfShape([6]) = 6x6,
  // row i all i.
  std::unique_ptr<Graph> g = loadText(model(
      "initializer { name: 'c' dims: 6 dims: 1 data_type: 1 float_data: 0 "
      "float_data: 1 float_data: 2 float_data: 3 float_data: 4 float_data: 5 "
      "}"
      " initializer { name: 's' dims: 2 data_type: 7 int64_data: 1 "
      "int64_data: 6 }"
      " initializer { name: 'n' dims: 1 data_type: 7 int64_data: 6 }"
      " node { input: 'c' input: 's' output: 'e' name: 'expand' op_type: "
      "'Expand' }"
      " node { input: 'n' output: 'z' name: 'zeros' op_type: "
      "'ConstantOfShape' }"
      " node { input: 'e' input: 'z' output: 'w' name: 'sum' op_type: 'Add' }"
      " node { input: 'input' input: 'w' output: 'y' name: 'add' op_type: "
      "'Add' }",
      "y", "1,2,6,6"));
  foldConstants(*g);
  REQUIRE(g->nodes().size() == 1);
  const Value* c = g->nodes()[0]->inputs[1];
  REQUIRE(c->isConstant());
  CHECK(c->constant->dims == std::vector<int64_t>{6, 6});
  std::vector<float> want;
  for (int i = 0; i < 6; ++i)
    want.insert(want.end(), 6, float(i));
  CHECK(c->constant->toFloats() == want);
}

TEST_CASE("Passes: Swin's index arithmetic (Range, Mod, ScatterND, Not) "
          "folds") {
  // The fixture replaces channel 1 of bias c by upd through ScatterND at
  // index Mod(Range(1, 2, 1), 2) = [1], kept by Where(Not(Equal([1],
  // 0))).
  std::unique_ptr<Graph> g = loadModel(fixture("ScatterND"), {});
  std::vector<float> c, upd;
  for (const auto& v : g->values()) {
    if (v->name == "c")
      c = v->constant->toFloats();
    if (v->name == "upd")
      upd = v->constant->toFloats();
  }
  REQUIRE(c.size() == 2);
  REQUIRE(upd.size() == 1);
  foldConstants(*g);
  REQUIRE(g->nodes().size() == 1);
  const Value* w = g->nodes()[0]->inputs[1];
  REQUIRE(w->isConstant());
  CHECK(w->constant->dims == std::vector<int64_t>{2, 1, 1});
  CHECK(w->constant->toFloats() == std::vector<float>{c[0], upd[0]});
}

TEST_CASE("Passes: Mod's remainder takes the divisor's sign and Range "
          "counts down") {
  // Range(5, 1, -2) = [5, 3]; Mod([5, 3], -3) = [-1, 0] (Python's %).
  std::unique_ptr<Graph> g = loadText(model(
      "initializer { name: 's' data_type: 7 int64_data: 5 }"
      " initializer { name: 'l' data_type: 7 int64_data: 1 }"
      " initializer { name: 'd' data_type: 7 int64_data: -2 }"
      " initializer { name: 'm3' data_type: 7 int64_data: -3 }"
      " initializer { name: 'shape' dims: 3 data_type: 7 int64_data: 2 "
      "int64_data: 1 int64_data: 1 }"
      " node { input: 's' input: 'l' input: 'd' output: 'r' name: 'range' "
      "op_type: 'Range' }"
      " node { input: 'r' input: 'm3' output: 'm' name: 'mod' op_type: "
      "'Mod' }"
      " node { input: 'm' output: 'f' name: 'cast' op_type: 'Cast' "
      "attribute { name: 'to' type: INT i: 1 } }"
      " node { input: 'f' input: 'shape' output: 'b' name: 'reshape' "
      "op_type: 'Reshape' }"
      " node { input: 'input' input: 'b' output: 'y' name: 'add' op_type: "
      "'Add' }",
      "y", "1,2,6,6"));
  foldConstants(*g);
  REQUIRE(g->nodes().size() == 1);
  const Value* b = g->nodes()[0]->inputs[1];
  REQUIRE(b->isConstant());
  CHECK(b->constant->toFloats() == std::vector<float>{-1.f, 0.f});
}

TEST_CASE("Passes: zero padding before MaxPool of signed values is a pad of "
          "its own") {
  // Folded into the pool, the zeros would lose to negative inputs: pad
  // stays an op (1 row and column each side) and the pool pads nothing.
  std::unique_ptr<Graph> g = loadModel(fixture("pad_before_maxpool"), {});
  lowerToHpvm(*g);
  REQUIRE(kindsOf(*g) == std::vector<OpKind>{OpKind::Pad, OpKind::MaxPool});
  const Node* pad = firstOf(*g, OpKind::Pad);
  std::vector<int64_t> s;
  for (const Scalar& x : pad->scalars)
    s.push_back(x.i);
  CHECK(s == std::vector<int64_t>{1, 1, 1, 1, 0});
  CHECK(pad->output->shape == std::vector<int64_t>{1, 2, 8, 8});
  CHECK(g->output0()->shape == std::vector<int64_t>{1, 2, 7, 7});
}

TEST_CASE("Passes: Swin's windows become channel-first: pad, 1x1 convs, "
          "window_attention, spatial_slice, concat") {
  // torchvision's SwinTransformer at toy size as torch.onnx writes it: 5x5
  // pixels of 8 features padded to 3x3 windows of 2x2 (two blocks, the
  // second shifted by 1), patch merging (padded to 6x6, four strided
  // slices, concat) to 3x3 pixels of 16, padded to 2x2 windows, one block
  // of 2 heads.
  std::unique_ptr<Graph> g = loadModel(fixture("swin_tiny"), {});
  lowerToHpvm(*g);
  std::vector<const Node*> windows, pads, slices;
  for (const auto& n : g->nodes()) {
    CHECK(std::string(opKindName(n->kind)).rfind("Onnx", 0) != 0);
    if (n->kind == OpKind::WindowAttention)
      windows.push_back(n.get());
    if (n->kind == OpKind::Pad)
      pads.push_back(n.get());
    if (n->kind == OpKind::SpatialSlice)
      slices.push_back(n.get());
  }
  REQUIRE(windows.size() == 3);
  auto scalars = [](const Node* n) {
    std::vector<int64_t> s;
    for (const Scalar& x : n->scalars)
      s.push_back(x.i);
    return s;
  };
  // Window 2 x 2, heads, shift.
  CHECK(scalars(windows[0]) == std::vector<int64_t>{2, 2, 1, 0, 0});
  CHECK(scalars(windows[1]) == std::vector<int64_t>{2, 2, 1, 1, 1});
  CHECK(scalars(windows[2]) == std::vector<int64_t>{2, 2, 2, 0, 0});
  // Queries, keys and values of the padded 6x6 (then 4x4) pixels; the
  // relative position bias per head; a mask per window where shifted,
  // else one of zeros.
  CHECK(windows[0]->inputs[0]->shape == std::vector<int64_t>{1, 24, 6, 6});
  CHECK(windows[2]->inputs[0]->shape == std::vector<int64_t>{1, 48, 4, 4});
  CHECK(windows[2]->inputs[1]->shape == std::vector<int64_t>{1, 2, 4, 4});
  CHECK(windows[0]->inputs[2]->shape == std::vector<int64_t>{1, 1, 4, 4});
  CHECK(windows[0]->inputs[2]->constant->toFloats() ==
        std::vector<float>(16, 0.f));
  REQUIRE(windows[1]->inputs[2]->shape == std::vector<int64_t>{1, 9, 4, 4});
  // The shifted mask: the last window (bottom right) mixes pixels rolled
  // in from the other side; torchvision masks those pairs with -100.
  const std::vector<float> mask = windows[1]->inputs[2]->constant->toFloats();
  CHECK(std::count(mask.begin(), mask.begin() + 16, -100.f) == 0);
  CHECK(std::count(mask.end() - 16, mask.end(), -100.f) > 0);
  // Padding to whole windows: one row and column at the bottom right.
  REQUIRE(pads.size() == 4);
  for (const Node* p : pads) {
    REQUIRE(p->scalars.size() == 5);
    CHECK(scalars(p) == std::vector<int64_t>{0, 0, 1, 1, 0});
    CHECK(p->scalars[4].d == 0.0);
  }
  // Crops after each window attention (rows and columns in one) and patch
  // merging's 6 (the two row slices read twice).
  REQUIRE(slices.size() == 3 + 6);
  CHECK(scalars(slices[0]) == std::vector<int64_t>{0, 0, 1, 1, 5, 5});
  CHECK(g->output0()->shape == std::vector<int64_t>{1, 3, 1, 1});
}

TEST_CASE("Passes: Swin's windows stay as they are when the attention "
          "differs from the exporter's") {
  // Queries scaled by 1 instead of 1/sqrt(8): not window_attention; the
  // region is left for the lowering to refuse.
  std::unique_ptr<Graph> g = loadModel(fixture("swin_tiny"), {});
  eliminateDeadNodes(*g);
  foldConstants(*g);
  removeIdentities(*g);
  fuseLayerNorms(*g);
  fuseGelus(*g);
  Node* scale = nullptr;
  for (const auto& n : g->nodes())
    if (n->kind == OpKind::OnnxMul && n->inputs[1]->isConstant() &&
        n->inputs[1]->constant->numElements() == 1 &&
        n->origins.front().name.find("features.1.0/attn") != std::string::npos)
      scale = n.get();
  REQUIRE(scale != nullptr);
  setScalarInput(*g, scale, 1, 1.f);
  makeChannelFirst(*g);
  CHECK(firstOf(*g, OpKind::WindowAttention) == nullptr);
  CHECK_THROWS_AS(lowerNodes(*g), UserError);
}
