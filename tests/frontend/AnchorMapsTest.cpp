// AnchorMapsTest.cpp - per-anchor maps (B x A x H x W x K) held as
// B x K x A*H x W images by makeAnchorMapsImages: YOLOv5's Detect head.
#include "GraphQueries.h"
#include "LowerToHpvm.h"
#include "ir/Printer.h"
#include "onnx/ModelLoader.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace hpvm::fe;
using namespace hpvm::fe::test;

namespace {

/// The constant named \p name that node of kind \p k reads in \p g.
const Value* constantRead(const Graph& g, OpKind k, const std::string& name) {
  for (const auto& n : g.nodes())
    if (n->kind == k)
      for (const Value* in : n->inputs)
        if (in->isConstant() && in->name == name)
          return in;
  return nullptr;
}

} // namespace

TEST_CASE("Passes: YOLOv5's head is held as B x K x A*H x W: the anchors' "
          "values channel-shuffled, the boxes joined by concat_width") {
  std::unique_ptr<Graph> onnx = loadModel(fixture("yolov5_head_tiny"), {});
  const Value* grid5 = constantRead(*onnx, OpKind::OnnxAdd, "grid");
  REQUIRE(grid5 != nullptr);
  std::unique_ptr<Graph> g = loadModel(fixture("yolov5_head_tiny"), {});
  lowerToHpvm(*g);
  INFO(dumpIr(*g));
  using K = OpKind;
  // clang-format off
  CHECK(kindsOf(*g) ==
        std::vector<OpKind>{
            K::ChannelShuffle, K::Reshape, K::Sigmoid,  // 1 x 7 x 8 x 4
            K::ChannelSlice, K::ChannelSlice, K::ChannelSlice, // xy wh conf
            K::Multiply, K::Add, K::Multiply,            // (xy*2+grid)*8
            K::Multiply, K::Pow, K::Multiply,            // (wh*2)^2*sizes
            K::Concat, K::Reshape,                       // 1 x 7 x 1 x 32
            K::MaxPool, K::ChannelShuffle, K::Reshape,   // second scale
            K::Sigmoid, K::Reshape,                      // 1 x 7 x 1 x 8
            K::ConcatWidth, K::ChannelsLast});           // 1 x 40 x 7
  // clang-format on
  const Node* shuffle = firstOf(*g, K::ChannelShuffle);
  REQUIRE(shuffle != nullptr);
  CHECK(shuffle->scalars[0].i == 2); // channel a*7 + k to k*2 + a
  const Node* held = shuffle->output->users.front();
  CHECK(held->output->shape == std::vector<int64_t>{1, 7, 8, 4});
  // The grid, 1 x 2 x 4 x 4 x 2 (a, y, x, k), held 1 x 2 x 8 x 4 (k,
  // a*4 + y, x).
  const Value* grid = constantRead(*g, K::Add, "grid");
  REQUIRE(grid != nullptr);
  CHECK(grid->shape == std::vector<int64_t>{1, 2, 8, 4});
  const std::vector<float> src = grid5->constant->toFloats(),
                           got = grid->constant->toFloats();
  REQUIRE(src.size() == 64);
  REQUIRE(got.size() == 64);
  bool same = true;
  for (int k = 0; k < 2; ++k)
    for (int a = 0; a < 2; ++a)
      for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 4; ++x)
          same = same && got[size_t(((k * 2 + a) * 4 + y) * 4 + x)] ==
                             src[size_t(((a * 4 + y) * 4 + x) * 2 + k)];
  CHECK(same);
  const Node* join = firstOf(*g, K::ConcatWidth);
  REQUIRE(join != nullptr);
  CHECK(join->output->shape == std::vector<int64_t>{1, 7, 1, 40});
  REQUIRE(g->outputs.size() == 1);
  CHECK(g->outputs[0].value->shape == std::vector<int64_t>{1, 1, 40, 7});
  CHECK(g->outputs[0].declared == std::vector<int64_t>{1, 40, 7});
}
