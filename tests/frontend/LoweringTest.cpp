// LoweringTest.cpp - every accepted ONNX operator (Ops.def HPVM_ONNX rows)
// has a fixture that loads and lowers to valid HPVM ops.
#include "LowerToHpvm.h"
#include "ir/OpTable.h"
#include "ir/Printer.h"
#include "onnx/ModelLoader.h"
#include "support/Diagnostics.h"

#include <doctest/doctest.h>

#include <fstream>
#include <string>

using namespace hpvm::fe;

namespace {

std::string fixture(const std::string& name) {
  return std::string(HPVM_SOURCE_DIR) + "/test_frontend/models/" + name +
         ".onnxtxt";
}

} // namespace

TEST_CASE("Frontend: every ONNX operator row has a fixture that lowers") {
  for (const OnnxOpDesc& op : onnxOps()) {
    INFO("operator " << op.onnxName);
    std::string path = fixture(op.onnxName);
    if (!std::ifstream(path)) {
      FAIL("no fixture for op " << op.onnxName << " (" << path << ")");
      continue;
    }
    std::unique_ptr<Graph> g = loadModel(path, {});
    // A node of the row's kind, or (Split: one Slice per output) one the
    // loader made of such an ONNX node.
    bool found = false;
    for (const auto& n : g->nodes())
      for (const Origin& o : n->origins)
        found |= n->kind == op.kind || o.opType == op.onnxName;
    CHECK_MESSAGE(found, "fixture does not contain " << op.onnxName);
    std::string before = dumpIr(*g);
    REQUIRE_NOTHROW(lowerToHpvm(*g));
    INFO(before << "--- lowered:\n" << dumpIr(*g));
    REQUIRE(!g->nodes().empty());
    for (const auto& n : g->nodes()) {
      CHECK(isHpvmOp(n->kind));
      const HpvmOpDesc& desc = hpvmOpDesc(n->kind);
      CHECK(arityFits(*desc.facts, static_cast<int>(n->inputs.size())));
      CHECK(static_cast<int>(n->scalars.size()) == desc.facts->scalarArgs);
      CHECK(n->output->shape.size() == 4);
      CHECK(!n->origins.empty());
    }
    CHECK(g->output0() == g->nodes().back()->output);
  }
}

TEST_CASE("Frontend: the small LeNet lowers to HPVM's op sequence") {
  std::unique_ptr<Graph> g = loadModel(fixture("lenet_small"), {});
  lowerToHpvm(*g);
  CHECK(dumpIr(*g) ==
        "%1 = Conv(%input: 1x1x28x28, %c1w: 4x1x5x5) -> 1x4x28x28  [pads 2 2 "
        "strides 1 1]  # conv1\n"
        "%2 = Add(%1: 1x4x28x28, %c1b: 1x4x1x1) -> 1x4x28x28  # conv1\n"
        "%3 = Tanh(%2: 1x4x28x28) -> 1x4x28x28  # tanh1\n"
        "%4 = MaxPool(%3: 1x4x28x28) -> 1x4x14x14  [window 2 2 pads 0 0 "
        "strides 2 2]  # pool1\n"
        "%5 = Conv(%4: 1x4x14x14, %c2w: 8x4x5x5) -> 1x8x14x14  [pads 2 2 "
        "strides 1 1]  # conv2\n"
        "%6 = Add(%5: 1x8x14x14, %c2b: 1x8x1x1) -> 1x8x14x14  # conv2\n"
        "%7 = Tanh(%6: 1x8x14x14) -> 1x8x14x14  # tanh2\n"
        "%8 = MaxPool(%7: 1x8x14x14) -> 1x8x7x7  [window 2 2 pads 0 0 "
        "strides 2 2]  # pool2\n"
        "%9 = Mul(%8: 1x8x7x7, %f1w: 1x1x392x16) -> 1x16x1x1  # fc1\n"
        "%10 = Add(%9: 1x16x1x1, %f1b: 1x16x1x1) -> 1x16x1x1  # fc1\n"
        "%11 = Tanh(%10: 1x16x1x1) -> 1x16x1x1  # tanh3\n"
        "%12 = Mul(%11: 1x16x1x1, %f2w: 1x1x16x10) -> 1x10x1x1  # fc2\n"
        "%13 = Add(%12: 1x10x1x1, %f2b: 1x10x1x1) -> 1x10x1x1  # fc2\n"
        "%14 = Tanh(%13: 1x10x1x1) -> 1x10x1x1  # tanh4\n"
        "%15 = Softmax(%14: 1x10x1x1) -> 1x10x1x1  # softmax\n"
        "return %15: 1x10x1x1\n");
}

TEST_CASE("Frontend: depthwise conv with SAME_UPPER padding becomes "
          "group_conv") {
  std::unique_ptr<Graph> g = loadModel(fixture("depthwise_block"), {});
  lowerToHpvm(*g);
  // 7x7, 3x3 window, stride 2: SAME_UPPER pads 1 before and 1 after.
  CHECK(dumpIr(*g) ==
        "%1 = GroupConv(%input: 1x4x7x7, %dw: 4x1x3x3) -> 1x4x4x4  [pads 1 1 "
        "strides 2 2 mode 1 groups 4]  # depthwise\n"
        "%2 = BatchNorm(%1: 1x4x4x4, %s: 1x4x1x1, %b: 1x4x1x1, %m: 1x4x1x1, "
        "%v: 1x4x1x1) -> 1x4x4x4  [eps 0.001]  # bn\n"
        "%3 = ClippedRelu(%2: 1x4x4x4) -> 1x4x4x4  [min 0 max 6]  # relu6\n"
        "%4 = Conv(%3: 1x4x4x4, %pw: 6x4x1x1) -> 1x6x4x4  [pads 0 0 strides "
        "1 1]  # pointwise\n"
        "%5 = AvgPool(%4: 1x6x4x4) -> 1x6x1x1  [window 4 4 pads 0 0 strides "
        "1 1]  # gap\n"
        "return %5: 1x6x1x1\n");
}

TEST_CASE("Frontend: x * HardSigmoid(x) with alpha 1/6, beta 1/2 becomes "
          "one hard_swish, and gates and other alphas stay hard_sigmoid") {
  std::unique_ptr<Graph> g = loadModel(fixture("HardSigmoid"), {});
  lowerToHpvm(*g);
  CHECK(dumpIr(*g) ==
        "%1 = HardSwish(%input: 1x2x6x6) -> 1x2x6x6  # hswish, hswish_gate\n"
        "%2 = AvgPool(%1: 1x2x6x6) -> 1x2x1x1  [window 6 6 pads 0 0 strides "
        "1 1]  # squeeze\n"
        "%3 = HardSigmoid(%2: 1x2x1x1) -> 1x2x1x1  [alpha 0.16666667 beta "
        "0.5]  # se_gate\n"
        "%4 = Multiply(%1: 1x2x6x6, %3: 1x2x1x1) -> 1x2x6x6  # excite\n"
        "%5 = HardSigmoid(%4: 1x2x6x6) -> 1x2x6x6  [alpha 0.2 beta 0.5]  # "
        "default_alpha\n"
        "%6 = Multiply(%5: 1x2x6x6, %4: 1x2x6x6) -> 1x2x6x6  # not_hswish\n"
        "%7 = Mul(%6: 1x2x6x6, %w: 1x1x72x3) -> 1x3x1x1  # fc\n"
        "%8 = HardSwish(%7: 1x3x1x1) -> 1x3x1x1  # fc_hswish, fc_gate\n"
        "return %8: 1x3x1x1\n");
}

TEST_CASE("Frontend: x * Sigmoid(x) becomes one silu, and a squeeze-and-"
          "excitation gate or a sigmoid read twice stays") {
  std::unique_ptr<Graph> g = loadModel(fixture("silu_block"), {});
  lowerToHpvm(*g);
  CHECK(dumpIr(*g) ==
        "%1 = Conv(%input: 1x2x6x6, %w: 4x2x3x3) -> 1x4x6x6  [pads 1 1 "
        "strides 1 1]  # conv\n"
        "%2 = Add(%1: 1x4x6x6, %b: 1x4x1x1) -> 1x4x6x6  # conv\n"
        "%3 = Silu(%2: 1x4x6x6) -> 1x4x6x6  # silu_sigmoid, silu_mul\n"
        "%4 = AvgPool(%3: 1x4x6x6) -> 1x4x1x1  [window 6 6 pads 0 0 strides "
        "1 1]  # squeeze\n"
        "%5 = Sigmoid(%4: 1x4x1x1) -> 1x4x1x1  # gate\n"
        "%6 = Multiply(%3: 1x4x6x6, %5: 1x4x1x1) -> 1x4x6x6  # excite\n"
        "%7 = Sigmoid(%6: 1x4x6x6) -> 1x4x6x6  # shared_sigmoid\n"
        "%8 = Multiply(%6: 1x4x6x6, %7: 1x4x6x6) -> 1x4x6x6  # not_silu\n"
        "%9 = Add(%8: 1x4x6x6, %7: 1x4x6x6) -> 1x4x6x6  # sum\n"
        "return %9: 1x4x6x6\n");
}

TEST_CASE("Frontend: ONNX HardSwish (opset 14) becomes hard_swish") {
  std::unique_ptr<Graph> g = loadModel(fixture("HardSwish"), {});
  CHECK(g->source.opset == 14);
  lowerToHpvm(*g);
  CHECK(dumpIr(*g) ==
        "%1 = HardSwish(%input: 1x2x6x6) -> 1x2x6x6  # hardswish\n"
        "return %1: 1x2x6x6\n");
}

TEST_CASE("Frontend: opFlops counts exactly, strided outputs only") {
  std::unique_ptr<Graph> g = loadModel(fixture("Conv"), {});
  lowerToHpvm(*g);
  REQUIRE(g->nodes().size() == 2);
  // Conv 2->3 channels, 3x3 window, stride 2 on 6x6 with pad 1: 3x3 outputs,
  // each 2*3*3 multiply-adds: 27 * 18 * 2 FLOPs. Bias add: 27 FLOPs.
  CHECK(opFlops(*g->nodes()[0]) == 27 * 18 * 2);
  CHECK(opFlops(*g->nodes()[1]) == 27);

  std::unique_ptr<Graph> lenet = loadModel(fixture("lenet_small"), {});
  lowerToHpvm(*lenet);
  const auto& n = lenet->nodes();
  CHECK(opFlops(*n[3]) == 4 * 14 * 14 * 4); // max pool: KH*KW per output
  CHECK(opFlops(*n[8]) == 16 * 392 * 2);    // mul: K per output
  CHECK(opFlops(*n[14]) == 10 * 4);         // softmax: 4 per element
}

TEST_CASE("Frontend: knob lists follow the op's Knobs column") {
  std::vector<int> conv = knobsFor(OpKind::Conv);
  std::vector<int> mul = knobsFor(OpKind::Mul);
  std::vector<int> relu = knobsFor(OpKind::Relu);
  CHECK(relu == std::vector<int>{11, 12});
  CHECK(mul == std::vector<int>{11, 12, 301, 311, 312});
  CHECK(conv.size() == knobTable().size());
  CHECK(conv.front() == 11);
  CHECK(conv.back() == 639);
  CHECK(std::string(hpvmOpDesc(OpKind::GroupConv).confName) == "group_conv");
  CHECK(std::string(hpvmOpDesc(OpKind::Conv).intrinsic) ==
        "__hpvm__tensor_convolution");
  CHECK(onnxOpByName("Elu") == nullptr);
  REQUIRE(onnxOpByName("LeakyRelu") != nullptr);
  REQUIRE(onnxOpByName("Cast") != nullptr);
  CHECK(onnxOpByName("Cast")->minOpset == 6);
  CHECK(onnxOpByKind(OpKind::OnnxGemm) == onnxOpByName("Gemm"));
}

TEST_CASE("Frontend: a channel-last ConvNeXt block as torch.onnx writes it "
          "becomes channel-first layer_norm, 1x1 convs and gelu") {
  std::unique_ptr<Graph> g = loadModel(fixture("Pow"), {});
  lowerToHpvm(*g);
  CHECK(dumpIr(*g) ==
        "%1 = Conv(%input: 1x2x6x6, %w0: 2x2x3x3) -> 1x2x6x6  [pads 1 1 "
        "strides 1 1]  # dwconv\n"
        "%2 = LayerNorm(%1: 1x2x6x6, %gamma: 1x2x1x1, %beta: 1x2x1x1) -> "
        "1x2x6x6  [eps 1e-06]  # ln_mean, ln_sub, ln_pow, ln_var, ln_eps, "
        "ln_sqrt, ln_div, ln_scale, ln_bias\n"
        "%3 = Conv(%2: 1x2x6x6, %w1: 8x2x1x1) -> 1x8x6x6  [pads 0 0 strides "
        "1 1]  # fc1\n"
        "%4 = Add(%3: 1x8x6x6, %b1: 1x8x1x1) -> 1x8x6x6  # fc1_bias\n"
        "%5 = Gelu(%4: 1x8x6x6) -> 1x8x6x6  # gelu_div, gelu_erf, gelu_add, "
        "gelu_mul, gelu_half\n"
        "%6 = Conv(%5: 1x8x6x6, %w2: 2x8x1x1) -> 1x2x6x6  [pads 0 0 strides "
        "1 1]  # fc2\n"
        "%7 = Add(%6: 1x2x6x6, %b2: 1x2x1x1) -> 1x2x6x6  # fc2_bias\n"
        "%8 = Multiply(%7: 1x2x6x6, %scale: 1x2x1x1) -> 1x2x6x6  # "
        "layer_scale\n"
        "%9 = Add(%8: 1x2x6x6, %1: 1x2x6x6) -> 1x2x6x6  # residual\n"
        "return %9: 1x2x6x6\n");
}

TEST_CASE("Frontend: an activation with an unknown dimension past the batch "
          "is refused, not lowered") {
  // Per-channel constants are made of the channel count: a symbolic one
  // (-1) must not reach them (a fuzz_onnx finding of the kind).
  std::unique_ptr<Graph> g = loadModel(fixture("BatchNormalization"), {});
  g->input->shape[1] = -1;
  std::string message;
  try {
    lowerToHpvm(*g);
  } catch (const UserError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK(message.find("' has shape 1x?x") != std::string::npos);
  CHECK(message.find("; only its batch dimension may be unknown (dynamic "
                     "shapes are not supported)") != std::string::npos);
}
