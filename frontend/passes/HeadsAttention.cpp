// HeadsAttention.cpp - multi-head attention written out by hand
// (AttentionMatchers.h: HeadsAttention): matched from its cut into heads to
// its Reshape back, replaced by one attention op (window_attention over
// all the tokens where a constant bias is added to the scores).
#include "passes/AttentionMatchers.h"

#include "onnx/OpAttrs.h"
#include "passes/AttentionParts.h"
#include "passes/ConstantTensors.h"
#include "passes/Matchers.h"
#include "passes/OpGeometry.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace hpvm::fe {

namespace {

/// The factor by which Mul or Div node \p n scales \p v (v * c, c * v or v /
/// c, c a scalar constant); NaN if \p n is no such node.
double scaleOf(const Node* n, const Value* v) {
  if (!n || (n->kind != OpKind::OnnxMul && n->kind != OpKind::OnnxDiv))
    return std::nan("");
  const Value* c = otherInput(n, v);
  if (!c || (n->kind == OpKind::OnnxDiv && n->inputs[1] != c))
    return std::nan("");
  const double k = scalarValue(c);
  return n->kind == OpKind::OnnxDiv ? 1 / k : k;
}

/// The product of \p dims; -1 where one is negative (unknown) or it
/// overflows.
int64_t dimsProduct(std::initializer_list<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(p, d, &p))
      return -1;
  return p;
}

/// How one of queries, keys and values was cut into heads.
struct HeadCut {
  Value* source = nullptr; ///< The tokens cut (B x T x D, or x 3D).
  int part = -1;           ///< 0, 1, 2 of a B x T x 3D source; -1: its own.
  Node* split = nullptr;   ///< timm's 5-D Transpose (the parts share it).
  int64_t heads = 0, d = 0;
};

/// How head value \p h (B x heads x T x d; with \p keysT the keys as B x
/// heads x d x T, torch.onnx's merged Transpose (0, 2, 3, 1)) was cut from
/// tokens; appends the nodes doing it (but timm's shared Reshape and
/// Transpose) to \p nodes. False if it was cut any other way.
bool cutOf(const Graph& g, Value* h, bool keysT, HeadCut& c,
           std::vector<Node*>& nodes) {
  const int64_t opset = g.source.opset;
  Node* p = h->producer;
  if (!p || g.isOutput(h) || h->shape.size() != 4)
    return false;
  if (p->kind == OpKind::OnnxTranspose) {
    // A B x T x D Linear output Reshaped to B x T x heads x d, Transposed.
    Value* r = p->inputs[0];
    Node* reshape = r->producer;
    if (!isTranspose(p, r,
                     keysT ? std::vector<int64_t>{0, 2, 3, 1}
                           : std::vector<int64_t>{0, 2, 1, 3},
                     opset) ||
        !reshape || reshape->kind != OpKind::OnnxReshape || soleUser(r) != p ||
        g.isOutput(r) || r->shape.size() != 4)
      return false;
    const std::vector<int64_t>& rs = r->shape;
    c = HeadCut{reshape->inputs[0], -1, nullptr, rs[2], rs[3]};
    if (c.source->shape !=
        std::vector<int64_t>{rs[0], rs[1], dimsProduct({rs[2], rs[3]})})
      return false;
    nodes.push_back(p);
    nodes.push_back(reshape);
    return true;
  }
  if (keysT)
    return false;
  // Part i of timm's 3 x B x heads x T x d: Gather, or Slice and Squeeze.
  Value* all = nullptr;
  int64_t part = -1;
  if (p->kind == OpKind::OnnxGather) {
    const Value* idx = p->inputs[1];
    if (OpAttrs(*p, opset).getInt("axis") != 0 || !idx->isConstant() ||
        !idx->constant->dims.empty())
      return false;
    all = p->inputs[0];
    part = idx->constant->asInt(0);
    nodes.push_back(p);
  } else if (p->kind == OpKind::OnnxSqueeze) {
    Value* s = p->inputs[0];
    Node* slice = s->producer;
    std::vector<int64_t> one = h->shape;
    one.insert(one.begin(), 1);
    if (!slice || slice->kind != OpKind::OnnxSlice || soleUser(s) != p ||
        g.isOutput(s) || s->shape != one)
      return false;
    all = slice->inputs[0];
    std::vector<int64_t> begin, step, extent;
    if (!sliceGeometry(*slice, opset, all->shape, begin, step, extent) ||
        step != std::vector<int64_t>(5, 1) || extent != one)
      return false;
    part = begin[0];
    nodes.push_back(p);
    nodes.push_back(slice);
  } else {
    return false;
  }
  Node* t = all->producer;
  if (!t || g.isOutput(all) || all->shape.size() != 5 || all->shape[0] != 3 ||
      part < -3 || part > 2 ||
      std::vector<int64_t>(all->shape.begin() + 1, all->shape.end()) !=
          h->shape)
    return false;
  Value* r = t->inputs[0];
  Node* reshape = r->producer;
  if (!isTranspose(t, r, {2, 0, 3, 1, 4}, opset) || !reshape ||
      reshape->kind != OpKind::OnnxReshape || soleUser(r) != t ||
      g.isOutput(r) || r->shape.size() != 5)
    return false;
  const std::vector<int64_t>& rs = r->shape; // B x T x 3 x heads x d
  c = HeadCut{reshape->inputs[0], int(part < 0 ? part + 3 : part), t, rs[3],
              rs[4]};
  return c.source->shape ==
         std::vector<int64_t>{rs[0], rs[1], dimsProduct({3, rs[3], rs[4]})};
}

} // namespace

bool matchHeadsAttention(const Graph& g, Node* start, HeadsAttention& m) {
  const int64_t opset = g.source.opset;
  if (start->kind != OpKind::OnnxReshape)
    return false;
  // Forward from the cut to the first product of two activations: the
  // scores, or (from the values) the mix after the softmax.
  Node* mm = start;
  for (int steps = 0; steps < 6 && mm && mm->kind != OpKind::OnnxMatMul;
       ++steps)
    mm = mm->output->users.empty() ? nullptr : mm->output->users[0];
  if (!mm || mm->kind != OpKind::OnnxMatMul || mm->inputs.size() != 2)
    return false;
  Node* scores = mm;
  if (const Node* sm = mm->inputs[0]->producer;
      sm && sm->kind == OpKind::OnnxSoftmax) {
    // (Back over the scale and the bias, where there are.)
    scores = sm->inputs[0]->producer;
    for (int steps = 0;
         steps < 2 && scores && scores->kind != OpKind::OnnxMatMul &&
         scores->inputs.size() == 2;
         ++steps)
      scores =
          scores->inputs[scores->inputs[0]->isConstant() ? 1 : 0]->producer;
  }
  m = HeadsAttention{};
  std::vector<Node*>& nodes = m.nodes;
  if (!scores || !takeInto(g, nodes, scores, OpKind::OnnxMatMul) ||
      scores->output->shape.size() != 4)
    return false;
  // The scores scaled, softmax, mixed; the heads joined again.
  double scale = 1;
  Value* sv = scores->output;
  if (Node* s = soleUser(sv); !std::isnan(scaleOf(s, sv))) {
    scale = scaleOf(s, sv);
    if (!takeInto(g, nodes, s, s->kind))
      return false;
    sv = s->output;
  }
  if (Node* a = soleUser(sv); a && a->kind == OpKind::OnnxAdd) {
    Value* c = otherInput(a, sv);
    if (!c || !c->isConstant() || !takeInto(g, nodes, a, OpKind::OnnxAdd))
      return false;
    m.bias = c;
    sv = a->output;
  }
  const Node* sm = soleUser(sv);
  const Node* peek = sm ? soleUser(sm->output) : nullptr;
  if (!peek || peek->inputs.size() != 2)
    return false;
  Node* mix = matchSoftmaxMix(g, sv, 3, peek->inputs[1], nodes);
  if (!mix)
    return false;
  Node* join = soleUser(mix->output);
  if (mix->output->shape.size() != 4 ||
      !isTranspose(join, mix->output, {0, 2, 1, 3}, opset) ||
      !takeInto(g, nodes, join, OpKind::OnnxTranspose))
    return false;
  Node* exit = soleUser(join->output);
  const std::vector<int64_t>& ms = mix->output->shape; // B x heads x T x d
  if (!exit || exit->kind != OpKind::OnnxReshape ||
      exit->output->shape !=
          std::vector<int64_t>{ms[0], ms[2], dimsProduct({ms[1], ms[3]})})
    return false;
  // Back to where queries, keys and values were cut into heads.
  HeadCut cut[3];
  Value* q = scores->inputs[0];
  if (Node* s = q->producer; s && soleUser(q) == scores) {
    Value* in = s->inputs.empty() ? nullptr : s->inputs[0];
    if (in && in->isConstant() && s->inputs.size() == 2)
      in = s->inputs[1];
    if (const double f = in ? scaleOf(s, in) : std::nan(""); !std::isnan(f)) {
      scale *= f;
      if (!takeInto(g, nodes, s, s->kind))
        return false;
      q = in;
    }
  }
  Value* k = scores->inputs[1];
  bool keysT = true;
  if (Node* t = k->producer;
      t && soleUser(k) == scores &&
      isTranspose(t, t->inputs[0], {0, 1, 3, 2}, opset)) {
    if (!takeInto(g, nodes, t, OpKind::OnnxTranspose))
      return false;
    k = t->inputs[0];
    keysT = false;
  }
  Value* v = mix->inputs[1];
  if (soleUser(q) == nullptr || soleUser(k) == nullptr ||
      !cutOf(g, q, false, cut[0], nodes) ||
      !cutOf(g, k, keysT, cut[1], nodes) || !cutOf(g, v, false, cut[2], nodes))
    return false;
  const int64_t heads = cut[0].heads, d = cut[0].d;
  for (int i = 0; i < 3; ++i)
    if (cut[i].heads != heads || cut[i].d != d ||
        (cut[i].split != nullptr) != (cut[0].split != nullptr) ||
        (cut[0].split && (cut[i].part != i || cut[i].split != cut[0].split)))
      return false;
  if (ms[1] != heads || ms[3] != d || !std::isfinite(scale))
    return false;
  if (m.bias) {
    // T x T, heads x T x T or 1 x heads x T x T (a head count of 1:
    // the same for every head).
    const std::vector<int64_t>& bd = m.bias->constant->dims;
    const size_t r = bd.size();
    if (r < 2 || r > 4 || bd[r - 1] != ms[2] || bd[r - 2] != ms[2] ||
        (r >= 3 && bd[r - 3] != 1 && bd[r - 3] != heads) ||
        (r == 4 && bd[0] != 1))
      return false;
  }
  // (Within rounding of the usual d^-0.5: the attention op's own.)
  const double over = scale * std::sqrt(double(d));
  m.queryScale = std::abs(over - 1) > 1e-6 ? over : 1;
  if (Node* t = cut[0].split) {
    if (t->output->users.size() != 3)
      return false;
    nodes.push_back(t);
    nodes.push_back(t->inputs[0]->producer);
    m.sources = {cut[0].source};
  } else {
    m.sources = {cut[0].source, cut[1].source, cut[2].source};
  }
  nodes.push_back(exit);
  if (std::find(nodes.begin(), nodes.end(), start) == nodes.end())
    return false;
  m.batch = ms[0];
  m.dim = heads * d;
  m.heads = heads;
  return true;
}

void replaceHeadsAttention(Graph& g, const HeadsAttention& m, int64_t rows,
                           int64_t cols) {
  Node* exit = m.nodes.back();
  const int64_t B = m.batch, D = m.dim;
  // Each ONNX node once (a Split is the Slices of all three parts), in
  // the model's order.
  std::vector<Origin> origins = originsOf(m.nodes, 0, m.nodes.size());
  std::sort(origins.begin(), origins.end(),
            [](const Origin& a, const Origin& b) { return a.index < b.index; });
  origins.erase(std::unique(origins.begin(), origins.end(),
                            [](const Origin& a, const Origin& b) {
                              return a.index == b.index;
                            }),
                origins.end());
  std::vector<Value*> sources = m.sources;
  if (m.queryScale != 1) {
    // The queries (the first D channels) times the scale over d^-0.5.
    const int64_t C = sources.size() == 3 ? D : 3 * D;
    std::vector<float> f(size_t(C), 1.0f);
    std::fill(f.begin(), f.begin() + D, float(m.queryScale));
    Value* factor = g.addConstant("", floatTensor(f, {1, C, 1, 1}));
    factor->shape = {1, C, 1, 1};
    Value* q = g.addValue(exit->output->name + "/queries", DataType::Float,
                          {B, C, rows, cols});
    g.addNode(OpKind::OnnxMul, {sources[0], factor}, q, origins,
              g.position(exit));
    sources[0] = q;
  }
  Value* qkv = sources[0];
  if (sources.size() == 3) {
    // Queries, keys and values one after another along the channels.
    qkv = g.addValue(exit->output->name + "/qkv", DataType::Float,
                     {B, 3 * D, rows, cols});
    g.addNode(OpKind::OnnxConcat, sources, qkv, origins, g.position(exit))
        ->attrs["axis"] = int64_t{1};
  }
  Value* y =
      g.addValue(exit->output->name, DataType::Float, {B, D, rows, cols});
  if (m.bias) {
    // One window of all the tokens, unshifted, the bias per head and
    // key-major, no mask (zeros).
    const int64_t T = rows * cols, heads = m.heads;
    // (A T x T bias is every head's.)
    const std::vector<float> given = m.bias->constant->toFloats();
    std::vector<float> b;
    b.reserve(size_t(heads * T * T));
    while (b.size() < size_t(heads * T * T))
      b.insert(b.end(), given.begin(), given.end());
    Value* bias = g.addConstant(
        m.bias->name,
        keyMajorScores(*floatTensor(b, {1, heads, T, T}), T, {1, heads, T, T}),
        m.bias->initializerIndex);
    bias->shape = {1, heads, T, T};
    Value* none = g.addConstant(
        exit->output->name + ".mask",
        floatTensor(std::vector<float>(size_t(T * T), 0.f), {1, 1, T, T}));
    none->shape = {1, 1, T, T};
    g.addNode(OpKind::WindowAttention, {qkv, bias, none}, y, origins,
              g.position(exit))
        ->scalars = {Scalar::integer(rows), Scalar::integer(cols),
                     Scalar::integer(heads), Scalar::integer(0),
                     Scalar::integer(0)};
  } else {
    g.addNode(OpKind::Attention, {qkv}, y, origins, g.position(exit))
        ->scalars = {Scalar::integer(m.heads)};
  }
  g.replaceAllUses(exit->output, y);
  eraseMatched(g, m.nodes);
}

} // namespace hpvm::fe
