// LayoutRegions.cpp - the passes that make channel-last regions (ConvNeXt,
// Swin) and a vision transformer's tokens channel-first, so that HPVM's
// N x C x H x W ops compute them.
#include "passes/LayoutRegions.h"

#include "ir/Printer.h"
#include "onnx/OpAttrs.h"
#include "onnx/Rank3Input.h"
#include "passes/AttentionMatchers.h"
#include "passes/ConstantTensors.h"
#include "passes/Matchers.h"
#include "passes/OpGeometry.h"
#include "support/Diagnostics.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

namespace hpvm::fe {

namespace {

/// True if node \p u, reading channel-last value \p v, works per pixel on
/// the last axis: LayerNormalization over it, MatMul by a constant matrix
/// (a Linear layer), elementwise ops whose constants are scalars or hold
/// one value per channel of the last axis, activations (Erf included: the
/// pieces of a GELU not fused yet). Whether every non-constant operand
/// comes from the same region is for the caller to check.
bool worksPerPixel(const Node* u, const Value* v, int64_t opset) {
  const OpKind k = u->kind;
  if (k == OpKind::OnnxLayerNormalization) {
    OpAttrs a(*u, opset);
    const int64_t axis = a.getInt("axis");
    bool fits = u->inputs[0] == v &&
                (axis == -1 || axis == int64_t(v->shape.size()) - 1);
    for (size_t i = 1; i < u->inputs.size(); ++i)
      fits =
          fits && (u->inputs[i]->name.empty() ||
                   (u->inputs[i]->isConstant() &&
                    u->inputs[i]->constant->dtype == DataType::Float &&
                    u->inputs[i]->constant->numElements() == v->shape.back()));
    return fits;
  }
  if (k == OpKind::OnnxMatMul) {
    const Value* w = u->inputs[1];
    return u->inputs[0] == v && w->isConstant() &&
           w->constant->dims.size() == 2;
  }
  if (k == OpKind::OnnxAdd || k == OpKind::OnnxSub || k == OpKind::OnnxMul ||
      k == OpKind::OnnxDiv) {
    bool fits = u->inputs.size() == 2;
    for (const Value* in : u->inputs)
      fits = fits && (!in->isConstant() || in->constant->numElements() == 1 ||
                      in->constant->numElements() == in->constant->dims.back());
    return fits;
  }
  if (k == OpKind::OnnxSoftmax || k == OpKind::OnnxLogSoftmax) {
    // Over the last axis (every opset's Softmax agrees there).
    const int64_t rank = int64_t(v->shape.size());
    const int64_t axis = OpAttrs(*u, opset).getInt("axis");
    return u->inputs[0] == v && (axis == -1 || axis == rank - 1);
  }
  if (k == OpKind::Gelu || k == OpKind::Silu || k == OpKind::OnnxRelu ||
      k == OpKind::OnnxSigmoid || k == OpKind::OnnxTanh ||
      k == OpKind::OnnxHardSwish || k == OpKind::OnnxClip ||
      k == OpKind::OnnxErf || k == OpKind::OnnxLeakyRelu ||
      k == OpKind::OnnxHardSigmoid) {
    bool fits = u->inputs[0] == v;
    for (size_t i = 1; i < u->inputs.size(); ++i)
      fits = fits && u->inputs[i]->isConstant();
    return fits;
  }
  return false;
}

/// True if node \p u, reading channel-last value \p v, moves whole pixels
/// of it: a Slice of rows or columns (Swin's patch merging takes every
/// second one), a Concat along the channels, or a constant Pad of rows and
/// columns (Swin pads to whole windows).
bool movesPixels(const Node* u, const Value* v, int64_t opset) {
  if (v->shape.size() != 4 || u->output->shape.size() != 4)
    return false;
  if (u->kind == OpKind::OnnxConcat) {
    const int64_t axis = OpAttrs(*u, opset).getInt("axis");
    return axis == 3 || axis == -1;
  }
  if (u->kind == OpKind::OnnxPad) {
    std::vector<int64_t> pads;
    double value = 0;
    return u->inputs[0] == v &&
           padGeometry(*u, opset, pads, value, true).empty() &&
           OpAttrs(*u, opset).getString("mode") == "constant";
  }
  std::vector<int64_t> begin, step, extent;
  return u->kind == OpKind::OnnxSlice && u->inputs[0] == v &&
         sliceGeometry(*u, opset, v->shape, begin, step, extent) &&
         begin[0] == 0 && step[0] == 1 && extent[0] == v->shape[0] &&
         begin[3] == 0 && step[3] == 1 && extent[3] == v->shape[3] &&
         step[1] > 0 && step[2] > 0 && extent[1] > 0 && extent[2] > 0;
}

/// Rewrites node \p u of a channel-last region for channel-first data
/// (its output shape already is): a LayerNormalization over the last axis
/// becomes layer_norm, a MatMul by a constant K x N matrix a 1 x 1 Conv,
/// and constants over the last axis of elementwise ops C x 1 x 1. Adds the
/// nodes it replaces to \p erased.
void rewriteChannelFirst(Graph& g, Node* u, std::unordered_set<Node*>& erased) {
  const int64_t opset = g.source.opset;
  const OpKind k = u->kind;
  if (k == OpKind::OnnxLayerNormalization) {
    // Over the last axis channel-last is over the channels of each
    // pixel channel-first: HPVM's layer_norm (ONNX's axis 1 would
    // normalize C, H and W together).
    const int64_t ch = u->output->shape[1];
    std::vector<Value*> ins = {u->inputs[0]};
    for (size_t i = 1; i < 3; ++i) {
      std::shared_ptr<const TensorData> t =
          i < u->inputs.size() && !u->inputs[i]->name.empty()
              ? u->inputs[i]->constant
              : floatTensor(std::vector<float>(size_t(ch), i == 1 ? 1 : 0),
                            {ch});
      if (!t || t->numElements() != ch || t->dtype != DataType::Float) {
        ins.clear();
        break;
      }
      Value* c = g.addConstant(
          i < u->inputs.size()
              ? u->inputs[i]->name
              : u->output->name + (i == 1 ? ".scale" : ".bias"),
          withDims(*t, {1, ch, 1, 1}),
          i < u->inputs.size() ? u->inputs[i]->initializerIndex : -1);
      c->shape = {1, ch, 1, 1};
      ins.push_back(c);
    }
    HPVM_ASSERT(ins.size() == 3, "LayerNormalization scale/bias checked "
                                 "when the region was formed");
    const double eps = OpAttrs(*u, opset).getFloat("epsilon");
    erased.insert(u);
    Node* ln = replaceChain(g, OpKind::LayerNorm, std::move(ins), {u});
    ln->scalars = {Scalar::real(shortestFloat(float(eps)))};
  } else if (k == OpKind::OnnxMatMul) {
    // x W (W: K x N) per pixel is a 1 x 1 convolution by W^T.
    const TensorData& w = *u->inputs[1]->constant;
    const int64_t K = w.dims[0], N = w.dims[1];
    std::vector<float> src = w.toFloats(), t(src.size());
    for (int64_t i = 0; i < K; ++i)
      for (int64_t j = 0; j < N; ++j)
        t[size_t(j * K + i)] = src[size_t(i * N + j)];
    Value* filter =
        g.addConstant(u->inputs[1]->name, floatTensor(t, {N, K, 1, 1}),
                      u->inputs[1]->initializerIndex);
    filter->shape = {N, K, 1, 1};
    erased.insert(u);
    Node* conv = replaceChain(g, OpKind::OnnxConv, {u->inputs[0], filter}, {u});
    conv->attrs["kernel_shape"] = std::vector<int64_t>{1, 1};
  } else if (k == OpKind::OnnxSoftmax || k == OpKind::OnnxLogSoftmax) {
    // Over the last axis channel-last is over the channels channel-first.
    erased.insert(u);
    Node* soft = replaceChain(g, OpKind::ChannelSoftmax, {u->inputs[0]}, {u});
    soft->scalars = {Scalar::integer(k == OpKind::OnnxLogSoftmax ? 1 : 0)};
  } else if (k == OpKind::OnnxSlice && opset < 10) {
    // Axes H, W, C (1, 2, 3) channel-last are 2, 3, 1 channel-first.
    OpAttrs a(*u, opset);
    std::vector<int64_t> axes = a.getInts("axes");
    if (axes.empty())
      for (size_t i = 0; i < a.getInts("starts").size(); ++i)
        axes.push_back(int64_t(i));
    for (int64_t& axis : axes)
      axis = channelFirstAxis(axis);
    u->attrs["axes"] = axes;
  } else if (k == OpKind::OnnxSlice) {
    // Opset 10+: starts, ends, axes and steps are inputs.
    std::vector<int64_t> axes;
    if (u->inputs.size() > 3 && !u->inputs[3]->name.empty()) {
      axes = u->inputs[3]->constant->toInts();
    } else {
      for (int64_t i = 0; i < u->inputs[1]->constant->numElements(); ++i)
        axes.push_back(i);
    }
    for (int64_t& a : axes)
      a = channelFirstAxis(a);
    Value* c = g.addConstant(u->output->name + ".axes",
                             intTensor(axes, {int64_t(axes.size())}), -1);
    c->shape = {int64_t(axes.size())};
    if (u->inputs.size() < 4)
      u->inputs.resize(4, nullptr);
    g.setInput(u, 3, c);
  } else if (k == OpKind::OnnxPad) {
    // N, H, W, C begins and ends become N, C, H, W ones.
    std::vector<int64_t> pads;
    double value = 0;
    padGeometry(*u, opset, pads, value, true);
    const std::vector<int64_t> first = {pads[0], pads[3], pads[1], pads[2],
                                        pads[4], pads[7], pads[5], pads[6]};
    if (u->inputs.size() > 1) {
      Value* c =
          g.addConstant(u->output->name + ".pads", intTensor(first, {8}), -1);
      c->shape = {8};
      g.setInput(u, 1, c);
    } else {
      u->attrs[OpAttrs(*u, opset).has("pads") ? "pads" : "paddings"] = first;
    }
  } else if (k == OpKind::OnnxConcat) {
    u->attrs["axis"] = channelFirstAxis(OpAttrs(*u, opset).getInt("axis"));
  } else {
    // Constants over the last axis become C x 1 x 1 (or stay scalars).
    for (size_t i = 0; i < u->inputs.size(); ++i) {
      const Value* in = u->inputs[i];
      if (!in->isConstant() || in->constant->numElements() == 1)
        continue;
      int64_t n = in->constant->numElements();
      Value* c = g.addConstant(in->name, withDims(*in->constant, {n, 1, 1}),
                               in->initializerIndex);
      c->shape = {n, 1, 1};
      g.setInput(u, i, c);
    }
  }
}

/// What a region walk makes of a user of a value inside the region.
struct RegionStep {
  enum Kind { Member, Exit, Block, Leave } kind;
  /// Block: nodes taken as a whole; the walk goes on from the last one's
  /// output (they are not members: the caller rewrites them itself).
  std::vector<Node*> block = {};
};

/// A region of activations in another layout: the nodes reachable from a
/// value before they leave it again.
struct Region {
  std::vector<Node*> members; ///< Rewritten node by node.
  std::vector<Node*> exits;   ///< Where the walk stopped, in order.
  /// The names of the members' values that are graph outputs (only when
  /// the walk was allowed them).
  std::vector<std::string> outputs;
};

/// Walks every node reachable from \p start, in graph (topological) order,
/// so that a node's inputs from the region are classified before it is:
/// step(u, v) classifies each node u reading a value v of the region (its
/// first). Nothing when a step leaves, the walk reaches a graph output
/// (unless \p outputs: then that value is one of the region's outputs), a
/// member reads a value from outside the region that is not a constant (no
/// mixing of layouts), or no exit is found; then \p stop (if given) is the
/// node where it stopped (null: no exit).
template <typename Step>
std::optional<Region> walkRegion(const Graph& g, Value* start, Step step,
                                 bool outputs = false,
                                 const Node** stop = nullptr) {
  auto stopAt = [&](const Node* n) {
    if (stop)
      *stop = n;
    return std::nullopt;
  };
  Region r;
  std::unordered_set<const Node*> seen;
  std::unordered_set<const Value*> inside;
  // Value v joins the region; false if it may not (a graph output).
  auto join = [&](Value* v) {
    inside.insert(v);
    if (!g.isOutput(v))
      return true;
    if (!outputs || v == start)
      return false;
    r.outputs.push_back(v->name);
    return true;
  };
  if (!join(start))
    return stopAt(start->producer);
  for (const auto& owned : g.nodes()) {
    Node* u = owned.get();
    auto in = std::find_if(u->inputs.begin(), u->inputs.end(),
                           [&](const Value* v) { return inside.count(v); });
    if (in == u->inputs.end() || !seen.insert(u).second)
      continue;
    RegionStep s = step(u, *in);
    switch (s.kind) {
    case RegionStep::Leave:
      return stopAt(u);
    case RegionStep::Exit:
      r.exits.push_back(u);
      break;
    case RegionStep::Member:
      r.members.push_back(u);
      if (!join(u->output))
        return stopAt(u);
      break;
    case RegionStep::Block:
      seen.insert(s.block.begin(), s.block.end());
      if (!join(s.block.back()->output))
        return stopAt(s.block.back());
      break;
    }
  }
  for (const Node* u : r.members)
    for (const Value* in : u->inputs)
      if (!inside.count(in) && !in->isConstant())
        return stopAt(u);
  if (r.exits.empty() && r.outputs.empty())
    return stopAt(nullptr);
  return r;
}

} // namespace

void makeChannelFirst(Graph& g) {
  const int64_t opset = g.source.opset;
  auto permOf = [&](const Node* n) {
    return OpAttrs(*n, opset).getInts("perm");
  };
  const std::vector<int64_t> toLast = {0, 2, 3, 1}, toFirst = {0, 3, 1, 2};
  std::unordered_set<Node*> erased;
  for (Node* enter : nodeList(g)) {
    if (erased.count(enter) || enter->kind != OpKind::OnnxTranspose ||
        enter->inputs[0]->shape.size() != 4 || enter->inputs[0]->isConstant() ||
        permOf(enter) != toLast || g.isOutput(enter->output))
      continue;
    // The region: every node reachable from the channel-last value before
    // a Transpose back; each must work per pixel on the last axis.
    // Swin's window attentions are taken whole.
    std::vector<WindowAttentionMatch> windows;
    std::optional<Region> region =
        walkRegion(g, enter->output, [&](Node* u, Value* v) {
          if (u->kind == OpKind::OnnxTranspose && permOf(u) == toFirst)
            return RegionStep{RegionStep::Exit};
          WindowAttentionMatch m;
          if ((u->kind == OpKind::OnnxSlice ||
               u->kind == OpKind::OnnxReshape) &&
              matchWindowAttention(g, v, m)) {
            windows.push_back(m);
            return RegionStep{RegionStep::Block, m.nodes};
          }
          return RegionStep{
              (worksPerPixel(u, v, opset) || movesPixels(u, v, opset)) &&
                      u->output->shape.size() == 4
                  ? RegionStep::Member
                  : RegionStep::Leave};
        });
    if (!region)
      continue;
    // Rewrite: shapes N x H x W x C become N x C x H x W.
    for (Node* u : region->members) {
      const std::vector<int64_t> s = u->output->shape;
      u->output->shape = {s[0], s[3], s[1], s[2]};
      rewriteChannelFirst(g, u, erased);
    }
    for (const WindowAttentionMatch& m : windows) {
      for (Node* n : m.nodes)
        erased.insert(n);
      replaceWindowAttention(g, m);
    }
    for (Node* x : region->exits) {
      g.replaceAllUses(x->output, x->inputs[0]);
      g.eraseNode(x);
      erased.insert(x);
    }
    g.replaceAllUses(enter->output, enter->inputs[0]);
    g.eraseNode(enter);
    erased.insert(enter);
  }
  g.pruneValues();
}

namespace {

/// The token stage that starts at \p enter, a Reshape (or Flatten, or
/// Squeeze) of a B x D x H x W activation to B x D x H*W followed by a
/// Transpose to B x H*W x D: ViT's (the class token concatenated before,
/// the position embedding added), or any other (a CRNN's columns); or a
/// 3-D input read as B x T x D tokens (isTokensOfRank3Input()).
struct TokenEntry {
  std::vector<Node*> embed; ///< The nodes the entry replaces.
  Value* tokens = nullptr;  ///< The B x T x D value the region starts at.
  bool vit = false;         ///< ViT's: tokens B x D x T x 1 after it.
  /// A 3-D input's: held B x 1 x T x D, tokens B x D x 1 x T after it.
  bool input = false;
  Value *cls = nullptr, *pos = nullptr; ///< ViT's constants.
};

std::optional<TokenEntry> matchTokenEntry(const Graph& g, Node* enter) {
  const int64_t opset = g.source.opset;
  if (isTokensOfRank3Input(g, *enter)) {
    TokenEntry e;
    e.embed = {enter};
    e.tokens = enter->output;
    e.input = true;
    return e;
  }
  if (enter->kind != OpKind::OnnxReshape &&
      enter->kind != OpKind::OnnxFlatten && enter->kind != OpKind::OnnxSqueeze)
    return std::nullopt;
  Value* x = enter->inputs[0];
  const std::vector<int64_t>& xs = x->shape;
  if (x->isConstant() || xs.size() != 4 ||
      enter->output->shape != std::vector<int64_t>{xs[0], xs[1], xs[2] * xs[3]})
    return std::nullopt;
  const int64_t B = xs[0], D = xs[1], T = 1 + xs[2] * xs[3];
  Node* toLast = soleUser(enter->output);
  if (!isTranspose(toLast, enter->output, {0, 2, 1}, opset) ||
      g.isOutput(toLast->output))
    return std::nullopt;
  TokenEntry e;
  e.embed = {enter, toLast};
  e.tokens = toLast->output;
  Node* cat = soleUser(toLast->output);
  if (!cat || cat->kind != OpKind::OnnxConcat || cat->inputs.size() != 2 ||
      cat->inputs[1] != toLast->output || !isConstantOf(cat->inputs[0], D, D))
    return e;
  // ViT's: the class token and the position embedding; the whole pattern
  // or none of it.
  const int64_t catAxis = OpAttrs(*cat, opset).getInt("axis");
  Node* pos = soleUser(cat->output);
  Value* posValue = pos && pos->kind == OpKind::OnnxAdd
                        ? otherInput(pos, cat->output)
                        : nullptr;
  if ((catAxis != 1 && catAxis != -2) || !isConstantOf(posValue, T * D, D) ||
      g.isOutput(pos->output) ||
      pos->output->shape != std::vector<int64_t>{B, T, D})
    return std::nullopt;
  e.embed.push_back(cat);
  e.embed.push_back(pos);
  e.tokens = pos->output;
  e.vit = true;
  e.cls = cat->inputs[0];
  e.pos = posValue;
  return e;
}

/// Why the B x T x D \p tokens cannot be kept channel-first: node \p stop
/// (null: the tokens never leave) does not work per token, or (\p mixed)
/// reads the tokens and their transpose.
std::string tokenStageProblem(const Value* tokens, const Node* stop,
                              bool mixed) {
  const std::string what = mixed ? "reads the tokens and their transpose"
                                 : "does not work per token";
  std::string where =
      stop == nullptr ? "never leave as a mean over the tokens, the Gather "
                        "of one or a graph output"
      : stop->origins.empty()
          ? "reach a node that " + what
          : "reach " + nodeName(stop->origins.front()) + ", which " + what;
  return "the " + formatShape(tokens->shape) + " tokens (B x T x D) it " +
         "makes " + where + "; tokens are supported where every node on " +
         "them " + kPerTokenRule;
}

/// MatMul \p u of two token sequences: B x M x K times B x K x N (a
/// token_matmul once they are held channel-first).
bool isTokenProduct(const Node* u) {
  if (u->kind != OpKind::OnnxMatMul || u->inputs.size() != 2)
    return false;
  const Value *a = u->inputs[0], *b = u->inputs[1];
  const std::vector<int64_t>&as = a->shape, &bs = b->shape;
  return !a->isConstant() && !b->isConstant() && as.size() == 3 &&
         bs.size() == 3 && as[0] == bs[0] && as[2] == bs[1] &&
         u->output->shape == std::vector<int64_t>{as[0], as[1], bs[2]};
}

/// ReduceMean over the tokens of B x T x D \p v (axis 1, keepdims 0):
/// the global mean pool of the tokens held channel-first.
bool meanOfTokens(const Node* u, const Value* v, int64_t opset) {
  if (u->kind != OpKind::OnnxReduceMean || u->inputs.size() != 1 ||
      u->inputs[0] != v)
    return false;
  OpAttrs a(*u, opset);
  const std::vector<int64_t> axes = a.getInts("axes");
  return a.getInt("keepdims") == 0 && axes.size() == 1 &&
         (axes[0] == 1 || axes[0] == -2);
}

} // namespace

void makeTokensChannelFirst(Graph& g) {
  const int64_t opset = g.source.opset;
  std::unordered_set<Node*> erased;
  for (Node* enter : nodeList(g)) {
    if (erased.count(enter))
      continue;
    std::optional<TokenEntry> e = matchTokenEntry(g, enter);
    if (!e)
      continue;
    Value* x = enter->inputs[0];
    const int64_t B = x->shape[0], D = e->input ? x->shape[3] : x->shape[1];
    // Tokens channel-first: ViT's B x D x T x 1 (the class token first), a
    // 3-D input's B x D x 1 x T, the others B x D x H x W as they came
    // (token h * W + w).
    const int64_t rows = e->vit     ? 1 + x->shape[2] * x->shape[3]
                         : e->input ? 1
                                    : x->shape[2],
                  cols = e->vit     ? 1
                         : e->input ? x->shape[2]
                                    : x->shape[3],
                  T = rows * cols;
    // The region: every node reachable from the tokens before they leave
    // as a Gather of one token, a mean over the tokens or a graph output;
    // each must work per token on the features (the last axis) or be a
    // self-attention.
    // A Transpose of the last two axes swaps tokens and features (the
    // token mixing of MLP-Mixer): the values after it are "flipped", B x D
    // x T held B x T x D x 1, until a Transpose back.
    std::vector<SelfAttention> attentions;
    std::unordered_set<const Value*> flipped;
    std::unordered_set<const Node*> products; // MatMuls of two token values
    const Node* stop = nullptr;
    bool mixed = false;
    std::optional<Region> region = walkRegion(
        g, e->tokens,
        [&](Node* u, const Value* v) {
          const bool flip = flipped.count(v) != 0;
          if (isTokenProduct(u)) {
            // Oriented as its first operand (classified already: the walk
            // goes in graph order); flipped products must stay B x D x T.
            products.insert(u);
            if (flipped.count(u->inputs[0]) == 0)
              return RegionStep{RegionStep::Member};
            if (u->output->shape[2] != T)
              return RegionStep{RegionStep::Leave};
            flipped.insert(u->output);
            return RegionStep{RegionStep::Member};
          }
          if (u->kind == OpKind::OnnxTranspose) {
            SelfAttention m;
            if (!flip && matchSelfAttention(g, u, m)) {
              attentions.push_back(m);
              return RegionStep{RegionStep::Block, m.nodes};
            }
            if (!isTranspose(u, v, {0, 2, 1}, opset))
              return RegionStep{RegionStep::Leave};
            if (!flip)
              flipped.insert(u->output);
            return RegionStep{RegionStep::Member};
          }
          if (flip) {
            // Per token of the flipped tokens: anything but an exit.
            if (!worksPerPixel(u, v, opset) || u->output->shape.size() != 3)
              return RegionStep{RegionStep::Leave};
            flipped.insert(u->output);
            return RegionStep{RegionStep::Member};
          }
          if (u->kind == OpKind::OnnxGather) {
            // One token (ViT's class token) to the head: B x D.
            const Value* idx = u->inputs[1];
            const bool one =
                u->inputs[0] == v && OpAttrs(*u, opset).getInt("axis") == 1 &&
                idx->isConstant() && idx->constant->dims.empty() &&
                idx->constant->asInt(0) >= -T && idx->constant->asInt(0) < T;
            return RegionStep{one ? RegionStep::Exit : RegionStep::Leave};
          }
          if (meanOfTokens(u, v, opset))
            return RegionStep{RegionStep::Exit};
          return RegionStep{worksPerPixel(u, v, opset) &&
                                    u->output->shape.size() == 3
                                ? RegionStep::Member
                                : RegionStep::Leave};
        },
        !e->vit, &stop);
    // Every member reads values of its own orientation (a Transpose the
    // other one): an Add of tokens and flipped tokens (T = D) is no
    // per-token op. (A product's second operand may have either: held
    // channel-first, both are its K tokens.)
    auto orientationFits = [&](const Node* u) {
      const bool out = flipped.count(u->output) != 0;
      const size_t read = products.count(u) ? 1 : u->inputs.size();
      for (size_t i = 0; i < read; ++i)
        if (!u->inputs[i]->isConstant() &&
            (flipped.count(u->inputs[i]) != 0) !=
                (out != (u->kind == OpKind::OnnxTranspose)))
          return false;
      return true;
    };
    if (region) {
      auto bad = std::find_if_not(region->members.begin(),
                                  region->members.end(), orientationFits);
      if (bad != region->members.end()) {
        stop = *bad;
        mixed = true;
        region.reset();
      }
    }
    if (!region) {
      // Told by lowering in place of the entry's own refusal (a 3-D
      // input's readers are told theirs).
      if (!e->input)
        for (const Node* n : e->embed)
          for (const Origin& o : n->origins)
            g.tokenStages[o.index] = tokenStageProblem(e->tokens, stop, mixed);
      continue;
    }
    // Rewrite: the entry becomes ViT's class_token or nothing, tokens
    // B x T x D become B x D x rows x cols, flipped tokens B x D x T
    // B x T x D x 1.
    erased.insert(e->embed.begin(), e->embed.end());
    if (e->vit) {
      const TensorData& pe = *e->pos->constant;
      std::vector<float> src = pe.toFloats(), peT(src.size());
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < D; ++d)
          peT[size_t(d * T + t)] = src[size_t(t * D + d)];
      Value* clsC =
          g.addConstant(e->cls->name, withDims(*e->cls->constant, {1, D, 1, 1}),
                        e->cls->initializerIndex);
      clsC->shape = {1, D, 1, 1};
      Value* posC = g.addConstant(e->pos->name, floatTensor(peT, {1, D, T, 1}),
                                  e->pos->initializerIndex);
      posC->shape = {1, D, T, 1};
      Node* tokens =
          replaceChain(g, OpKind::ClassToken, {x, clsC, posC}, e->embed);
      tokens->output->shape = {B, D, T, 1};
    } else if (e->input) {
      // B x 1 x T x D in memory is B x T x D: its NHWC view (H = 1, W = T,
      // C = D) made channel-first.
      Node* tokens = replaceChain(g, OpKind::ChannelsFirst, {x}, e->embed);
      tokens->output->shape = {B, D, 1, T};
    } else {
      g.replaceAllUses(e->tokens, x);
      for (size_t i = e->embed.size(); i-- > 0;)
        g.eraseNode(e->embed[i]);
    }
    for (SelfAttention& m : attentions) {
      erased.insert(m.nodes.begin(), m.nodes.end());
      m.tokenRows = rows;
      m.tokenCols = cols;
      replaceSelfAttention(g, m);
    }
    for (Node* u : region->members) {
      // (Rewriting a member replaces its output value only.)
      const bool flip = flipped.count(u->output) != 0;
      const std::vector<int64_t> s = u->output->shape;
      u->output->shape = flip ? std::vector<int64_t>{s[0], s[2], s[1], 1}
                              : std::vector<int64_t>{s[0], s[2], rows, cols};
      if (products.count(u)) {
        erased.insert(u);
        replaceChain(g, OpKind::TokenMatMul, {u->inputs[0], u->inputs[1]}, {u});
        continue;
      }
      if (u->kind != OpKind::OnnxTranspose) {
        rewriteChannelFirst(g, u, erased);
        continue;
      }
      erased.insert(u);
      const std::vector<int64_t> held = u->output->shape;
      Node* swap = replaceChain(g, OpKind::TokenTranspose, {u->inputs[0]}, {u});
      swap->scalars = {Scalar::integer(held[2]), Scalar::integer(held[3])};
    }
    for (Node* exit : region->exits) {
      erased.insert(exit);
      if (exit->kind == OpKind::OnnxReduceMean) {
        // The mean over the pixels: axes 2 and 3 now (B x D still).
        exit->attrs["axes"] = std::vector<int64_t>{2, 3};
        continue;
      }
      int64_t index = exit->inputs[1]->constant->asInt(0);
      Node* pick =
          replaceChain(g, OpKind::SelectToken, {exit->inputs[0]}, {exit});
      pick->scalars = {Scalar::integer(index < 0 ? index + T : index)};
      pick->output->shape = {B, D, 1, 1};
    }
    // Graph outputs of tokens: written B x T x D again (channels_last).
    for (GraphOutput& o : g.outputs) {
      if (std::find(region->outputs.begin(), region->outputs.end(),
                    o.value->name) == region->outputs.end())
        continue;
      Value* cf = o.value;
      Node* producer = nullptr;
      for (const auto& n : g.nodes())
        if (n->output == cf)
          producer = n.get();
      HPVM_ASSERT(producer != nullptr, "a token output has no producer");
      const std::vector<int64_t>& held = cf->shape;
      Value* last =
          g.addValue(cf->name, DataType::Float, {B, held[2], held[3], held[1]});
      g.addNode(OpKind::ChannelsLast, {cf}, last, producer->origins,
                g.position(producer) + 1);
      o.value = last;
    }
  }
  g.pruneValues();
}

} // namespace hpvm::fe
