// ErrorTest.cpp - must-fail models: each asserts the exact diagnostic.
#include "LowerToHpvm.h"
#include "onnx/ModelLoader.h"
#include "support/Diagnostics.h"

#include <doctest/doctest.h>

#include <string>

using namespace hpvm::fe;

namespace {

std::string errorFixture(const std::string& name) {
  return std::string(HPVM_SOURCE_DIR) + "/test_frontend/models/errors/" + name +
         ".onnxtxt";
}

/// The message of the UserError that loading and lowering \p path throws
/// ("" if none).
std::string failure(const std::string& path) {
  try {
    auto g = loadModel(path, {});
    lowerToHpvm(*g);
  } catch (const UserError& e) {
    CHECK(e.exitCode() == ExitUserError);
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("Frontend: every unsupported node is listed in one error") {
  std::string path = errorFixture("two_unsupported");
  CHECK(failure(path) ==
        path +
            ": 3 unsupported nodes:\n"
            "  node 'elu' (Elu, #1): operator Elu is not "
            "supported\n"
            "  node 'dilated' (Conv, #2): dilations [0, 2] must be "
            "positive\n"
            "  node '#3' (Softsign, #3): operator Softsign is not supported");
}

TEST_CASE("Frontend: the loader's refusals and lowering's come in one "
          "refusal, in node order") {
  // Hardmax is refused on loading, the Transpose and the Reshape when
  // lowering; the Relu after Hardmax lowers (its operand's shape is known).
  std::string path = errorFixture("two_stages");
  CHECK(failure(path) ==
        path +
            ": 3 unsupported nodes:\n"
            "  node 'hardmax' (Hardmax, #0): operator Hardmax is not "
            "supported\n"
            "  node 'transpose' (Transpose, #2): transposing activations by "
            "perm [0, 1, 3, 2] of 1x2x6x6 is not supported (only N x C x H x "
            "W to N x H x W x C and back, [0, 2, 3, 1] and [0, 3, 1, 2]; a "
            "transformer's tokens B x T x D and ShuffleNet's channel shuffle "
            "where recognised whole)\n"
            "  node 'reshape' (Reshape, #3): reshaping 1x2x6x6 to 2x36 is "
            "not supported (only reshapes that keep the batch and each "
            "image's values in order: N x C x H x W or N x K to N x C' x H' "
            "x W' or N x K')");
  // Loading alone carries the refused node on, for lowering to report.
  auto g = loadModel(path, {});
  REQUIRE(g->refusals.size() == 1);
  CHECK(g->refusals[0].first.name == "hardmax");
  CHECK(g->nodes().front()->kind == OpKind::Refused);
}

TEST_CASE("Frontend: an unknown attribute is named") {
  std::string path = errorFixture("unknown_attribute");
  CHECK(failure(path) ==
        path + ": node 'relu' (Relu, #0): attribute 'alpha' is not supported");
}

TEST_CASE("Frontend: an operator newer than the model's opset is rejected") {
  std::string path = errorFixture("low_opset");
  CHECK(failure(path) == path + ": node 'cast' (Cast, #1): operator Cast "
                                "needs opset 6 or newer (the model has opset "
                                "5)");
}

TEST_CASE("Frontend: a convolution weight computed at run time is rejected") {
  std::string path = errorFixture("nonconst_weight");
  CHECK(failure(path) ==
        path + ": node 'conv' (Conv, #1): weight 'w' is computed at run time "
               "by node 'weights_from_input' (Relu); only constant weights "
               "are supported");
}

TEST_CASE("Frontend: many refusals are grouped by op type, counts first, "
          "each group's first nodes, every one with -v") {
  const std::string path = errorFixture("many_unsupported");
  auto elu = [](int i) {
    return "    node 'elu" + std::to_string(i) + "' (Elu, #" +
           std::to_string(i) + "): operator Elu is not supported\n";
  };
  const std::string head = path +
                           ": 10 unsupported nodes (Elu 8, Softsign 2):\n"
                           "  Elu, 8 nodes:\n";
  const std::string soft =
      "  Softsign, 2 nodes:\n"
      "    node 'soft0' (Softsign, #8): operator Softsign is not supported\n"
      "    node 'soft1' (Softsign, #9): operator Softsign is not supported";
  CHECK(failure(path) == head + elu(0) + elu(1) + elu(2) +
                             "    ... 5 more Elu nodes (-v lists every "
                             "one)\n" +
                             soft);
  ErrorList::listEveryNode(true);
  std::string every = head;
  for (int i = 0; i < 8; ++i)
    every += elu(i);
  CHECK(failure(path) == every + soft);
  ErrorList::listEveryNode(false);
}

TEST_CASE("Frontend: symbolic height and width are fixed by --input-shape, "
          "and the refusal says so") {
  const std::string path = errorFixture("symbolic_hw");
  CHECK(failure(path) ==
        path + ": input 'input' has shape ?x2x?x?; only the batch "
               "dimension may be symbolic (give --input-shape "
               "input:1x2xHxW with the sizes to run at)");
  LoadOptions opts;
  opts.inputShapeName = "input";
  opts.inputShape = {1, 2, 10, 12};
  auto g = loadModel(path, opts);
  lowerToHpvm(*g);
  // The symbolic batch is read as 1, as in a batch-1 export: programs take
  // any batch.
  CHECK(g->input->shape == std::vector<int64_t>{1, 2, 10, 12});
  CHECK(g->output0()->shape == std::vector<int64_t>{1, 3, 10, 12});
  opts.inputShapeName = "";
  CHECK_NOTHROW(loadModel(path, opts));
  auto refusal = [&](const std::string& name, std::vector<int64_t> dims) {
    LoadOptions o;
    o.inputShapeName = name;
    o.inputShape = std::move(dims);
    try {
      loadModel(path, o);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(refusal("x", {1, 2, 4, 4}) ==
        path + ": --input-shape x: the model has no input 'x' (it has "
               "'input')");
  CHECK(refusal("input", {1, 3, 4, 4}) ==
        path + ": --input-shape input: input 'input' has dim 1 of 2, 3 "
               "given");
  CHECK(refusal("input", {1, 2, 4}) ==
        path + ": --input-shape input: input 'input' has 4 dims, 3 given");
}

TEST_CASE("Frontend: a model with two inputs is rejected") {
  std::string path = errorFixture("two_inputs");
  CHECK(failure(path) == path + ": the model has 2 inputs ('input', "
                                "'other'); torch2hpvm needs exactly one, the "
                                "image batch");
}

TEST_CASE("Frontend: an input's problems are explained, with the unsupported "
          "nodes in one refusal") {
  // (fixture, the message after "<path>: ", in which "@" stands for the
  // path on later lines)
  const std::pair<const char*, std::string> cases[] = {
      {"input_5d",
       "input 'input' is float32 with shape 1x2x3x4x5; torch2hpvm needs a "
       "4-D float32 image batch (N, C, H, W), a 3-D one (N, H, W) or a 2-D "
       "batch of feature vectors (N, K)"},
      {"symbolic_and_unsupported",
       "input 'input' has shape ?x3x?x?; only the batch dimension may be "
       "symbolic (give --input-shape input:1x3xHxW with the sizes to run "
       "at)\n@: node 'hardmax' (Hardmax, #0): operator Hardmax is not "
       "supported"},
      // A 3-D input read as it is, not as tokens: the reader, and the way
      // forward.
      {"input_3d",
       "node 'transpose' (Transpose, #0): the 3-D input 'input' (1x28x20): "
       "the node reads it as it is; a 3-D input is supported where the model "
       "first reshapes it to 4-D (N x 1 x A x B, N x A x B x 1) or 2-D (N x "
       "A*B), as Unsqueeze(axes=[1]) does, or as a sequence of tokens N x T "
       "x D where every node on it works per token (LayerNorm, Linear, "
       "Softmax over D, element-wise ops, self-attention, a MatMul of two "
       "token sequences; a Transpose of the last two axes and back) until a "
       "mean over the tokens, the Gather of one or a graph output"},
      // Tokens read features first, widened from 24 to 48 by a Linear and
      // transposed back: 48 tokens, which are no pixels of the 4 x 6 image.
      {"mixer_wide",
       "node '/Reshape' (Reshape, #8): the 1x4x24 tokens (B x T x D) it "
       "makes reach node '/Transpose' (Transpose, #11), which does not work "
       "per token; tokens are supported where every node on them works per "
       "token (LayerNorm, Linear, Softmax over D, element-wise ops, "
       "self-attention, a MatMul of two token sequences; a Transpose of the "
       "last two axes and back) until a mean over the tokens, the Gather of "
       "one or a graph output\n(4 more nodes after these could not be "
       "checked until they are fixed)"}};
  for (const auto& [name, want] : cases) {
    const std::string path = errorFixture(name);
    std::string expected = path + ": " + want;
    for (size_t at; (at = expected.find('@')) != std::string::npos;)
      expected.replace(at, 1, path);
    CHECK(failure(path) == expected);
  }
}

TEST_CASE("Frontend: a reshape that mixes the images of a batch is "
          "rejected") {
  std::string path = errorFixture("reshape_batch");
  CHECK(failure(path) ==
        path + ": node 'reshape' (Reshape, #0): reshaping 1x2x6x6 to 2x36 is "
               "not supported (only reshapes that keep the batch and each "
               "image's values in order: N x C x H x W or N x K to N x C' x "
               "H' x W' or N x K')");
}

TEST_CASE("Frontend: window geometry HPVM cannot express is listed per node") {
  std::string path = errorFixture("pool_geometry");
  CHECK(failure(path) ==
        path + ": 3 unsupported nodes:\n"
               "  node 'ceil' (AveragePool, #0): ceil_mode=1 with padding "
               "counted in the mean (count_include_pad=1) is not supported "
               "(pads [1, 1, 1, 1]): only symmetric pads, or ceil_mode with "
               "no padding\n"
               "  node 'asymmetric_mean' (AveragePool, #1): asymmetric padding "
               "with padding counted in the mean (count_include_pad=1) is not "
               "supported (pads [0, 0, 1, 1]): only symmetric pads, or "
               "ceil_mode with no padding\n"
               "  node 'asymmetric' (Conv, #2): asymmetric pads (height 0 "
               "before, 1 after) cannot be expressed with HPVM's symmetric "
               "padding");
}

TEST_CASE("Frontend: a missing model file is a user error") {
  std::string path = errorFixture("does_not_exist");
  CHECK(failure(path) == path + ": cannot open: No such file or directory");
}

TEST_CASE("Frontend: a pre-quantized model's refusals come at once, the "
          "dequantizations after them counted") {
  std::string path = errorFixture("quantized");
  CHECK(failure(path) ==
        path +
            ": 4 unsupported nodes:\n"
            "  node 'per_channel' (QuantizeLinear, #0): it quantizes an "
            "activation per axis; only one scale and zero point per "
            "activation are supported\n"
            "  node 'quantize' (QuantizeLinear, #2): its integers are read by "
            "node 'transpose_integers' (Transpose); only DequantizeLinear, "
            "QLinearConv, QLinearMatMul, MaxPool and reshapes may read them\n"
            "  node 'transpose_integers' (Transpose, #3): transposing "
            "activations by perm [0, 1, 3, 2] of 1x2x6x6 is not supported "
            "(only N x C x H x W to N x H x W x C and back, [0, 2, 3, 1] and "
            "[0, 3, 1, 2]; a transformer's tokens B x T x D and ShuffleNet's "
            "channel shuffle where recognised whole)\n"
            "  node 'other_scale' (DequantizeLinear, #6): it dequantizes 'q2' "
            "with another scale, zero point or type than the QuantizeLinear "
            "that made it; that is not supported\n"
            "(2 more nodes after these could not be checked until they are "
            "fixed)");
}

TEST_CASE("Frontend: dynamic quantization in another form than ONNX "
          "Runtime's is refused once per ONNX node") {
  std::string path = errorFixture("dynamic_quantized");
  CHECK(failure(path) ==
        path +
            ": 2 unsupported nodes:\n"
            "  node 'quantize' (DynamicQuantizeLinear, #0): "
            "DynamicQuantizeLinear is supported where ONNX Runtime's dynamic "
            "quantization writes it: read by ConvInteger or MatMulInteger "
            "whose result goes through Cast to float and a Mul by its scale "
            "times a constant weight scale\n"
            "  node 'cast' (Cast, #2): Cast computes on run-time values; it "
            "is only supported on constants (shape computations that fold "
            "away)\n"
            "(1 more node after these could not be checked until they are "
            "fixed)");
}
