// TokenStageTest.cpp - the token stages of makeTokensChannelFirst on
// fixture models: ViT's, a CRNN's columns, MLP-Mixer's token mixing, token
// products, non-local blocks, multi-head attention written out, and the
// stages left as they are (with the reason lowering gives).
#include "GraphQueries.h"
#include "LowerToHpvm.h"
#include "ir/Printer.h"
#include "lower/Lowering.h"
#include "onnx/ModelLoader.h"
#include "passes/ConstantFolding.h"
#include "passes/ConstantTensors.h"
#include "passes/Fusions.h"
#include "passes/Simplify.h"
#include "passes/TokenStages.h"
#include "support/Diagnostics.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace hpvm::fe;
using namespace hpvm::fe::test;

namespace {

/// Fixture \p name after the passes before the token stages.
std::unique_ptr<Graph> beforeTokens(const std::string& name) {
  std::unique_ptr<Graph> g = loadModel(fixture(name), {});
  eliminateDeadNodes(*g);
  foldConstants(*g);
  removeIdentities(*g);
  fuseLayerNorms(*g);
  return g;
}

/// beforeTokens(\p name), its attention's Div by 2 (1/sqrt(d)) made a Div
/// by 3.
std::unique_ptr<Graph> rescaled(const std::string& name) {
  std::unique_ptr<Graph> g = beforeTokens(name);
  Node* scale = nullptr;
  for (const auto& n : g->nodes())
    if (n->kind == OpKind::OnnxDiv && n->inputs[1]->isConstant() &&
        n->inputs[1]->constant->toFloats() == std::vector<float>{2.f})
      scale = n.get();
  REQUIRE(scale != nullptr);
  setScalarInput(*g, scale, 1, 3.f);
  return g;
}

/// Checks that the token pass leaves every node of rescaled(\p name) (no
/// class_token, no attention) and that lowering refuses the tokens.
void checkRescaledLeft(const std::string& name) {
  std::unique_ptr<Graph> g = rescaled(name);
  const size_t before = g->nodes().size();
  makeTokensChannelFirst(*g);
  CHECK(g->nodes().size() == before);
  CHECK(firstOf(*g, OpKind::ClassToken) == nullptr);
  CHECK(firstOf(*g, OpKind::Attention) == nullptr);
  CHECK_THROWS_AS(lowerNodes(*g), UserError);
}

/// Fixture \p name loaded and lowered to HPVM ops.
std::unique_ptr<Graph> lowered(const std::string& name) {
  std::unique_ptr<Graph> g = loadModel(fixture(name), {});
  lowerToHpvm(*g);
  return g;
}

} // namespace

TEST_CASE("Passes: ViT's tokens become channel-first: class_token, "
          "layer_norm, 1x1 convs, attention, gelu, select_token") {
  // torchvision's VisionTransformer at toy size as torch.onnx writes it:
  // 2x2 patches of 8 features plus the class token (5 tokens), one encoder
  // layer of 2 heads, MLP 16, 3 classes.
  std::unique_ptr<Graph> g = lowered("vit_tiny");
  using K = OpKind;
  CHECK(kindsOf(*g) ==
        std::vector<OpKind>{
            K::Conv,        K::Add,       K::ClassToken, // patch embedding
            K::LayerNorm,   K::Conv,      K::Add,        // ln_1, q, k, v
            K::Attention,   K::Conv,      K::Add,        // out_proj
            K::Add,         K::LayerNorm, K::Conv,       // residual, ln_2
            K::Add,         K::Gelu,      K::Conv,       // MLP
            K::Add,         K::Add,       K::LayerNorm,  // residual, ln
            K::SelectToken, K::Mul,       K::Add});      // class token, head
  const Node* tokens = firstOf(*g, K::ClassToken);
  REQUIRE(tokens != nullptr);
  CHECK(tokens->inputs[0]->shape == std::vector<int64_t>{1, 8, 2, 2});
  CHECK(tokens->inputs[1]->shape == std::vector<int64_t>{1, 8, 1, 1});
  CHECK(tokens->inputs[2]->shape == std::vector<int64_t>{1, 8, 5, 1});
  CHECK(tokens->output->shape == std::vector<int64_t>{1, 8, 5, 1});
  const Node* attn = firstOf(*g, K::Attention);
  REQUIRE(attn != nullptr);
  CHECK(attn->inputs[0]->shape == std::vector<int64_t>{1, 24, 5, 1});
  REQUIRE(attn->scalars.size() == 1);
  CHECK(attn->scalars[0].i == 2);
  const Node* pick = firstOf(*g, K::SelectToken);
  REQUIRE(pick != nullptr);
  CHECK(pick->scalars[0].i == 0);
  CHECK(pick->output->shape == std::vector<int64_t>{1, 8, 1, 1});
  // The position embedding (5 tokens x 8 features in ONNX) is transposed:
  // element (feature d, token t) is ONNX's (t, d).
  std::unique_ptr<Graph> onnx = loadModel(fixture("vit_tiny"), {});
  const Value* pe = nullptr;
  for (const auto& v : onnx->values())
    if (v->name == "encoder.pos_embedding")
      pe = v.get();
  REQUIRE(pe != nullptr);
  const std::vector<float> src = pe->constant->toFloats(),
                           got = tokens->inputs[2]->constant->toFloats();
  REQUIRE(got.size() == 40);
  for (int t = 0; t < 5; ++t)
    for (int d = 0; d < 8; ++d)
      CHECK(got[size_t(d * 5 + t)] == src[size_t(t * 8 + d)]);
}

TEST_CASE("Passes: a CRNN's columns become tokens channel-first: 1x1 "
          "convs, attention, channel_softmax, channels_last for the B x T x D "
          "output, pool_mean for the mean of the tokens") {
  // A conv pooled to 1 row of 3 columns of 8 features, Squeezed and
  // Transposed to 1 x 3 x 8 tokens, Linear, LayerNorm, a self-attention
  // of 2 heads; per-token LogSoftmax (output 0, 1 x 3 x 5) and a Linear of
  // the mean of the tokens (output 1, 1 x 3).
  std::unique_ptr<Graph> g = lowered("tokens_tiny");
  using K = OpKind;
  CHECK(kindsOf(*g) ==
        std::vector<OpKind>{K::Conv, K::Add, K::MaxPool,   // the conv stage
                            K::Conv, K::Add, K::LayerNorm, // proj, norm
                            K::Conv, K::Add, K::Attention, // q, k, v
                            K::Conv, K::Add, K::Add,       // out_proj, residual
                            K::Conv, K::Add, K::ChannelSoftmax, // per token
                            K::ChannelsLast,              // 1 x 3 x 5 again
                            K::AvgPool, K::Mul, K::Add}); // mean, whole
  // The tokens stay 1 x 8 x 1 x 3 (one row of columns).
  const Node* attn = firstOf(*g, K::Attention);
  REQUIRE(attn != nullptr);
  CHECK(attn->inputs[0]->shape == std::vector<int64_t>{1, 24, 1, 3});
  const Node* soft = firstOf(*g, K::ChannelSoftmax);
  REQUIRE(soft != nullptr);
  CHECK(soft->scalars[0].i == 1);
  const Node* last = firstOf(*g, K::ChannelsLast);
  REQUIRE(last != nullptr);
  CHECK(last->output->shape == std::vector<int64_t>{1, 1, 3, 5});
  REQUIRE(g->outputs.size() == 2);
  CHECK(g->outputs[0].value == last->output);
  CHECK(g->outputs[0].declared == std::vector<int64_t>{1, 3, 5});
}

TEST_CASE("Passes: MLP-Mixer's token mixing: token_transpose to the "
          "flipped tokens, a 1x1 conv across the tokens, token_transpose "
          "back, and a flipped graph output written B x D x T") {
  // 1 x 3 x 8 tokens (one row of 3 columns), LayerNorm, transposed to
  // 1 x 8 x 3 (output 1), a Linear over the 3 tokens, transposed back, a
  // residual; the mean over the tokens to 3 classes (output 0).
  std::unique_ptr<Graph> g = lowered("mixer_tiny");
  using K = OpKind;
  INFO(dumpIr(*g));
  CHECK(kindsOf(*g) ==
        std::vector<OpKind>{K::Conv, K::Add, K::MaxPool,     // the conv stage
                            K::LayerNorm, K::TokenTranspose, // flipped
                            K::ChannelsLast,                 // output 1
                            K::Conv, K::Add,   // the Linear over tokens
                            K::TokenTranspose, // back
                            K::Add,            // the residual
                            K::AvgPool, K::Mul, K::Add}); // mean, classes
  // Tokens 1 x 8 x 1 x 3; flipped 1 x 3 x 8 x 1 (3 features of 8 tokens).
  std::vector<const Node*> swaps;
  for (const auto& n : g->nodes())
    if (n->kind == K::TokenTranspose)
      swaps.push_back(n.get());
  REQUIRE(swaps.size() == 2);
  CHECK(swaps[0]->inputs[0]->shape == std::vector<int64_t>{1, 8, 1, 3});
  CHECK(swaps[0]->output->shape == std::vector<int64_t>{1, 3, 8, 1});
  CHECK(swaps[0]->scalars[0].i == 8);
  CHECK(swaps[0]->scalars[1].i == 1);
  CHECK(swaps[1]->output->shape == std::vector<int64_t>{1, 8, 1, 3});
  CHECK(swaps[1]->scalars[0].i == 1);
  CHECK(swaps[1]->scalars[1].i == 3);
  REQUIRE(g->outputs.size() == 2);
  const Node* last = firstOf(*g, K::ChannelsLast);
  REQUIRE(last != nullptr);
  CHECK(last->inputs[0] == swaps[0]->output);
  CHECK(g->outputs[1].value == last->output);
  CHECK(g->outputs[1].declared == std::vector<int64_t>{1, 8, 3});
}

TEST_CASE("Passes: tokens added to their own transpose (T = D: the same "
          "shape, not the same layout) are refused at the token stage's "
          "entry, naming the node") {
  std::unique_ptr<Graph> g = loadModel(fixture("errors/mixer_mixed"), {});
  std::string message;
  try {
    lowerToHpvm(*g);
  } catch (const UserError& e) {
    message = e.what();
  }
  CHECK(message ==
        fixture("errors/mixer_mixed") +
            ": node '/Squeeze' (Squeeze, #3): the 1x4x4 tokens (B x T x D) "
            "it makes reach node '/Add' (Add, #17), which reads the tokens "
            "and their transpose; tokens are supported where every node on "
            "them works per token (LayerNorm, Linear, Softmax over D, "
            "element-wise ops, self-attention, a MatMul of two token "
            "sequences; a Transpose of the last two axes and back) until a "
            "mean over the tokens, the Gather of one or a graph output\n(5 "
            "more nodes after these could not be "
            "checked until they are fixed)");
  CHECK(firstOf(*g, OpKind::TokenTranspose) == nullptr);
}

TEST_CASE("Passes: tokens stay as they are when a self-attention differs "
          "from the exporter's") {
  // Queries scaled by 1/3 instead of 1/sqrt(head dim) = 1/2: not the
  // attention op; the whole token region is left for the lowering to
  // refuse.
  checkRescaledLeft("vit_tiny");
}

TEST_CASE("Passes: MatMuls of two token sequences become token_matmul, "
          "whichever orientation each operand has") {
  // 1 x 3 x 8 tokens (one row of 3 columns); a single-head attention
  // written out, softmax(q @ k^T / 2) @ v, a residual; then
  // (t^T @ a)^T: a product of flipped tokens by the 3 x 3 weights.
  std::unique_ptr<Graph> g = lowered("products_tiny");
  using K = OpKind;
  INFO(dumpIr(*g));
  // clang-format off
  CHECK(kindsOf(*g) ==
        std::vector<OpKind>{
            K::Conv, K::Add, K::MaxPool,             // the conv stage
            K::Conv, K::Add, K::Conv, K::Add,        // queries, keys
            K::TokenTranspose, K::TokenMatMul,       // q @ k^T
            K::Multiply, K::ChannelSoftmax,          // / 2, softmax
            K::Conv, K::Add, K::TokenMatMul, K::Add, // a @ v, residual
            K::TokenTranspose, K::TokenMatMul,       // t^T @ a
            K::TokenTranspose, K::Add,               // back, residual
            K::AvgPool, K::Mul, K::Add});            // mean, classes
  // clang-format on
  std::vector<const Node*> products;
  for (const auto& n : g->nodes())
    if (n->kind == K::TokenMatMul)
      products.push_back(n.get());
  REQUIRE(products.size() == 3);
  // q @ k^T: 3 tokens of 8 by the 8 flipped tokens of 3 (held 3 x 8 x 1):
  // 3 tokens of 3.
  CHECK(products[0]->inputs[0]->shape == std::vector<int64_t>{1, 8, 1, 3});
  CHECK(products[0]->inputs[1]->shape == std::vector<int64_t>{1, 3, 8, 1});
  CHECK(products[0]->output->shape == std::vector<int64_t>{1, 3, 1, 3});
  // a @ v: 3 tokens of 3 by 3 tokens of 8 (held as the tokens are).
  CHECK(products[1]->inputs[1]->shape == std::vector<int64_t>{1, 8, 1, 3});
  CHECK(products[1]->output->shape == std::vector<int64_t>{1, 8, 1, 3});
  // t^T @ a: 8 flipped tokens of 3 by 3 tokens of 3: flipped, 1 x 3 x 8 x 1.
  CHECK(products[2]->inputs[0]->shape == std::vector<int64_t>{1, 3, 8, 1});
  CHECK(products[2]->output->shape == std::vector<int64_t>{1, 3, 8, 1});
  CHECK(products[2]->origins.front().name == "/MatMul_2");
}

TEST_CASE("Passes: a non-local block's tokens are one stage: the keys "
          "token_transpose'd, the products token_matmul, the way back to "
          "B x C x H x W nothing") {
  // A conv to 1 x 8 x 4 x 6; queries, keys, values by 1x1 convs to 4; the
  // keys viewed as 1 x 4 x 24 (flipped), the queries and values
  // transposed to 1 x 24 x 4; softmax(q @ k) @ v transposed and viewed
  // back as 1 x 4 x 4 x 6; a 1x1 conv, the residual, the mean, 3 classes.
  std::unique_ptr<Graph> g = lowered("non_local_tiny");
  using K = OpKind;
  INFO(dumpIr(*g));
  // clang-format off
  CHECK(kindsOf(*g) ==
        std::vector<OpKind>{
            K::Conv, K::Add,                      // the conv
            K::Conv, K::Add, K::Conv, K::Add,     // queries, keys
            K::TokenTranspose,                    // the keys' entry
            K::Conv, K::Add,                      // values
            K::TokenMatMul, K::ChannelSoftmax,    // softmax(q @ k)
            K::TokenMatMul,                       // @ v
            K::Conv, K::Add, K::Add,              // 1x1 conv, residual
            K::AvgPool, K::Mul, K::Add});         // mean, classes
  // clang-format on
  const Node* keys = firstOf(*g, K::TokenTranspose);
  REQUIRE(keys != nullptr);
  CHECK(keys->inputs[0]->shape == std::vector<int64_t>{1, 4, 4, 6});
  CHECK(keys->output->shape == std::vector<int64_t>{1, 24, 4, 1});
  CHECK(keys->scalars[0].i == 4);
  CHECK(keys->scalars[1].i == 1);
  const Node* scores = firstOf(*g, K::TokenMatMul);
  REQUIRE(scores != nullptr);
  CHECK(scores->output->shape == std::vector<int64_t>{1, 24, 4, 6});
  // The 1x1 conv after the block reads the second product as it is.
  const Node* mixed = scores->output->users.front()->output->users.front();
  REQUIRE(mixed->kind == K::TokenMatMul);
  CHECK(mixed->output->shape == std::vector<int64_t>{1, 4, 4, 6});
  REQUIRE(mixed->output->users.size() == 1);
  CHECK(mixed->output->users.front()->kind == K::Conv);
}

TEST_CASE("Passes: multi-head attention written out (timm's 5-D cut and "
          "unbind, BERT-style heads of each projection) becomes one "
          "attention op each") {
  // 1 x 3 x 8 tokens (one row of 3 columns), 2 heads of 4: timm's form
  // (qkv Linear, Reshape to 1 x 3 x 3 x 2 x 4, permute, Split, Squeeze,
  // q * 1/2), a residual; a Linear each, viewed as heads and permuted, the
  // scores / 2; a residual; the mean, 3 classes.
  std::unique_ptr<Graph> g = lowered("heads_tiny");
  using K = OpKind;
  INFO(dumpIr(*g));
  // clang-format off
  CHECK(kindsOf(*g) ==
        std::vector<OpKind>{
            K::Conv, K::Add, K::MaxPool,               // the conv stage
            K::Conv, K::Add, K::Attention, K::Add,     // timm's, residual
            K::Conv, K::Add, K::Conv, K::Add,          // queries, keys
            K::Conv, K::Add, K::Concat,                // values, joined
            K::Attention, K::Add,                      // heads, residual
            K::AvgPool, K::Mul, K::Add});              // mean, classes
  // clang-format on
  std::vector<const Node*> heads;
  for (const auto& n : g->nodes())
    if (n->kind == K::Attention)
      heads.push_back(n.get());
  REQUIRE(heads.size() == 2);
  for (const Node* a : heads) {
    CHECK(a->scalars[0].i == 2);
    CHECK(a->inputs[0]->shape == std::vector<int64_t>{1, 24, 1, 3});
    CHECK(a->output->shape == std::vector<int64_t>{1, 8, 1, 3});
  }
  // timm's reads the qkv Linear as it is; the other the three joined.
  CHECK(heads[0]->inputs[0]->producer->kind == K::Add);
  CHECK(heads[1]->inputs[0]->producer->kind == K::Concat);
}

TEST_CASE("Passes: written-out heads scaled by another factor than "
          "d^-0.5 become attention on queries multiplied first") {
  // The BERT-style block's scores divided by 3, not sqrt(4): its queries
  // times 2/3, then the attention op's own 1/2.
  std::unique_ptr<Graph> g = rescaled("heads_tiny");
  makeTokensChannelFirst(*g);
  std::vector<const Node*> heads;
  for (const auto& n : g->nodes())
    if (n->kind == OpKind::Attention)
      heads.push_back(n.get());
  REQUIRE(heads.size() == 2);
  // timm's as before: the qkv Linear read as it is.
  CHECK(heads[0]->inputs[0]->producer->kind == OpKind::OnnxAdd);
  const Node* cat = heads[1]->inputs[0]->producer;
  REQUIRE(cat->kind == OpKind::OnnxConcat);
  const Node* mul = cat->inputs[0]->producer;
  REQUIRE(mul->kind == OpKind::OnnxMul);
  CHECK(mul->inputs[1]->constant->dims == std::vector<int64_t>{1, 8, 1, 1});
  CHECK(mul->inputs[1]->constant->toFloats() ==
        std::vector<float>(8, float(2.0 / 3.0)));
  CHECK(mul->output->shape == std::vector<int64_t>{1, 8, 1, 3});
  CHECK_NOTHROW(lowerNodes(*g));
}

TEST_CASE("Passes: written-out heads with a constant added to the scores "
          "become window_attention over all the tokens, the bias key-major "
          "per head") {
  // The BERT-style block's scores / 2 plus a 3 x 3 bias shared by its 2
  // heads (BEiT's relative position bias, a mask): one window of the 1 x 3
  // tokens, unshifted, the bias transposed and repeated per head, no mask.
  std::unique_ptr<Graph> g = beforeTokens("heads_tiny");
  Node* softmax = nullptr;
  for (const auto& n : g->nodes())
    if (n->kind == OpKind::OnnxSoftmax)
      softmax = n.get();
  REQUIRE(softmax != nullptr); // the BERT-style block's (the last)
  Value* scores = softmax->inputs[0];
  REQUIRE(scores->shape == std::vector<int64_t>{1, 2, 3, 3});
  const std::vector<float> bias{0, 1, 2, 3, 4, 5, 6, 7, 8};
  Value* c = g->addConstant("bias", floatTensor(bias, {3, 3}));
  c->shape = {3, 3};
  Value* biased = g->addValue("biased", DataType::Float, scores->shape);
  g->addNode(OpKind::OnnxAdd, {scores, c}, biased, softmax->origins,
             g->position(softmax));
  g->setInput(softmax, 0, biased);
  makeTokensChannelFirst(*g);
  const Node* w = firstOf(*g, OpKind::WindowAttention);
  REQUIRE(w != nullptr);
  CHECK(firstOf(*g, OpKind::OnnxSoftmax) == nullptr);
  REQUIRE(w->scalars.size() == 5);
  CHECK(std::vector<int64_t>{w->scalars[0].i, w->scalars[1].i, w->scalars[2].i,
                             w->scalars[3].i, w->scalars[4].i} ==
        std::vector<int64_t>{1, 3, 2, 0, 0});
  CHECK(w->inputs[0]->shape == std::vector<int64_t>{1, 24, 1, 3});
  CHECK(w->output->shape == std::vector<int64_t>{1, 8, 1, 3});
  const std::vector<float> keyMajor{0, 3, 6, 1, 4, 7, 2, 5, 8};
  std::vector<float> perHead = keyMajor;
  perHead.insert(perHead.end(), keyMajor.begin(), keyMajor.end());
  CHECK(w->inputs[1]->constant->dims == std::vector<int64_t>{1, 2, 3, 3});
  CHECK(w->inputs[1]->constant->toFloats() == perHead);
  CHECK(w->inputs[2]->constant->dims == std::vector<int64_t>{1, 1, 3, 3});
  CHECK(w->inputs[2]->constant->toFloats() == std::vector<float>(9, 0.f));
  // timm's block is still an attention op.
  CHECK(firstOf(*g, OpKind::Attention) != nullptr);
  CHECK_NOTHROW(lowerNodes(*g));
}
