// FeatureSequencesTest.cpp - sequences of features (B x C x L) held as
// B x C x 1 x L images by makeSequencesImages: YOLOv8's Detect head, and
// the sequences it leaves to the token stages.
#include "passes/FeatureSequences.h"
#include "GraphQueries.h"
#include "LowerToHpvm.h"
#include "ir/Printer.h"
#include "onnx/ModelLoader.h"
#include "passes/ConstantFolding.h"
#include "passes/Simplify.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace hpvm::fe;
using namespace hpvm::fe::test;

TEST_CASE("Passes: YOLOv8's head is held as B x C x 1 x L: the scales "
          "joined by concat_width, DFL a group_softmax and a grouped conv") {
  std::unique_ptr<Graph> g = loadModel(fixture("yolo_head_tiny"), {});
  lowerToHpvm(*g);
  INFO(dumpIr(*g));
  using K = OpKind;
  // clang-format off
  CHECK(kindsOf(*g) ==
        std::vector<OpKind>{
            K::MaxPool,                            // the second scale
            K::Reshape, K::Reshape, K::ConcatWidth, // flattened, joined
            K::ChannelSlice, K::ChannelSlice,      // box bins, classes
            K::GroupSoftmax, K::GroupConv,         // DFL
            K::ChannelSlice, K::ChannelSlice,      // lt, rb
            K::Multiply, K::Add,                   // points - lt
            K::Add, K::Add, K::Multiply, K::Sub,   // + rb, centre, size
            K::Concat, K::Multiply,                // xywh * strides
            K::Sigmoid, K::Concat});               // class scores
  // clang-format on
  const Node* join = firstOf(*g, K::ConcatWidth);
  REQUIRE(join != nullptr);
  CHECK(join->inputs[0]->shape == std::vector<int64_t>{1, 14, 1, 16});
  CHECK(join->inputs[1]->shape == std::vector<int64_t>{1, 14, 1, 4});
  CHECK(join->output->shape == std::vector<int64_t>{1, 14, 1, 20});
  // Softmax over each side's 3 bins, then their expectation per side: the
  // Conv's weights [0, 1, 2] in each of the 4 groups.
  const Node* soft = firstOf(*g, K::GroupSoftmax);
  REQUIRE(soft != nullptr);
  CHECK(soft->scalars[0].i == 4);
  CHECK(soft->inputs[0]->shape == std::vector<int64_t>{1, 12, 1, 20});
  const Node* expect = firstOf(*g, K::GroupConv);
  REQUIRE(expect != nullptr);
  CHECK(expect->inputs[0] == soft->output);
  CHECK(expect->scalars.back().i == 4);
  CHECK(expect->inputs[1]->constant->dims == std::vector<int64_t>{4, 3, 1, 1});
  CHECK(expect->inputs[1]->constant->toFloats() ==
        std::vector<float>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2});
  CHECK(expect->output->shape == std::vector<int64_t>{1, 4, 1, 20});
  // The anchor points and strides broadcast at batch 1: 1 x 2 x 1 x 20
  // and 1 x 1 x 1 x 20.
  std::vector<std::vector<int64_t>> broadcast;
  for (const auto& n : g->nodes())
    if (n->kind == K::Add || n->kind == K::Multiply)
      if (n->inputs[1]->isConstant() && n->inputs[1]->shape[3] == 20)
        broadcast.push_back(n->inputs[1]->shape);
  CHECK(broadcast == std::vector<std::vector<int64_t>>{
                         {1, 2, 1, 20}, {1, 2, 1, 20}, {1, 1, 1, 20}});
  // Written with the declared dims.
  REQUIRE(g->outputs.size() == 1);
  CHECK(g->outputs[0].value->shape == std::vector<int64_t>{1, 6, 1, 20});
  CHECK(g->outputs[0].declared == std::vector<int64_t>{1, 6, 20});
}

TEST_CASE("Passes: sequences that reach a node that does not work on them "
          "are left to the token stages") {
  // The non-local block's keys (B x C x H*W, no Transpose) reach a MatMul.
  std::unique_ptr<Graph> g = loadModel(fixture("non_local_tiny"), {});
  eliminateDeadNodes(*g);
  foldConstants(*g);
  removeIdentities(*g);
  const std::string before = dumpIr(*g);
  makeSequencesImages(*g);
  CHECK(dumpIr(*g) == before);
}
