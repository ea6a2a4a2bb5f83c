// ShapeInference.cpp - see ShapeInference.h.
#include "passes/ShapeInference.h"

#include "onnx/OpAttrs.h"
#include "passes/ConstantTensors.h"
#include "passes/OpGeometry.h"

#include <vector>

namespace hpvm::fe {

std::vector<int64_t> inferredShape(Node* n, int64_t opset) {
  if (n->inputs.empty())
    return {};
  const std::vector<int64_t>& x = n->inputs[0]->shape;
  for (const Value* v : n->inputs)
    if (!v->isConstant() && v->shape.empty() && !v->name.empty())
      return {};
  OpAttrs a(*n, opset);
  const OpKind k = n->kind;
  if (k == OpKind::OnnxRelu || k == OpKind::OnnxSigmoid ||
      k == OpKind::OnnxTanh || k == OpKind::OnnxClip ||
      k == OpKind::OnnxSoftmax || k == OpKind::OnnxLogSoftmax ||
      k == OpKind::OnnxBatchNormalization || k == OpKind::OnnxHardSigmoid ||
      k == OpKind::OnnxHardSwish || k == OpKind::OnnxLeakyRelu ||
      k == OpKind::OnnxSqrt || k == OpKind::OnnxErf ||
      k == OpKind::OnnxDropout || k == OpKind::OnnxIdentity ||
      k == OpKind::OnnxQuantizeLinear || k == OpKind::OnnxDequantizeLinear ||
      k == OpKind::OnnxSum)
    return x;
  if (k == OpKind::OnnxDynamicQuantizeLinear)
    return a.getInt(kOutputIndex) > 0 ? std::vector<int64_t>{} : x;
  if (k == OpKind::OnnxTranspose) {
    std::vector<int64_t> perm = a.getInts("perm"), out;
    if (perm.empty())
      for (size_t i = x.size(); i-- > 0;)
        perm.push_back(int64_t(i));
    if (perm.size() != x.size())
      return {};
    for (int64_t p : perm) {
      if (p < 0 || p >= int64_t(x.size()))
        return {};
      out.push_back(x[size_t(p)]);
    }
    return out;
  }
  if (k == OpKind::OnnxMatMul && n->inputs.size() == 2) {
    // NumPy's matmul: the last two axes multiply, the others broadcast.
    std::vector<int64_t> l = x, r = n->inputs[1]->isConstant()
                                        ? n->inputs[1]->constant->dims
                                        : n->inputs[1]->shape;
    if (l.size() < 2 || r.size() < 2 || l.back() != r[r.size() - 2])
      return {};
    const int64_t rows = l[l.size() - 2], cols = r.back();
    l.resize(l.size() - 2);
    r.resize(r.size() - 2);
    std::vector<int64_t> out;
    if (!broadcastDims(l, r, out))
      return {};
    out.push_back(rows);
    out.push_back(cols);
    return out;
  }
  if (k == OpKind::OnnxGemm && n->inputs.size() >= 2 && x.size() == 2) {
    const std::vector<int64_t>& w = n->inputs[1]->isConstant()
                                        ? n->inputs[1]->constant->dims
                                        : n->inputs[1]->shape;
    if (w.size() != 2)
      return {};
    return {x[a.getInt("transA") != 0 ? 1 : 0],
            w[a.getInt("transB") != 0 ? 0 : 1]};
  }
  if (k == OpKind::OnnxReduceMean) {
    std::vector<int64_t> axes;
    if (!axesOf(n, a, axes))
      return {};
    const int64_t rank = int64_t(x.size());
    std::vector<bool> reduced(x.size(), axes.empty());
    for (int64_t axis : axes) {
      axis = axis < 0 ? axis + rank : axis;
      if (axis < 0 || axis >= rank)
        return {};
      reduced[size_t(axis)] = true;
    }
    const bool keep = a.getInt("keepdims") != 0;
    std::vector<int64_t> out;
    for (size_t i = 0; i < x.size(); ++i)
      if (!reduced[i] || keep)
        out.push_back(reduced[i] ? 1 : x[i]);
    return out;
  }
  std::vector<int64_t> pads;
  if (k == OpKind::OnnxPad && constantPads(*n, opset, pads)) {
    // The begin of every axis, then the end of every one.
    if (pads.size() != 2 * x.size())
      return {};
    std::vector<int64_t> out = x;
    for (size_t i = 0; i < x.size(); ++i) {
      out[i] += pads[i] + pads[i + x.size()];
      if (out[i] < 0)
        return {};
    }
    return out;
  }
  if (k == OpKind::OnnxGather && n->inputs[1]->isConstant()) {
    // The indices' dims replace the gathered axis.
    const int64_t rank = int64_t(x.size());
    int64_t axis = a.getInt("axis");
    axis = axis < 0 ? axis + rank : axis;
    if (axis < 0 || axis >= rank)
      return {};
    const std::vector<int64_t>& idx = n->inputs[1]->constant->dims;
    std::vector<int64_t> out(x.begin(), x.begin() + axis);
    out.insert(out.end(), idx.begin(), idx.end());
    out.insert(out.end(), x.begin() + axis + 1, x.end());
    return out;
  }
  if (k == OpKind::OnnxAdd || k == OpKind::OnnxSub || k == OpKind::OnnxMul ||
      k == OpKind::OnnxDiv || k == OpKind::OnnxPow || k == OpKind::OnnxMax ||
      k == OpKind::OnnxMin) {
    if (n->inputs.size() != 2)
      return {};
    std::vector<int64_t> y = n->inputs[1]->isConstant()
                                 ? n->inputs[1]->constant->dims
                                 : n->inputs[1]->shape;
    std::vector<int64_t> a0 =
        n->inputs[0]->isConstant() ? n->inputs[0]->constant->dims : x;
    std::vector<int64_t> out;
    return broadcastDims(a0, y, out) ? out : std::vector<int64_t>{};
  }
  if (k == OpKind::OnnxExpand && n->inputs.size() == 2 &&
      n->inputs[1]->isConstant()) {
    // A target batch of 0 is the symbolic batch (foldShape's convention).
    std::vector<int64_t> in = n->inputs[0]->isConstant()
                                  ? n->inputs[0]->constant->dims
                                  : x,
                         to = n->inputs[1]->constant->toInts(), out;
    if (!broadcastDims(in, to, out))
      return {};
    if (!out.empty() && out[0] == 0)
      out[0] = -1;
    return out;
  }
  if (k == OpKind::OnnxSqueeze || k == OpKind::OnnxUnsqueeze) {
    // The axes: the attribute before opset 13, input 1 from 13 on (none:
    // Squeeze drops every dimension of size 1).
    std::vector<int64_t> axes = a.getInts("axes");
    if (opset >= 13 && n->inputs.size() > 1) {
      if (!n->inputs[1]->isConstant())
        return {};
      axes = n->inputs[1]->constant->toInts();
    }
    const bool grow = k == OpKind::OnnxUnsqueeze;
    const int64_t rank =
        int64_t(x.size()) + (grow ? int64_t(axes.size()) : int64_t{0});
    std::vector<bool> at(size_t(rank), false);
    for (int64_t ax : axes) {
      ax = ax < 0 ? ax + rank : ax;
      if (ax < 0 || ax >= rank || at[size_t(ax)])
        return {};
      at[size_t(ax)] = true;
    }
    if (grow && axes.empty())
      return {};
    std::vector<int64_t> out;
    for (size_t i = 0, j = 0; i < size_t(rank); ++i) {
      if (grow) {
        out.push_back(at[i] ? 1 : x[j++]);
        continue;
      }
      if (axes.empty() ? x[i] < 0 : at[i] && x[i] != 1)
        return {}; // (a size only known at run time, or not 1)
      if (!(axes.empty() ? x[i] == 1 : at[i]))
        out.push_back(x[i]);
    }
    return out;
  }
  if (k == OpKind::OnnxSlice) {
    std::vector<int64_t> begin, step, extent;
    if (!sliceGeometry(*n, opset, x, begin, step, extent))
      return {};
    return extent;
  }
  if (k == OpKind::OnnxConcat) {
    int64_t rank = static_cast<int64_t>(x.size());
    int64_t axis = a.getInt("axis");
    axis = axis < 0 ? axis + rank : axis;
    if (axis < 0 || axis >= rank)
      return {};
    std::vector<int64_t> out = x;
    out[size_t(axis)] = 0;
    for (const Value* v : n->inputs) {
      const std::vector<int64_t>& d =
          v->isConstant() ? v->constant->dims : v->shape;
      if (d.size() != x.size())
        return {};
      out[size_t(axis)] += d[size_t(axis)];
    }
    return out;
  }
  if (k == OpKind::OnnxConv || k == OpKind::OnnxMaxPool ||
      k == OpKind::OnnxAveragePool) {
    if (x.size() != 4)
      return {};
    std::vector<int64_t> kernel = a.getInts("kernel_shape");
    int64_t channels = x[1];
    if (k == OpKind::OnnxConv) {
      if (n->inputs.size() < 2 || !n->inputs[1]->isConstant())
        return {};
      const std::vector<int64_t>& w = n->inputs[1]->constant->dims;
      if (w.size() != 4)
        return {};
      channels = w[0];
      if (kernel.empty())
        kernel = {w[2], w[3]};
      // Dilated taps span (k - 1) * d + 1 pixels.
      const std::vector<int64_t> d = a.getInts("dilations");
      if (d.size() != 2 || kernel.size() != 2)
        return {};
      kernel = {(kernel[0] - 1) * d[0] + 1, (kernel[1] - 1) * d[1] + 1};
    }
    Axis h, w;
    const bool ceil = k != OpKind::OnnxConv && a.getInt("ceil_mode") != 0;
    if (kernel.size() != 2 ||
        !windowGeometry(a, x, kernel[0], kernel[1], ceil, h, w).empty())
      return {};
    return {x[0], channels, h.out, w.out};
  }
  if (k == OpKind::OnnxConvTranspose && n->inputs.size() >= 2 &&
      n->inputs[1]->isConstant()) {
    const std::vector<int64_t>& w = n->inputs[1]->constant->dims;
    TransposeGeometry geo;
    if (!transposeGeometry(*n, opset, x, w, geo).empty())
      return {};
    return {x[0], w[1] * geo.groups, geo.outH, geo.outW};
  }
  if (k == OpKind::OnnxResize || k == OpKind::OnnxUpsample) {
    ResizeGeometry geo;
    if (!resizeGeometry(*n, opset, x, geo).empty())
      return {};
    return {x[0], x[1], geo.outH, geo.outW};
  }
  if (k == OpKind::OnnxGlobalAveragePool && x.size() >= 3) {
    std::vector<int64_t> out(x.size(), 1);
    out[0] = x[0];
    out[1] = x[1];
    return out;
  }
  return {};
}

} // namespace hpvm::fe
