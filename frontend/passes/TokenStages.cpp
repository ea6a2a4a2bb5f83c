// TokenStages.cpp - the pass that keeps sequences of tokens (B x T x D)
// channel-first, so that HPVM's N x C x H x W ops compute them.
#include "passes/TokenStages.h"

#include "ir/Printer.h"
#include "onnx/OpAttrs.h"
#include "onnx/Rank3Input.h"
#include "passes/AttentionMatchers.h"
#include "passes/ConstantTensors.h"
#include "passes/Matchers.h"
#include "passes/Regions.h"
#include "support/Diagnostics.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace hpvm::fe {

namespace {

/// The token stage that starts at \p enter, a Reshape (or Flatten, or
/// Squeeze) of a B x D x H x W activation to B x D x H*W followed by a
/// Transpose to B x H*W x D: ViT's (the class token concatenated before,
/// the position embedding added), or any other (a CRNN's columns); or
/// without the Transpose, the tokens read features first (a non-local
/// block's keys); or a 3-D input read as B x T x D tokens
/// (isTokensOfRank3Input()).
struct TokenEntry {
  std::vector<Node*> embed; ///< The nodes the entry replaces.
  Value* tokens = nullptr;  ///< The B x T x D value the region starts at.
  bool vit = false;         ///< ViT's: tokens B x D x T x 1 after it.
  /// A 3-D input's: held B x 1 x T x D, tokens B x D x 1 x T after it.
  bool input = false;
  /// Without the Transpose: tokens B x D x T ("flipped"), held B x T x D x
  /// 1 after it (a token_transpose).
  bool flipped = false;
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
  if (!isTranspose(toLast, enter->output, {0, 2, 1}, opset)) {
    if (g.isOutput(enter->output) || enter->output->users.empty())
      return std::nullopt;
    TokenEntry e;
    e.embed = {enter};
    e.tokens = enter->output;
    e.flipped = true;
    return e;
  }
  if (g.isOutput(toLast->output))
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

/// The entry, neither ViT's nor a 3-D input's, whose tokens are \p v (the
/// output of a Reshape, or of the Transpose after one), or nothing.
std::optional<TokenEntry> entryMaking(const Graph& g, const Value* v) {
  Node* p = v->producer;
  if (p != nullptr && p->kind == OpKind::OnnxTranspose)
    p = p->inputs[0]->producer;
  if (p == nullptr)
    return std::nullopt;
  std::optional<TokenEntry> e = matchTokenEntry(g, p);
  if (!e || e->vit || e->input || e->tokens != v)
    return std::nullopt;
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

/// The means over the tokens of B x T x D \p v taken after Transpose \p t
/// (0, 2, 1) flips them to B x D x T (the official Swin's
/// `avgpool(x.transpose(1, 2))`), one for each reader of \p t: a
/// GlobalAveragePool to B x D x 1 flattened to B x D, or a ReduceMean over
/// the last axis; the nodes of each after \p t, or none if a reader is
/// something else.
std::vector<std::vector<Node*>>
meansOfFlippedTokens(const Graph& g, Node* t, const Value* v, int64_t opset) {
  if (g.isOutput(t->output) || t->output->users.empty())
    return {};
  const std::vector<int64_t> features = {v->shape[0], v->shape[2]};
  std::vector<std::vector<Node*>> means;
  for (Node* p : t->output->users) {
    if (p->inputs[0] != t->output)
      return {};
    if (p->kind == OpKind::OnnxReduceMean) {
      if (!isMeanOver(p, t->output, 2, opset) || p->output->shape != features)
        return {};
      means.push_back({p});
      continue;
    }
    if (p->kind != OpKind::OnnxGlobalAveragePool || g.isOutput(p->output))
      return {};
    Node* f = soleUser(p->output);
    if (!f ||
        (f->kind != OpKind::OnnxFlatten && f->kind != OpKind::OnnxReshape) ||
        f->output->shape != features ||
        (f->kind == OpKind::OnnxFlatten &&
         OpAttrs(*f, opset).getInt("axis") != 1))
      return {};
    means.push_back({p, f});
  }
  return means;
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
    const int64_t B = x->shape[0];
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
    // x T held B x T x D x 1, until a Transpose back (which needs T
    // features again).
    // Tokens back to B x D x H x W (a Transpose and a Reshape, or a Reshape
    // of flipped tokens) leave too, as a non-local block's do.
    std::vector<SelfAttention> attentions;
    std::vector<HeadsAttention> headsAttentions;
    std::unordered_set<const Value*> flipped;
    std::unordered_set<const Node*> products; // MatMuls of two token values
    std::unordered_map<const Node*, Node*> toImage; // Transpose -> Reshape
    // Transpose -> the means over the tokens it flips.
    std::unordered_map<const Node*, std::vector<std::vector<Node*>>> toMean;
    const Node* stop = nullptr;
    const Value* outside = nullptr;
    bool mixed = false;
    auto isImage = [&](const Value* v, int64_t d) {
      return !g.isOutput(v) &&
             v->shape == std::vector<int64_t>{B, d, rows, cols};
    };
    auto step = [&](Node* u, const Value* v) {
      const bool flip = flipped.count(v) != 0;
      if (isTokenProduct(u)) {
        // Oriented as its first operand (classified already: the walk goes
        // in graph order).
        products.insert(u);
        if (flipped.count(u->inputs[0]) != 0)
          flipped.insert(u->output);
        return RegionStep{RegionStep::Member};
      }
      if (u->kind == OpKind::OnnxTranspose) {
        SelfAttention m;
        if (!flip && matchSelfAttention(g, u, m)) {
          attentions.push_back(m);
          return RegionStep{RegionStep::Block, m.nodes};
        }
        if (!isTranspose(u, v, {0, 2, 1}, opset) || (flip && v->shape[2] != T))
          return RegionStep{RegionStep::Leave};
        if (!flip)
          if (auto means = meansOfFlippedTokens(g, u, v, opset);
              !means.empty()) {
            toMean[u] = std::move(means);
            return RegionStep{RegionStep::Exit};
          }
        Node* image = soleUser(u->output);
        if (!flip && image != nullptr && image->kind == OpKind::OnnxReshape &&
            !g.isOutput(u->output) && isImage(image->output, v->shape[2])) {
          toImage[u] = image;
          return RegionStep{RegionStep::Exit};
        }
        if (!flip)
          flipped.insert(u->output);
        return RegionStep{RegionStep::Member};
      }
      if (u->kind == OpKind::OnnxReshape && !flip) {
        // Tokens cut into heads: a multi-head attention written out.
        HeadsAttention m;
        if (matchHeadsAttention(g, u, m)) {
          headsAttentions.push_back(m);
          return RegionStep{RegionStep::Block, m.nodes};
        }
      }
      if (flip) {
        // Per token of the flipped tokens: anything but an exit.
        if (u->kind == OpKind::OnnxReshape && u->inputs[0] == v &&
            v->shape[2] == T && isImage(u->output, v->shape[1]))
          return RegionStep{RegionStep::Exit};
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
      // The mean over the tokens: a global mean pool once channel-first.
      if (isMeanOver(u, v, 1, opset))
        return RegionStep{RegionStep::Exit};
      return RegionStep{worksPerPixel(u, v, opset) &&
                                u->output->shape.size() == 3
                            ? RegionStep::Member
                            : RegionStep::Leave};
    };
    // Tokens that other entries make from images of the same size join the
    // stage where its nodes read them (a non-local block's queries, keys
    // and values).
    std::vector<TokenEntry> entries = {*e};
    std::optional<Region> region;
    for (;;) {
      attentions.clear();
      headsAttentions.clear();
      flipped.clear();
      products.clear();
      toImage.clear();
      toMean.clear();
      stop = nullptr;
      outside = nullptr;
      std::vector<Value*> starts;
      for (const TokenEntry& t : entries) {
        starts.push_back(t.tokens);
        if (t.flipped)
          flipped.insert(t.tokens);
      }
      region = walkRegion(g, starts, step, !e->vit, &stop, &outside);
      if (region || outside == nullptr || e->vit || e->input)
        break;
      std::optional<TokenEntry> more = entryMaking(g, outside);
      const Value* xm = more ? more->embed[0]->inputs[0] : nullptr;
      if (!more || xm->shape[0] != B || xm->shape[2] != rows ||
          xm->shape[3] != cols)
        break;
      entries.push_back(*more);
    }
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
    // A written-out attention's queries, keys and values are tokens of
    // this stage, as held (its walk took the attention before it reached
    // them all).
    auto ownTokens = [&](const Value* v) {
      const Node* p = v->producer;
      return flipped.count(v) == 0 &&
             (std::any_of(entries.begin(), entries.end(),
                          [&](const TokenEntry& t) { return t.tokens == v; }) ||
              (p && std::find(region->members.begin(), region->members.end(),
                              p) != region->members.end()) ||
              std::any_of(attentions.begin(), attentions.end(),
                          [&](const SelfAttention& a) {
                            return a.nodes.back() == p;
                          }) ||
              std::any_of(headsAttentions.begin(), headsAttentions.end(),
                          [&](const HeadsAttention& a) {
                            return a.nodes.back() == p;
                          }));
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
    for (const HeadsAttention& m : headsAttentions)
      if (region &&
          !std::all_of(m.sources.begin(), m.sources.end(), ownTokens)) {
        stop = m.nodes.front();
        region.reset();
      }
    if (!region) {
      // Told by lowering in place of the entry's own refusal (a 3-D
      // input's readers are told theirs).
      for (const TokenEntry& t : entries)
        if (!t.input)
          for (const Node* n : t.embed)
            for (const Origin& o : n->origins)
              g.tokenStages[o.index] = tokenStageProblem(t.tokens, stop, mixed);
      continue;
    }
    // Rewrite: an entry becomes ViT's class_token, a 3-D input's
    // channels_first, a token_transpose (flipped tokens) or nothing; tokens
    // B x T x D become B x D x rows x cols, flipped tokens B x D x T
    // B x T x D x 1. (An attention reading an entry's tokens itself, as
    // in a post-norm transformer, reads what replaces them: \p entered.)
    std::unordered_map<const Value*, Value*> entered;
    for (const TokenEntry& t : entries) {
      erased.insert(t.embed.begin(), t.embed.end());
      Value* image = t.embed[0]->inputs[0];
      const int64_t features = t.input ? image->shape[3] : image->shape[1];
      if (t.vit) {
        const TensorData& pe = *t.pos->constant;
        std::vector<float> src = pe.toFloats(), peT(src.size());
        for (int64_t k = 0; k < T; ++k)
          for (int64_t d = 0; d < features; ++d)
            peT[size_t(d * T + k)] = src[size_t(k * features + d)];
        Value* clsC = g.addConstant(
            t.cls->name, withDims(*t.cls->constant, {1, features, 1, 1}),
            t.cls->initializerIndex);
        clsC->shape = {1, features, 1, 1};
        Value* posC =
            g.addConstant(t.pos->name, floatTensor(peT, {1, features, T, 1}),
                          t.pos->initializerIndex);
        posC->shape = {1, features, T, 1};
        Node* tokens =
            replaceChain(g, OpKind::ClassToken, {image, clsC, posC}, t.embed);
        tokens->output->shape = {B, features, T, 1};
        entered[t.tokens] = tokens->output;
      } else if (t.input) {
        // B x 1 x T x D in memory is B x T x D: its NHWC view (H = 1, W =
        // T, C = D) made channel-first.
        Node* tokens = replaceChain(g, OpKind::ChannelsFirst, {image}, t.embed);
        tokens->output->shape = {B, features, 1, T};
        entered[t.tokens] = tokens->output;
      } else if (t.flipped) {
        Node* swap = replaceChain(g, OpKind::TokenTranspose, {image}, t.embed);
        swap->output->shape = {B, T, features, 1};
        swap->scalars = {Scalar::integer(features), Scalar::integer(1)};
        entered[t.tokens] = swap->output;
      } else {
        g.replaceAllUses(t.tokens, image);
        entered[t.tokens] = image;
        for (size_t i = t.embed.size(); i-- > 0;)
          g.eraseNode(t.embed[i]);
      }
    }
    auto current = [&](Value*& v) {
      if (auto it = entered.find(v); it != entered.end())
        v = it->second;
    };
    for (HeadsAttention& m : headsAttentions) {
      erased.insert(m.nodes.begin(), m.nodes.end());
      std::for_each(m.sources.begin(), m.sources.end(), current);
      replaceHeadsAttention(g, m, rows, cols);
    }
    for (SelfAttention& m : attentions) {
      erased.insert(m.nodes.begin(), m.nodes.end());
      current(m.x);
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
      if (auto back = toImage.find(exit); back != toImage.end()) {
        // Tokens back to B x D x H x W: as they are held.
        Node* reshape = back->second;
        erased.insert(reshape);
        g.replaceAllUses(reshape->output, exit->inputs[0]);
        g.eraseNode(reshape);
        g.eraseNode(exit);
        continue;
      }
      if (auto means = toMean.find(exit); means != toMean.end()) {
        // Each mean over the tokens as they are held: over axes 2 and 3.
        for (const std::vector<Node*>& mean : means->second) {
          erased.insert(mean.begin(), mean.end());
          const std::vector<int64_t> features = mean.back()->output->shape;
          Node* over =
              replaceChain(g, OpKind::OnnxReduceMean, {exit->inputs[0]}, mean);
          over->origins.insert(over->origins.begin(), exit->origins.begin(),
                               exit->origins.end());
          over->attrs["axes"] = std::vector<int64_t>{2, 3};
          over->attrs["keepdims"] = int64_t{0};
          over->output->shape = features;
        }
        g.eraseNode(exit);
        continue;
      }
      if (exit->kind == OpKind::OnnxReshape) {
        // Flipped tokens back to B x D x H x W: a token_transpose.
        Node* swap =
            replaceChain(g, OpKind::TokenTranspose, {exit->inputs[0]}, {exit});
        swap->scalars = {Scalar::integer(rows), Scalar::integer(cols)};
        continue;
      }
      if (exit->kind == OpKind::OnnxReduceMean) {
        // The mean over the pixels: axes 2 and 3 now (B x D still).
        exit->attrs["axes"] = std::vector<int64_t>{2, 3};
        continue;
      }
      int64_t index = exit->inputs[1]->constant->asInt(0);
      Node* pick =
          replaceChain(g, OpKind::SelectToken, {exit->inputs[0]}, {exit});
      pick->scalars = {Scalar::integer(index < 0 ? index + T : index)};
      pick->output->shape = {B, pick->inputs[0]->shape[1], 1, 1};
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
