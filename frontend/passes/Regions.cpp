// Regions.cpp - the per-pixel ops a region held channel-first may hold,
// and their rewrite for channel-first data (Regions.h).
#include "passes/Regions.h"

#include "ir/Printer.h"
#include "onnx/OpAttrs.h"
#include "passes/ConstantTensors.h"
#include "passes/Matchers.h"
#include "passes/OpGeometry.h"
#include "support/Diagnostics.h"

namespace hpvm::fe {

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

bool isActivationOf(const Node* u, const Value* v) {
  switch (u->kind) {
  case OpKind::OnnxSigmoid:
  case OpKind::OnnxRelu:
  case OpKind::OnnxTanh:
  case OpKind::OnnxLeakyRelu:
  case OpKind::OnnxHardSigmoid:
  case OpKind::OnnxHardSwish:
  case OpKind::OnnxClip:
    break;
  default:
    return false;
  }
  bool fits = u->inputs[0] == v;
  for (size_t i = 1; i < u->inputs.size(); ++i)
    fits = fits && (u->inputs[i]->name.empty() || u->inputs[i]->isConstant());
  return fits;
}

void remapSliceAxes(Graph& g, Node& u, int64_t (*axisOf)(int64_t)) {
  const int64_t opset = g.source.opset;
  if (opset < 10) {
    OpAttrs a(u, opset);
    std::vector<int64_t> axes = a.getInts("axes");
    if (axes.empty())
      for (size_t i = 0; i < a.getInts("starts").size(); ++i)
        axes.push_back(int64_t(i));
    for (int64_t& axis : axes)
      axis = axisOf(axis);
    u.attrs["axes"] = axes;
    return;
  }
  // Opset 10+: starts, ends, axes and steps are inputs.
  std::vector<int64_t> axes;
  // (A Split's slices have unnamed constants: SplitOutputs.cpp.)
  if (u.inputs.size() > 3 && u.inputs[3] && u.inputs[3]->isConstant()) {
    axes = u.inputs[3]->constant->toInts();
  } else {
    for (int64_t i = 0; i < u.inputs[1]->constant->numElements(); ++i)
      axes.push_back(i);
  }
  for (int64_t& a : axes)
    a = axisOf(a);
  Value* c = g.addConstant(u.output->name + ".axes",
                           intTensor(axes, {int64_t(axes.size())}), -1);
  c->shape = {int64_t(axes.size())};
  if (u.inputs.size() < 4)
    u.inputs.resize(4, nullptr);
  g.setInput(&u, 3, c);
}

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
          : ch > 0 // (not a symbolic channel axis)
              ? floatTensor(std::vector<float>(size_t(ch), i == 1 ? 1 : 0),
                            {ch})
              : nullptr;
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
  } else if (k == OpKind::OnnxSlice) {
    // Axes H, W, C (1, 2, 3) channel-last are 2, 3, 1 channel-first.
    remapSliceAxes(g, *u, channelFirstAxis);
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

} // namespace hpvm::fe
