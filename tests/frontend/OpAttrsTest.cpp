// OpAttrsTest.cpp - the attribute declarations (one default per attribute and
// opset) and their use by the pre-scan, the folding and the lowering alike.
#include "onnx/OpAttrs.h"
#include "LowerToHpvm.h"
#include "ir/OpTable.h"
#include "ir/Printer.h"
#include "onnx/ModelLoader.h"
#include "passes/ConstantFolding.h"
#include "support/Diagnostics.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <unistd.h>

using namespace hpvm::fe;

namespace {

/// A model text of opset \p opset: one float input 'input' of \p inDims,
/// \p body (nodes and initializers), one float output 'y' of \p outDims.
std::string modelText(int opset, const std::vector<int>& inDims,
                      const std::string& body,
                      const std::vector<int>& outDims) {
  auto shape = [](const std::vector<int>& dims) {
    std::string s;
    for (int d : dims)
      s += "dim { dim_value: " + std::to_string(d) + " } ";
    return "type { tensor_type { elem_type: 1 shape { " + s + "} } }";
  };
  return "ir_version: 7 opset_import { version: " + std::to_string(opset) +
         " } graph { name: 'g' " + body + " input { name: 'input' " +
         shape(inDims) + " } output { name: 'y' " + shape(outDims) + " } }";
}

/// A model file holding \p text, removed at scope exit.
struct TextModel {
  explicit TextModel(const std::string& text) {
    char tmpl[] = "/tmp/op_attrs_test_XXXXXX.onnxtxt";
    int fd = mkstemps(tmpl, 8);
    REQUIRE(fd >= 0);
    close(fd);
    path = tmpl;
    std::ofstream(path) << text;
  }
  ~TextModel() { std::remove(path.c_str()); }
  std::string path;
};

/// The IR after loading and lowering \p text, or "error: <message>" with
/// the temporary file's path shown as "model".
std::string lowered(const std::string& text) {
  TextModel m(text);
  try {
    std::unique_ptr<Graph> g = loadModel(m.path, {});
    lowerToHpvm(*g);
    return dumpIr(*g);
  } catch (const UserError& e) {
    std::string msg = e.what();
    if (msg.compare(0, m.path.size(), m.path) == 0)
      msg = "model" + msg.substr(m.path.size());
    return "error: " + msg;
  }
}

/// An initializer 'name' of float ones with dims \p dims.
std::string ones(const std::string& name, const std::vector<int>& dims) {
  std::string s = "initializer { name: '" + name + "' data_type: 1 ";
  int count = 1;
  for (int d : dims) {
    s += "dims: " + std::to_string(d) + " ";
    count *= d;
  }
  for (int i = 0; i < count; ++i)
    s += "float_data: 1 ";
  return s + "}";
}

/// The index of the AttrValue alternative an attribute of \p type holds.
size_t variantIndex(AttrType type) {
  switch (type) {
  case AttrType::Int:
    return 0;
  case AttrType::Float:
    return 1;
  case AttrType::String:
    return 2;
  case AttrType::Ints:
    return 3;
  case AttrType::Floats:
    return 4;
  case AttrType::Tensor:
    return 5;
  }
  return 6;
}

} // namespace

TEST_CASE("OpAttrs: every default holds the declared type") {
  for (const OnnxOpDesc& op : onnxOps()) {
    INFO("operator " << op.onnxName);
    for (const AttrDecl& d : attrDecls(op.kind)) {
      INFO("attribute " << d.name);
      CHECK(d.def.index() == variantIndex(d.type));
      if (d.newDefOpset != 0)
        CHECK(d.newDef.index() == variantIndex(d.type));
      // IgnoredAttrs are never read: a declared one would be both.
      std::string ignored = std::string(" ") + op.ignoredAttrs + " ";
      CHECK(ignored.find(std::string(" ") + d.name + " ") == std::string::npos);
    }
  }
  for (const HpvmOpDesc& op : hpvmOps())
    CHECK(attrDecls(opKindOf(op.op)).empty());
}

TEST_CASE("OpAttrs: absent attributes read as the ONNX defaults of the "
          "model's opset") {
  std::map<std::string, AttrValue> none;
  constexpr double inf = std::numeric_limits<double>::infinity();
  SUBCASE("Softmax's axis is 1 before opset 13 and -1 from 13 on") {
    CHECK(OpAttrs(OpKind::OnnxSoftmax, none, 12).getInt("axis") == 1);
    CHECK(OpAttrs(OpKind::OnnxSoftmax, none, 13).getInt("axis") == -1);
  }
  SUBCASE("BatchNormalization is in training mode without is_test before "
          "opset 7") {
    CHECK(OpAttrs(OpKind::OnnxBatchNormalization, none, 6).getInt("is_test") ==
          0);
    CHECK(OpAttrs(OpKind::OnnxBatchNormalization, none, 7).getInt("is_test") ==
          1);
  }
  SUBCASE("Clip is unbounded, for the pre-scan, the folding and lowering") {
    OpAttrs clip(OpKind::OnnxClip, none, 6);
    CHECK(clip.getFloat("min") == -inf);
    CHECK(clip.getFloat("max") == inf);
  }
  SUBCASE("the rest") {
    CHECK(OpAttrs(OpKind::OnnxFlatten, none, 13).getInt("axis") == 1);
    CHECK(OpAttrs(OpKind::OnnxConcat, none, 3).getInt("axis") == 1);
    CHECK(OpAttrs(OpKind::OnnxGather, none, 13).getInt("axis") == 0);
    CHECK(OpAttrs(OpKind::OnnxShape, none, 15).getInt("end") ==
          std::numeric_limits<int64_t>::max());
    CHECK(OpAttrs(OpKind::OnnxGemm, none, 6).getInt("broadcast") == 0);
    CHECK(OpAttrs(OpKind::OnnxConv, none, 13).getInts("pads") ==
          std::vector<int64_t>{0, 0, 0, 0});
    CHECK(OpAttrs(OpKind::OnnxAveragePool, none, 13)
              .getInt("count_include_pad") == 0);
    CHECK(OpAttrs(OpKind::OnnxPad, none, 2).getFloat("value") == 0.0);
    CHECK(OpAttrs(OpKind::OnnxConstant, none, 13).getTensor("value") ==
          nullptr);
  }
}

TEST_CASE("OpAttrs: readAll names each wrongly typed attribute and reads "
          "every declared one") {
  std::map<std::string, AttrValue> attrs = {
      {"group", std::string("two")},
      {"strides", std::string("1 1")},
      {"pads", std::vector<int64_t>{1, 1, 1, 1}},
      {"alpha", 0.2},
  };
  OpAttrs a(OpKind::OnnxConv, attrs, 13);
  CHECK(a.readAll() ==
        std::vector<std::string>{
            "attribute 'group' must be an integer, not a string",
            "attribute 'strides' must be a list of integers, not a string"});
  CHECK(a.unconsumed("") == std::vector<std::string>{"alpha"});
  CHECK(a.has("pads"));
  CHECK(!a.has("dilations"));
}

TEST_CASE("Frontend: a wrongly typed attribute does not make the node's "
          "later attributes unsupported") {
  // The pre-scan used to stop reading at the bad value, and then reported
  // the attributes it had not reached as unsupported.
  std::string ir = lowered(
      modelText(13, {1, 2, 6, 6},
                "node { name: 'conv' op_type: 'Conv' input: 'input' input: "
                "'w' output: 'y' attribute { name: 'group' type: STRING s: "
                "'two' } attribute { name: 'pads' type: INTS ints: 1 ints: 1 "
                "ints: 1 ints: 1 } attribute { name: 'strides' type: INTS "
                "ints: 1 ints: 1 } } " +
                    ones("w", {2, 2, 3, 3}),
                {1, 2, 6, 6}));
  CHECK(ir == "error: model"
              ": node 'conv' (Conv, #0): attribute 'group' must be an "
              "integer, not a string");
}

TEST_CASE("Frontend: an attribute of another operator is named") {
  // MaxPool has no count_include_pad: the pre-scan used to read it for both
  // pools alike.
  std::string ir = lowered(
      modelText(13, {1, 2, 6, 6},
                "node { name: 'pool' op_type: 'MaxPool' input: 'input' "
                "output: 'y' attribute { name: 'kernel_shape' type: INTS "
                "ints: 2 ints: 2 } attribute { name: 'count_include_pad' "
                "type: INT i: 1 } }",
                {1, 2, 5, 5}));
  CHECK(ir == "error: model"
              ": node 'pool' (MaxPool, #0): attribute "
              "'count_include_pad' is not supported");
}

TEST_CASE("Frontend: a -inf Pad value before opset 11 folds into "
          "MaxPool, as the same value as an input does") {
  // The pre-scan used to reject every value but 0; the folding accepts -inf
  // before MaxPool, which pads with -inf itself.
  std::string body =
      "node { name: 'pad' op_type: 'Pad' input: 'input' output: 'p' "
      "attribute { name: 'pads' type: INTS ints: 0 ints: 0 ints: 1 ints: 1 "
      "ints: 0 ints: 0 ints: 1 ints: 1 } attribute { name: 'value' type: "
      "FLOAT f: -inf } } "
      "node { name: 'pool' op_type: 'MaxPool' input: 'p' output: 'y' "
      "attribute { name: 'kernel_shape' type: INTS ints: 3 ints: 3 } }";
  std::string expected = "%1 = MaxPool(%input: 1x2x6x6) -> 1x2x6x6  [window "
                         "3 3 pads 1 1 strides 1 1]  # pool, pad\n"
                         "return %1: 1x2x6x6\n";
  CHECK(lowered(modelText(10, {1, 2, 6, 6}, body, {1, 2, 6, 6})) == expected);

  std::string asInput =
      "node { name: 'pad' op_type: 'Pad' input: 'input' input: 'pads' input: "
      "'value' output: 'p' } "
      "node { name: 'pool' op_type: 'MaxPool' input: 'p' output: 'y' "
      "attribute { name: 'kernel_shape' type: INTS ints: 3 ints: 3 } } "
      "initializer { name: 'pads' data_type: 7 dims: 8 int64_data: 0 "
      "int64_data: 0 int64_data: 1 int64_data: 1 int64_data: 0 int64_data: 0 "
      "int64_data: 1 int64_data: 1 } "
      "initializer { name: 'value' data_type: 1 float_data: -inf }";
  CHECK(lowered(modelText(13, {1, 2, 6, 6}, asInput, {1, 2, 6, 6})) ==
        expected);
}

TEST_CASE("Frontend: other Pad values are a pad of their own") {
  std::string ir = lowered(
      modelText(10, {1, 2, 6, 6},
                "node { name: 'pad' op_type: 'Pad' input: 'input' output: "
                "'p' attribute { name: 'pads' type: INTS ints: 0 ints: 0 "
                "ints: 1 ints: 1 ints: 0 ints: 0 ints: 1 ints: 1 } attribute "
                "{ name: 'value' type: FLOAT f: 1 } } "
                "node { name: 'conv' op_type: 'Conv' input: 'p' input: 'w' "
                "output: 'y' } " +
                    ones("w", {2, 2, 3, 3}),
                {1, 2, 6, 6}));
  // A Conv pads with zeros: the ones are padded first.
  CHECK(ir == "%1 = Pad(%input: 1x2x6x6) -> 1x2x8x8  [pads 1 1 1 1 value 1]  "
              "# pad\n"
              "%2 = Conv(%1: 1x2x8x8, %w: 2x2x3x3) -> 1x2x6x6  [pads 0 0 "
              "strides 1 1]  # conv\n"
              "return %2: 1x2x6x6\n");
}

TEST_CASE("Frontend: BatchNormalization without is_test is training mode "
          "before opset 7") {
  std::string params =
      ones("s", {2}) + ones("b", {2}) + ones("m", {2}) + ones("v", {2});
  auto bn = [&](const std::string& attrs) {
    return "node { name: 'bn' op_type: 'BatchNormalization' input: 'input' "
           "input: 's' input: 'b' input: 'm' input: 'v' output: 'y' " +
           attrs + "} " + params;
  };
  CHECK(lowered(modelText(6, {1, 2, 6, 6}, bn(""), {1, 2, 6, 6})) ==
        "error: model"
        ": node 'bn' (BatchNormalization, #0): is_test=0 (training "
        "mode) is not supported");
  std::string inference =
      "%1 = BatchNorm(%input: 1x2x6x6, %s: 1x2x1x1, %b: 1x2x1x1, %m: "
      "1x2x1x1, %v: 1x2x1x1) -> 1x2x6x6  [eps 1e-05]  # bn\n"
      "return %1: 1x2x6x6\n";
  CHECK(lowered(modelText(6, {1, 2, 6, 6},
                          bn("attribute { name: 'is_test' type: INT i: 1 } "),
                          {1, 2, 6, 6})) == inference);
  CHECK(lowered(modelText(7, {1, 2, 6, 6}, bn(""), {1, 2, 6, 6})) == inference);
}

TEST_CASE("Frontend: the default Softmax axis follows the opset") {
  std::string softmax =
      "node { name: 'sm' op_type: 'Softmax' input: 'input' output: 'y' }";
  CHECK(lowered(modelText(12, {1, 10, 1, 1}, softmax, {1, 10, 1, 1})) ==
        "%1 = Softmax(%input: 1x10x1x1) -> 1x10x1x1  # sm\n"
        "return %1: 1x10x1x1\n");
  CHECK(lowered(modelText(13, {1, 10, 1, 1}, softmax, {1, 10, 1, 1})) ==
        "error: model"
        ": node 'sm' (Softmax, #0): softmax over axis 3 of shape "
        "1x10x1x1 is not supported (only over the classes of N x "
        "classes or the channels of N x C x H x W)");
  // Over the channels of each pixel: channel_softmax from opset 13 on;
  // before, axis 1 of N x C x H x W is over C, H and W (HPVM's softmax).
  // op (name sm or ls) on 1 x 10 x H x W, axis 1 or the default.
  auto run = [](int opset, const char* op, bool axis1, int H, int W) {
    const std::string name = std::string(op) == "Softmax" ? "sm" : "ls";
    return lowered(modelText(
        opset, {1, 10, H, W},
        "node { name: '" + name + "' op_type: '" + op +
            "' input: 'input' output: 'y' " +
            (axis1 ? "attribute { name: 'axis' i: 1 type: INT } " : "") + "}",
        {1, 10, H, W}));
  };
  CHECK(run(13, "Softmax", true, 2, 3) ==
        "%1 = ChannelSoftmax(%input: 1x10x2x3) -> 1x10x2x3  [log 0]  # sm\n"
        "return %1: 1x10x2x3\n");
  CHECK(run(12, "Softmax", false, 2, 3) ==
        "%1 = Softmax(%input: 1x10x2x3) -> 1x10x2x3  # sm\n"
        "return %1: 1x10x2x3\n");
  CHECK(run(13, "LogSoftmax", true, 1, 1) ==
        "%1 = ChannelSoftmax(%input: 1x10x1x1) -> 1x10x1x1  [log 1]  # ls\n"
        "return %1: 1x10x1x1\n");
  CHECK(run(12, "LogSoftmax", false, 2, 3) ==
        "error: model: node 'ls' (LogSoftmax, #0): log-softmax over axis 1 "
        "of shape 1x10x2x3 is not supported (only over the classes of N x "
        "classes or the channels of N x C x H x W, from opset 13 on)");
}

TEST_CASE("Frontend: Clip without bounds is unbounded, as attributes and "
          "as inputs") {
  std::string relu = "%1 = Relu(%input: 1x2x6x6) -> 1x2x6x6  # clip\n"
                     "return %1: 1x2x6x6\n";
  // Without min: a clamp from above only (clipped_relu, min -inf).
  std::string noMin = "%1 = ClippedRelu(%input: 1x2x6x6) -> 1x2x6x6  [min "
                      "-inf max 6]  # clip\n"
                      "return %1: 1x2x6x6\n";
  // Opset 6: attributes.
  auto clip6 = [](const std::string& attr) {
    return modelText(6, {1, 2, 6, 6},
                     "node { name: 'clip' op_type: 'Clip' input: 'input' "
                     "output: 'y' attribute { " +
                         attr + " } }",
                     {1, 2, 6, 6});
  };
  CHECK(lowered(clip6("name: 'min' type: FLOAT f: 0")) == relu);
  CHECK(lowered(clip6("name: 'max' type: FLOAT f: 6")) == noMin);
  // Opset 13: inputs, an empty name for an absent one.
  auto clip13 = [](const std::string& inputs, const std::string& bound) {
    return modelText(13, {1, 2, 6, 6},
                     "node { name: 'clip' op_type: 'Clip' input: 'input' " +
                         inputs +
                         " output: 'y' } initializer { name: 'bound' "
                         "data_type: 1 float_data: " +
                         bound + " }",
                     {1, 2, 6, 6});
  };
  CHECK(lowered(clip13("input: 'bound'", "0")) == relu);
  CHECK(lowered(clip13("input: '' input: 'bound'", "6")) == noMin);
  // A negative min without max (PaddleOCR's), and min above max.
  CHECK(lowered(clip13("input: 'bound'", "-0.5")) ==
        "%1 = ClippedRelu(%input: 1x2x6x6) -> 1x2x6x6  [min -0.5 max inf]  "
        "# clip\nreturn %1: 1x2x6x6\n");
  CHECK(lowered(modelText(13, {1, 2, 6, 6},
                          "node { name: 'clip' op_type: 'Clip' input: "
                          "'input' input: 'hi' input: 'lo' output: 'y' } "
                          "initializer { name: 'lo' data_type: 1 float_data: "
                          "1 } initializer { name: 'hi' data_type: 1 "
                          "float_data: 2 }",
                          {1, 2, 6, 6})) ==
        "error: model: node 'clip' (Clip, #0): Clip(2, 1) is not supported "
        "(min must not exceed max, neither NaN)");
}

TEST_CASE("Passes: Concat without axis before opset 4 folds along axis 1") {
  // Concat-1's axis defaults to 1; the folding used 0.
  Graph g;
  g.source.opset = 3;
  auto constant = [&](const char* name, float v) {
    auto t = std::make_shared<TensorData>();
    t->dims = {2, 2};
    for (int i = 0; i < 4; ++i) {
      uint8_t b[4];
      std::memcpy(b, &v, 4);
      t->bytes.insert(t->bytes.end(), b, b + 4);
    }
    return g.addConstant(name, t);
  };
  Value* a = constant("a", 1.0f);
  Value* b = constant("b", 2.0f);
  g.input = g.addValue("input", DataType::Float, {1, 2, 6, 6});
  Value* out = g.addValue("cat", DataType::Float, {});
  g.addNode(OpKind::OnnxConcat, {a, b}, out, {Origin{"cat", "Concat", 0}});
  g.setOutput(out);
  foldConstants(g);
  REQUIRE(g.output0()->isConstant());
  CHECK(g.output0()->constant->dims == std::vector<int64_t>{2, 4});
  CHECK(g.output0()->constant->toFloats() ==
        std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2});
}
