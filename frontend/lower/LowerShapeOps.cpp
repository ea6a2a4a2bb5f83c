// LowerShapeOps.cpp - lowering of the ops that move or select data (Slice,
// Concat, Pad) and of the rows the passes remove where they can (the
// reshapes, identities and shape computations left say why not).
#include "lower/LoweringState.h"

#include "ir/OpTable.h"
#include "onnx/Attributes.h"
#include "onnx/OpAttrs.h"
#include "onnx/Rank3Input.h"
#include "onnx/SplitOutputs.h"

#include <algorithm>
#include <cmath>

namespace hpvm::fe {

namespace {

/// Why Flatten/Reshape \p n, which aliasReshapes() would have removed, is
/// still there.
std::string reshapeLeftover(const Node* n, int64_t opset) {
  if (n->inputs[0]->isConstant())
    return "reshaping a constant to an unknown shape is not supported";
  return reshapeAliasBlocker(*n, opset);
}

/// Why \p n, a shape computation foldConstants() would have evaluated, is
/// still there.
std::string notFolded(const Node* n) {
  return std::string(n->origins.front().opType) +
         " computes on run-time values; it is only supported on constants "
         "(shape computations that fold away)";
}

/// \p n (a Reshape, Flatten, Squeeze or Unsqueeze) as the reshape op where
/// it only reinterprets an activation's memory: N x C x H x W or N x K to
/// N x C' x H' x W' or N x K' with the same batch and values (nothing where
/// both are held alike); "" when lowered, else \p otherwise.
std::string lowerMemoryReshape(Lowering& L, Node* n,
                               const std::string& otherwise) {
  Value* x = n->inputs[0];
  const std::vector<int64_t>& s = x->shape;
  const std::vector<int64_t>& out = n->output->shape;
  auto values = [](const std::vector<int64_t>& d) {
    int64_t v = 1;
    for (size_t i = 1; i < d.size(); ++i)
      v = d[i] > 0 ? v * d[i] : -1;
    return v;
  };
  if (x->isConstant() || (s.size() != 2 && s.size() != 4) ||
      (out.size() != 2 && out.size() != 4) || s[0] != out[0] ||
      values(s) <= 0 || values(s) != values(out))
    return otherwise;
  const std::vector<int64_t> held = form4d(out);
  if (form4d(s) == held && x != L.g.input) {
    // Held the same (N x K as N x K x 1 x 1): the input itself.
    L.g.replaceAllUses(n->output, x);
    L.g.eraseNode(n);
    return "";
  }
  int pos = L.position(n);
  L.finish(n, L.emit(OpKind::Reshape, {x},
                     {Scalar::integer(held[1]), Scalar::integer(held[2]),
                      Scalar::integer(held[3])},
                     held, n->output->name, *n, pos));
  return "";
}

} // namespace

/// A slice of the channels of an N x C x H x W activation (ShuffleNet's
/// channel split), step 1; a slice that keeps everything is the input.
std::string lowerSlice(Lowering& L, Node* n) {
  Value* x = n->inputs[0];
  if (auto r = needActivation(x, "input"); !r.empty())
    return r;
  std::vector<int64_t> begin, step, extent;
  if (!sliceGeometry(*n, L.g.source.opset, x->shape, begin, step, extent))
    return "starts, ends, axes and steps must be valid constants";
  auto whole = [&](size_t d) {
    return begin[d] == 0 && step[d] == 1 && extent[d] == x->shape[d];
  };
  if (x->shape.size() != 4 || !whole(0) ||
      (!whole(1) && !(whole(2) && whole(3))))
    return "slicing shape " + formatShape(x->shape) + " by starts " +
           formatInts(begin) + ", steps " + formatInts(step) +
           " is not supported (only 4-D: the channels, or the rows and "
           "columns with steps >= 1)";
  if (whole(1) && !(whole(2) && whole(3))) {
    // Rows and columns: spatial_slice.
    if (step[2] < 1 || step[3] < 1 || extent[2] < 1 || extent[3] < 1)
      return "slicing rows and columns with steps " + formatInts(step) +
             " is not supported (only steps >= 1, not empty)";
    // A slice of a spatial_slice read by nothing else (ONNX slices rows,
    // then columns): one spatial_slice of the first one's input; the
    // first is dead then.
    Value* from = x;
    if (const Node* p = x->producer;
        p && p->kind == OpKind::SpatialSlice && x->users.size() == 1) {
      for (size_t d = 2; d < 4; ++d) {
        begin[d] = p->scalars[d - 2].i + begin[d] * p->scalars[d].i;
        step[d] *= p->scalars[d].i;
      }
      from = p->inputs[0];
    }
    int pos = L.position(n);
    L.finish(n, L.emit(OpKind::SpatialSlice, {from},
                       {Scalar::integer(begin[2]), Scalar::integer(begin[3]),
                        Scalar::integer(step[2]), Scalar::integer(step[3]),
                        Scalar::integer(extent[2]), Scalar::integer(extent[3])},
                       {x->shape[0], x->shape[1], extent[2], extent[3]},
                       n->output->name, *n, pos));
    return "";
  }
  if (step[1] != 1)
    return "slicing the channels with step " + std::to_string(step[1]) +
           " is not supported (only step 1)";
  if (extent[1] == 0)
    return "the slice is empty";
  if (extent[1] == x->shape[1]) {
    L.g.replaceAllUses(n->output, x);
    L.g.eraseNode(n);
    return "";
  }
  int pos = L.position(n);
  L.finish(n, L.emit(OpKind::ChannelSlice, {x},
                     {Scalar::integer(begin[1]),
                      Scalar::integer(begin[1] + extent[1])},
                     {x->shape[0], extent[1], x->shape[2], x->shape[3]},
                     n->output->name, *n, pos));
  return "";
}

/// An N x C x H x W activation to N x H x W x C (channels_last: an NHWC
/// output, as tf2onnx writes models) and back (channels_first: an NHWC
/// input); transposes of the pixels of channel-last regions and of a
/// transformer's tokens are gone before this (the layout passes).
std::string lowerTranspose(Lowering& L, Node* n) {
  Value* x = n->inputs[0];
  if (auto r = needActivation(x, "input"); !r.empty())
    return r;
  const std::vector<int64_t> perm =
      OpAttrs(*n, L.g.source.opset).getInts("perm");
  const bool last = perm == std::vector<int64_t>{0, 2, 3, 1},
             first = perm == std::vector<int64_t>{0, 3, 1, 2};
  if (x->shape.size() != 4 || (!last && !first))
    return "transposing activations by perm " + formatInts(perm) + " of " +
           formatShape(x->shape) +
           " is not supported (only N x C x H x W to N x H x W x C and "
           "back, [0, 2, 3, 1] and [0, 3, 1, 2]; a transformer's tokens "
           "B x T x D and ShuffleNet's channel shuffle where recognised "
           "whole)";
  const std::vector<int64_t>& s = x->shape;
  int pos = L.position(n);
  L.finish(n,
           L.emit(last ? OpKind::ChannelsLast : OpKind::ChannelsFirst, {x}, {},
                  last ? std::vector<int64_t>{s[0], s[2], s[3], s[1]}
                       : std::vector<int64_t>{s[0], s[3], s[1], s[2]},
                  n->output->name, *n, pos));
  return "";
}

// Rows the passes remove where they can: what is left says why not.
std::string lowerFlatten(Lowering& L, Node* n) {
  return lowerMemoryReshape(L, n, reshapeLeftover(n, L.g.source.opset));
}
std::string lowerReshape(Lowering& L, Node* n) {
  if (isTokensOfRank3Input(L.g, *n))
    return rank3InputRefusal(*n);
  // N x 1 x H x W <-> N x H x W x 1 (tf2onnx writes the NHWC <-> NCHW
  // transpose of one channel as a Reshape): the same values in the same
  // order, a transpose with channels_last / channels_first.
  Value* x = n->inputs[0];
  const std::vector<int64_t>& s = x->shape;
  const std::vector<int64_t>& out = n->output->shape;
  if (!x->isConstant() && s.size() == 4 && out.size() == 4 && s[0] == out[0] &&
      s != out) {
    const bool last =
        s[1] == 1 && out == std::vector<int64_t>{s[0], s[2], s[3], 1};
    const bool first =
        s[3] == 1 && out == std::vector<int64_t>{s[0], 1, s[1], s[2]};
    if (last || first) {
      int pos = L.position(n);
      L.finish(n, L.emit(last ? OpKind::ChannelsLast : OpKind::ChannelsFirst,
                         {x}, {}, out, n->output->name, *n, pos));
      return "";
    }
  }
  return lowerMemoryReshape(L, n, reshapeLeftover(n, L.g.source.opset));
}
std::string lowerPad(Lowering& L, Node* n) {
  // Not folded into a Conv or pool (fold-pads took those it could): pad.
  std::vector<int64_t> pads;
  double value = 0;
  if (std::string why = padGeometry(*n, L.g.source.opset, pads, value);
      !why.empty())
    return why;
  if (!std::isfinite(value))
    return "padding value " + std::to_string(value) +
           " is not supported where the Pad is not folded into a pool "
           "(only finite values; " +
           padFoldBlocker(*n, L.g.source.opset) + ")";
  Value* x = n->inputs[0];
  if (auto r = needActivation(x, "input"); !r.empty())
    return r;
  int pos = L.position(n);
  L.finish(n, L.emit(OpKind::Pad, {x},
                     {Scalar::integer(pads[2]), Scalar::integer(pads[3]),
                      Scalar::integer(pads[6]), Scalar::integer(pads[7]),
                      Scalar::real(shortestFloat(float(value)))},
                     {x->shape[0], x->shape[1], x->shape[2] + pads[2] + pads[6],
                      x->shape[3] + pads[3] + pads[7]},
                     n->output->name, *n, pos));
  return "";
}
std::string lowerDropout(Lowering&, Node*) {
  return "training_mode is not a constant false (only inference Dropout is "
         "supported)";
}
std::string lowerIdentity(Lowering&, Node* n) { return notFolded(n); }
std::string lowerConstant(Lowering&, Node* n) { return notFolded(n); }
std::string lowerShape(Lowering&, Node* n) { return notFolded(n); }
std::string lowerGather(Lowering&, Node* n) { return notFolded(n); }
std::string lowerUnsqueeze(Lowering& L, Node* n) {
  return lowerMemoryReshape(L, n, notFolded(n));
}
std::string lowerSqueeze(Lowering& L, Node* n) {
  return lowerMemoryReshape(L, n, notFolded(n));
}
std::string lowerSplit(Lowering& L, Node* n) {
  // (The loader and constant folding made a Slice of every output they
  // could place along the axis.)
  int64_t begin = 0, length = 0, axis = 0;
  return splitPlacement(*n, L.g.source.opset, begin, length, axis);
}
std::string lowerCast(Lowering&, Node* n) { return notFolded(n); }
std::string lowerConstantOfShape(Lowering&, Node* n) { return notFolded(n); }
std::string lowerEqual(Lowering&, Node* n) { return notFolded(n); }
std::string lowerWhere(Lowering&, Node* n) { return notFolded(n); }
std::string lowerExpand(Lowering&, Node* n) { return notFolded(n); }
std::string lowerMod(Lowering&, Node* n) { return notFolded(n); }
std::string lowerNot(Lowering&, Node* n) { return notFolded(n); }
std::string lowerRange(Lowering&, Node* n) { return notFolded(n); }
std::string lowerScatterND(Lowering&, Node* n) { return notFolded(n); }

/// Concatenation of activations along the channels (axis 1 of N x C x H x W
/// or of N x K) or along the width (axis 3 of N x C x H x W; constant
/// inputs were folded, or are refused): one concat or concat_width of up
/// to kMaxTensorArgs parts, a tree of them beyond; a single input is the
/// input itself.
std::string lowerConcat(Lowering& L, Node* n) {
  const std::vector<int64_t>& onnx = n->output->shape;
  if (onnx.size() != 2 && onnx.size() != 4)
    return "concatenating tensors of shape " + formatShape(onnx) +
           " is not supported (only 4-D N x C x H x W or 2-D N x K)";
  OpAttrs attrs(*n, L.g.source.opset);
  int64_t rank = static_cast<int64_t>(onnx.size());
  int64_t axis = attrs.getInt("axis");
  if (axis < -rank || axis >= rank)
    return "axis " + std::to_string(axis) + " is out of range for rank " +
           std::to_string(rank);
  axis = axis < 0 ? axis + rank : axis;
  if (axis != 1 && !(axis == 3 && rank == 4))
    return "concatenation along axis " + std::to_string(axis) + " of shape " +
           formatShape(onnx) + " is not supported (only along the channels, " +
           (rank == 4 ? "axis 1, or the width, axis 3)" : "axis 1)");
  const OpKind kind = axis == 1 ? OpKind::Concat : OpKind::ConcatWidth;
  const size_t along = static_cast<size_t>(axis);
  std::vector<Value*> parts;
  for (size_t i = 0; i < n->inputs.size(); ++i) {
    Value* v = n->inputs[i];
    std::string role = "input " + std::to_string(i + 1);
    if (auto r = needActivation(v, role.c_str(), true); !r.empty())
      return r;
    parts.push_back(v);
  }
  if (parts.empty())
    return "Concat needs at least one input";
  if (parts.size() == 1) {
    L.g.replaceAllUses(n->output, parts[0]);
    L.g.eraseNode(n);
    return "";
  }
  int pos = L.position(n);
  // Groups of at most kMaxTensorArgs parts, concatenated level by level.
  for (int level = 0; parts.size() > 1; ++level) {
    std::vector<Value*> next;
    for (size_t b = 0; b < parts.size(); b += kMaxTensorArgs) {
      size_t e = std::min(parts.size(), b + size_t(kMaxTensorArgs));
      if (e - b == 1) {
        next.push_back(parts[b]);
        continue;
      }
      std::vector<Value*> group(parts.begin() + b, parts.begin() + e);
      std::vector<int64_t> shape = form4d(group[0]->shape);
      shape[along] = 0;
      for (Value* v : group)
        shape[along] += form4d(v->shape)[along];
      bool last = e - b == parts.size();
      std::string name = last ? n->output->name
                              : n->output->name + "_part" +
                                    std::to_string(level) + "_" +
                                    std::to_string(b / kMaxTensorArgs);
      next.push_back(L.emit(kind, std::move(group), {}, shape, name, *n, pos));
    }
    parts = std::move(next);
  }
  L.finish(n, parts[0]);
  return "";
}

} // namespace hpvm::fe
