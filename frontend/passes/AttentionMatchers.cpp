// AttentionMatchers.cpp - see AttentionMatchers.h.
#include "passes/AttentionMatchers.h"

#include "passes/AttentionParts.h"

#include "onnx/OpAttrs.h"
#include "passes/ConstantTensors.h"
#include "passes/Matchers.h"
#include "passes/OpGeometry.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace hpvm::fe {

namespace {

/// A 1 x 1 Conv filter K x C x 1 x 1 from matrix \p w (C x K, or K x C
/// when \p transposed).
Value* filterOf(Graph& g, const Value* w, bool transposed) {
  const TensorData& t = *w->constant;
  std::vector<float> src = t.toFloats(), f(src.size());
  const int64_t rows = t.dims[0], cols = t.dims[1];
  const int64_t K = transposed ? rows : cols, C = transposed ? cols : rows;
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < C; ++c)
      f[size_t(k * C + c)] =
          transposed ? src[size_t(k * C + c)] : src[size_t(c * K + k)];
  Value* filter =
      g.addConstant(w->name, floatTensor(f, {K, C, 1, 1}), w->initializerIndex);
  filter->shape = {K, C, 1, 1};
  return filter;
}

/// A 1 x 1 Conv of \p x by \p filter plus \p bias into \p y, at \p pos.
void addPointwiseConv(Graph& g, Value* x, Value* filter, Value* bias, Value* y,
                      std::vector<Origin> origins, int pos) {
  Node* conv = g.addNode(OpKind::OnnxConv, {x, filter, bias}, y,
                         std::move(origins), pos);
  conv->attrs["kernel_shape"] = std::vector<int64_t>{1, 1};
}

/// torch.roll of channel-last \p v along \p axis (1 or 2) as torch.onnx
/// writes it: two Slices of v, [s, n) and [0, s), concatenated in that
/// order: y[i] = v[(i + s) mod n]. Appends the three nodes to \p nodes and
/// returns the Concat, its shift in \p shift; nullptr if it is not that.
Node* matchRoll(const Graph& g, Value* v, int64_t axis, int64_t& shift,
                std::vector<Node*>& nodes) {
  const int64_t opset = g.source.opset;
  if (v->users.size() != 2 || v->shape.size() != 4)
    return nullptr;
  Node* cat = soleUser(v->users[0]->output);
  if (!cat || cat->kind != OpKind::OnnxConcat || cat->inputs.size() != 2 ||
      g.isOutput(cat->output) ||
      channelFirstAxis(OpAttrs(*cat, opset).getInt("axis")) !=
          channelFirstAxis(axis))
    return nullptr;
  const int64_t n = v->shape[size_t(axis)];
  int64_t begins[2] = {};
  for (int i = 0; i < 2; ++i) {
    Node* slice = cat->inputs[size_t(i)]->producer;
    std::vector<int64_t> begin, step, extent;
    if (!slice || slice->kind != OpKind::OnnxSlice || slice->inputs[0] != v ||
        soleUser(slice->output) != cat ||
        !sliceGeometry(*slice, opset, v->shape, begin, step, extent))
      return nullptr;
    for (size_t d = 0; d < 4; ++d)
      if (step[d] != 1 ||
          (int64_t(d) != axis && (begin[d] != 0 || extent[d] != v->shape[d])))
        return nullptr;
    begins[i] = begin[size_t(axis)];
    if (begins[i] + extent[size_t(axis)] != (i == 0 ? n : begins[0]))
      return nullptr;
  }
  if (begins[1] != 0 || begins[0] <= 0 || begins[0] >= n)
    return nullptr;
  shift = begins[0];
  nodes.push_back(cat->inputs[0]->producer);
  nodes.push_back(cat->inputs[1]->producer);
  nodes.push_back(cat);
  return cat;
}

} // namespace

bool matchWindowAttention(const Graph& g, Value* x, WindowAttentionMatch& m) {
  const int64_t opset = g.source.opset;
  if (x->shape.size() != 4 || x->isConstant())
    return false;
  const int64_t N = x->shape[0], H = x->shape[1], W = x->shape[2],
                C = x->shape[3];
  m = WindowAttentionMatch{};
  m.N = N;
  m.H = H;
  m.W = W;
  m.C = C;
  auto take = [&](Node* n, OpKind k) { return takeInto(g, m.nodes, n, k); };
  auto shaped = [](const Node* n, std::vector<int64_t> s) {
    return n->output->shape == s;
  };
  // Roll by -shift.
  Value* cur = x;
  if (Node* cat = matchRoll(g, cur, 1, m.shiftH, m.nodes))
    cur = cat->output;
  if (Node* cat = matchRoll(g, cur, 2, m.shiftW, m.nodes))
    cur = cat->output;
  // Into windows.
  Node* r0 = soleUser(cur);
  if (!take(r0, OpKind::OnnxReshape) || r0->output->shape.size() != 6)
    return false;
  m.windowH = r0->output->shape[2];
  m.windowW = r0->output->shape[4];
  const int64_t wh = m.windowH, ww = m.windowW, T = wh * ww;
  if (wh < 1 || ww < 1 || H % wh != 0 || W % ww != 0 ||
      !shaped(r0, {N, H / wh, wh, W / ww, ww, C}))
    return false;
  const int64_t nW = (H / wh) * (W / ww), B = N * nW;
  Node* t0 = soleUser(r0->output);
  if (!isTranspose(t0, r0->output, {0, 1, 3, 2, 4, 5}, opset) ||
      !take(t0, OpKind::OnnxTranspose))
    return false;
  Node* r1 = soleUser(t0->output);
  if (!take(r1, OpKind::OnnxReshape) || !shaped(r1, {B, T, C}))
    return false;
  // Queries, keys and values.
  Node* qkvMul = soleUser(r1->output);
  if (!take(qkvMul, OpKind::OnnxMatMul) || qkvMul->inputs[0] != r1->output ||
      !isConstantOf(qkvMul->inputs[1], C * 3 * C, 3 * C) ||
      qkvMul->inputs[1]->constant->dims.size() != 2)
    return false;
  m.qkvWeight = qkvMul->inputs[1];
  Node* qkvAdd = soleUser(qkvMul->output);
  if (!take(qkvAdd, OpKind::OnnxAdd))
    return false;
  m.qkvBias = otherInput(qkvAdd, qkvMul->output);
  if (!isConstantOf(m.qkvBias, 3 * C, 3 * C))
    return false;
  m.qkvEnd = m.nodes.size();
  Node* r2 = soleUser(qkvAdd->output);
  if (!take(r2, OpKind::OnnxReshape) || r2->output->shape.size() != 5)
    return false;
  m.heads = r2->output->shape[3];
  const int64_t heads = m.heads;
  if (heads < 1 || C % heads != 0 || !shaped(r2, {B, T, 3, heads, C / heads}))
    return false;
  Node* t1 = soleUser(r2->output);
  if (!isTranspose(t1, r2->output, {2, 0, 3, 1, 4}, opset) ||
      !take(t1, OpKind::OnnxTranspose) || t1->output->users.size() != 3)
    return false;
  Node* part[3] = {};
  for (Node* gather : t1->output->users) {
    if (!take(gather, OpKind::OnnxGather) || gather->inputs[0] != t1->output ||
        OpAttrs(*gather, opset).getInt("axis") != 0 ||
        !gather->inputs[1]->isConstant() ||
        gather->inputs[1]->constant->numElements() != 1 ||
        !gather->inputs[1]->constant->dims.empty())
      return false;
    const int64_t i = gather->inputs[1]->constant->asInt(0);
    if (i < 0 || i > 2 || part[i])
      return false;
    part[i] = gather;
  }
  // Scores: queries times (C/heads)^-0.5, times the keys transposed, plus
  // the bias (and the mask), softmax.
  Node* scale = soleUser(part[0]->output);
  if (!take(scale, OpKind::OnnxMul))
    return false;
  const double root = std::sqrt(double(C / heads));
  const double c = scalarValue(otherInput(scale, part[0]->output));
  if (!(std::abs(c * root - 1) <= 1e-6))
    return false;
  Node* kt = soleUser(part[1]->output);
  if (!isTranspose(kt, part[1]->output, {0, 1, 3, 2}, opset) ||
      !take(kt, OpKind::OnnxTranspose))
    return false;
  Node* scores = soleUser(scale->output);
  if (!take(scores, OpKind::OnnxMatMul) || scores->inputs[0] != scale->output ||
      scores->inputs[1] != kt->output || soleUser(kt->output) != scores)
    return false;
  Node* addBias = soleUser(scores->output);
  if (!take(addBias, OpKind::OnnxAdd))
    return false;
  m.bias = otherInput(addBias, scores->output);
  if (!isConstantOf(m.bias, heads * T * T, T) ||
      m.bias->constant->dims.size() < 3 ||
      m.bias->constant->dims[m.bias->constant->dims.size() - 3] != heads)
    return false;
  cur = addBias->output;
  Node* next = soleUser(cur);
  if (next && next->kind == OpKind::OnnxReshape &&
      shaped(next, {N, nW, heads, T, T})) {
    m.nodes.push_back(next);
    Node* addMask = soleUser(next->output);
    if (!take(addMask, OpKind::OnnxAdd))
      return false;
    m.mask = otherInput(addMask, next->output);
    // nW x 1 x T x T, with leading 1s.
    if (!isConstantOf(m.mask, nW * T * T, T))
      return false;
    const std::vector<int64_t>& md = m.mask->constant->dims;
    if (md.size() < 4 || md[md.size() - 3] != 1 || md[md.size() - 4] != nW)
      return false;
    Node* back = soleUser(addMask->output);
    if (!take(back, OpKind::OnnxReshape) || !shaped(back, {B, heads, T, T}))
      return false;
    cur = back->output;
  }
  Node* mix = matchSoftmaxMix(g, cur, 3, part[2]->output, m.nodes);
  if (!mix)
    return false;
  // Heads joined, the output projection, the windows put back.
  Node* t2 = soleUser(mix->output);
  if (!isTranspose(t2, mix->output, {0, 2, 1, 3}, opset) ||
      !take(t2, OpKind::OnnxTranspose))
    return false;
  Node* r3 = soleUser(t2->output);
  if (!take(r3, OpKind::OnnxReshape) || !shaped(r3, {B, T, C}))
    return false;
  Node* projMul = soleUser(r3->output);
  m.projBegin = m.nodes.size();
  if (!take(projMul, OpKind::OnnxMatMul) || projMul->inputs[0] != r3->output ||
      !isConstantOf(projMul->inputs[1], C * C, C) ||
      projMul->inputs[1]->constant->dims.size() != 2)
    return false;
  m.projWeight = projMul->inputs[1];
  Node* projAdd = soleUser(projMul->output);
  if (!take(projAdd, OpKind::OnnxAdd))
    return false;
  m.projBias = otherInput(projAdd, projMul->output);
  if (!isConstantOf(m.projBias, C, C))
    return false;
  Node* r4 = soleUser(projAdd->output);
  if (!take(r4, OpKind::OnnxReshape) ||
      !shaped(r4, {N, H / wh, W / ww, wh, ww, C}))
    return false;
  Node* t3 = soleUser(r4->output);
  if (!isTranspose(t3, r4->output, {0, 1, 3, 2, 4, 5}, opset) ||
      !take(t3, OpKind::OnnxTranspose))
    return false;
  Node* r5 = soleUser(t3->output);
  if (!take(r5, OpKind::OnnxReshape) || !shaped(r5, {N, H, W, C}))
    return false;
  // Roll back by +shift.
  cur = r5->output;
  int64_t back = 0;
  if (m.shiftH) {
    Node* cat = matchRoll(g, cur, 1, back, m.nodes);
    if (!cat || back != H - m.shiftH)
      return false;
    cur = cat->output;
  }
  if (m.shiftW) {
    Node* cat = matchRoll(g, cur, 2, back, m.nodes);
    if (!cat || back != W - m.shiftW)
      return false;
  }
  // A shift without a mask would mix the wrapped-around pixels.
  return (m.shiftH == 0 && m.shiftW == 0) || m.mask != nullptr;
}

void replaceWindowAttention(Graph& g, const WindowAttentionMatch& m) {
  Node* last = m.nodes.back();
  const int64_t N = m.N, C = m.C, H = m.H, W = m.W;
  // The input as it is now (the region's rewrite may have replaced it):
  // what the first matched node reads.
  Value* x = m.nodes.front()->inputs[0];
  const int64_t T = m.windowH * m.windowW;
  const int pos = g.position(last);
  Value* qkv =
      g.addValue(m.qkvWeight->name + ".qkv", DataType::Float, {N, 3 * C, H, W});
  addPointwiseConv(g, x, filterOf(g, m.qkvWeight, false), m.qkvBias, qkv,
                   originsOf(m.nodes, 0, m.qkvEnd), pos);
  // Scores of a window are T x T, query-major in ONNX; window_attention
  // reads bias and mask key-major.
  Value* bias = g.addConstant(
      m.bias->name, keyMajorScores(*m.bias->constant, T, {1, m.heads, T, T}),
      m.bias->initializerIndex);
  bias->shape = {1, m.heads, T, T};
  const int64_t masks = m.mask ? m.mask->constant->numElements() / (T * T) : 1;
  Value* mask = g.addConstant(
      m.mask ? m.mask->name : last->output->name + ".mask",
      m.mask
          ? keyMajorScores(*m.mask->constant, T, {1, masks, T, T})
          : floatTensor(std::vector<float>(size_t(T * T), 0.f), {1, 1, T, T}),
      m.mask ? m.mask->initializerIndex : -1);
  mask->shape = {1, masks, T, T};
  Value* mixed = g.addValue(last->output->name + ".attention", DataType::Float,
                            {N, C, H, W});
  Node* attn =
      g.addNode(OpKind::WindowAttention, {qkv, bias, mask}, mixed,
                originsOf(m.nodes, m.qkvEnd, m.projBegin), g.position(last));
  attn->scalars = {Scalar::integer(m.windowH), Scalar::integer(m.windowW),
                   Scalar::integer(m.heads), Scalar::integer(m.shiftH),
                   Scalar::integer(m.shiftW)};
  Value* y = g.addValue(last->output->name, DataType::Float, {N, C, H, W});
  addPointwiseConv(g, mixed, filterOf(g, m.projWeight, false), m.projBias, y,
                   originsOf(m.nodes, m.projBegin, m.nodes.size()),
                   g.position(last));
  g.replaceAllUses(last->output, y);
  eraseMatched(g, m.nodes);
}

bool matchSelfAttention(const Graph& g, Node* t0, SelfAttention& m) {
  const int64_t opset = g.source.opset;
  Value* x = t0->inputs[0];
  if (x->shape.size() != 3 || !isTranspose(t0, x, {1, 0, 2}, opset))
    return false;
  const int64_t B = x->shape[0], T = x->shape[1], D = x->shape[2];
  m = SelfAttention{};
  m.x = x;
  m.batch = B;
  m.tokens = T;
  m.tokenRows = T;
  m.dim = D;
  auto take = [&](Node* n, OpKind k) { return takeInto(g, m.nodes, n, k); };
  m.nodes.push_back(t0);
  // The input projection.
  Node* proj = soleUser(t0->output);
  if (!take(proj, OpKind::OnnxMatMul) || proj->inputs[0] != t0->output ||
      !isConstantOf(proj->inputs[1], D * 3 * D, 3 * D))
    return false;
  m.inWeight = proj->inputs[1];
  Node* bias = soleUser(proj->output);
  if (!take(bias, OpKind::OnnxAdd))
    return false;
  m.inBias = otherInput(bias, proj->output);
  const Value* qkv = bias->output;
  if (!isConstantOf(m.inBias, 3 * D, 3 * D) || qkv->users.size() != 3 ||
      qkv->shape != std::vector<int64_t>{T, B, 3 * D})
    return false;
  // Queries, keys and values: Slice, Reshape, Transpose each.
  Node* heads[3] = {};
  for (Node* slice : qkv->users) {
    std::vector<int64_t> begin, step, extent;
    if (!take(slice, OpKind::OnnxSlice) || slice->inputs[0] != qkv ||
        !sliceGeometry(*slice, opset, qkv->shape, begin, step, extent) ||
        begin[0] != 0 || begin[1] != 0 || begin[2] % D != 0 ||
        step != std::vector<int64_t>{1, 1, 1} ||
        extent != std::vector<int64_t>{T, B, D} || heads[begin[2] / D])
      return false;
    const size_t part = size_t(begin[2] / D);
    Node* reshape = soleUser(slice->output);
    if (!take(reshape, OpKind::OnnxReshape))
      return false;
    const std::vector<int64_t>& r = reshape->output->shape;
    if (r.size() != 3 || r[0] != T || r[1] % B != 0 || r[1] / B * r[2] != D ||
        (m.heads != 0 && r[1] / B != m.heads))
      return false;
    m.heads = r[1] / B;
    Node* t = soleUser(reshape->output);
    const std::vector<int64_t> perm = part == 1 ? std::vector<int64_t>{1, 2, 0}
                                                : std::vector<int64_t>{1, 0, 2};
    if (!isTranspose(t, reshape->output, perm, opset) ||
        !take(t, OpKind::OnnxTranspose))
      return false;
    heads[part] = t;
  }
  // Scores: the queries scaled by 1/sqrt(D/h) times the keys, softmax.
  const double root = std::sqrt(double(D / m.heads));
  Node* scale = soleUser(heads[0]->output);
  if (!scale ||
      (scale->kind != OpKind::OnnxDiv && scale->kind != OpKind::OnnxMul) ||
      scale->inputs.size() != 2 || scale->inputs[0] != heads[0]->output)
    return false;
  const double c = scalarValue(scale->inputs[1]);
  if (std::abs((scale->kind == OpKind::OnnxDiv ? c : 1 / c) - root) >
          1e-6 * root ||
      !take(scale, scale->kind))
    return false;
  Node* scores = soleUser(scale->output);
  if (!take(scores, OpKind::OnnxMatMul) || scores->inputs[0] != scale->output ||
      scores->inputs[1] != heads[1]->output ||
      soleUser(heads[1]->output) != scores)
    return false;
  Node* mix = matchSoftmaxMix(g, scores->output, 2, heads[2]->output, m.nodes);
  if (!mix)
    return false;
  // Heads joined again, the output projection, back to B x T x D.
  Node* t1 = soleUser(mix->output);
  if (!isTranspose(t1, mix->output, {1, 0, 2}, opset) ||
      !take(t1, OpKind::OnnxTranspose))
    return false;
  Node* r1 = soleUser(t1->output);
  if (!take(r1, OpKind::OnnxReshape) ||
      r1->output->shape != std::vector<int64_t>{T * B, D})
    return false;
  Node* out = soleUser(r1->output);
  if (!take(out, OpKind::OnnxGemm) || out->inputs.size() != 3 ||
      out->inputs[0] != r1->output)
    return false;
  OpAttrs a(*out, opset);
  m.outTransposed = a.getInt("transB") != 0;
  m.outWeight = out->inputs[1];
  m.outBias = out->inputs[2];
  if (a.getFloat("alpha") != 1.0 || a.getFloat("beta") != 1.0 ||
      a.getInt("transA") != 0 || !isConstantOf(m.outWeight, D * D, D) ||
      !isConstantOf(m.outBias, D, D))
    return false;
  Node* r2 = soleUser(out->output);
  if (!take(r2, OpKind::OnnxReshape) ||
      r2->output->shape != std::vector<int64_t>{T, B, D})
    return false;
  Node* t2 = soleUser(r2->output);
  return isTranspose(t2, r2->output, {1, 0, 2}, opset) &&
         take(t2, OpKind::OnnxTranspose);
}

void replaceSelfAttention(Graph& g, const SelfAttention& m) {
  Node* last = m.nodes.back();
  const int64_t B = m.batch, D = m.dim, R = m.tokenRows, C = m.tokenCols;
  const size_t n = m.nodes.size();
  Value* qkv =
      g.addValue(m.nodes[2]->output->name, DataType::Float, {B, 3 * D, R, C});
  addPointwiseConv(g, m.x, filterOf(g, m.inWeight, false), m.inBias, qkv,
                   originsOf(m.nodes, 0, 3), g.position(last));
  Value* mixed =
      g.addValue(m.nodes[n - 6]->output->name, DataType::Float, {B, D, R, C});
  Node* attn = g.addNode(OpKind::Attention, {qkv}, mixed,
                         originsOf(m.nodes, 3, n - 4), g.position(last));
  attn->scalars = {Scalar::integer(m.heads)};
  Value* y = g.addValue(last->output->name, DataType::Float, {B, D, R, C});
  addPointwiseConv(g, mixed, filterOf(g, m.outWeight, m.outTransposed),
                   m.outBias, y, originsOf(m.nodes, n - 4, n),
                   g.position(last));
  g.replaceAllUses(last->output, y);
  eraseMatched(g, m.nodes);
}

} // namespace hpvm::fe
