// OpGeometry.cpp - what ONNX operators' attributes and constant operands
// mean for shapes: slices, windows (conv, pool), pads and reshapes.
#include "passes/OpGeometry.h"

#include "ir/Printer.h"
#include "onnx/Attributes.h"
#include "onnx/OpAttrs.h"
#include "support/Diagnostics.h"

#include <algorithm>
#include <cmath>

namespace hpvm::fe {

bool axesOf(Node* n, OpAttrs& a, std::vector<int64_t>& axes) {
  if (n->inputs.size() > 1) {
    if (!n->inputs[1]->isConstant())
      return false;
    axes = n->inputs[1]->constant->toInts();
    return true;
  }
  axes = a.getInts("axes");
  return true;
}

std::vector<int64_t> resolveReshape(const std::vector<int64_t>& in,
                                    std::vector<int64_t> target) {
  if (in.empty())
    return {};
  int inferAt = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0) {
      if (i >= in.size())
        return {};
      target[i] = in[i];
    } else if (target[i] == -1) {
      if (inferAt >= 0)
        return {};
      inferAt = static_cast<int>(i);
    } else if (target[i] < 0) {
      return {};
    }
  }
  // A symbolic input dimension (-1, the batch) is allowed where the target
  // keeps it in place: copied (0) or inferred (-1) at the same position.
  int64_t inKnown = 1;
  bool symbolicInferred = false;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] >= 0) {
      if (__builtin_mul_overflow(inKnown, in[i], &inKnown))
        return {}; // (no tensor has that many elements)
    } else if (static_cast<int>(i) == inferAt) {
      symbolicInferred = true;
    } else if (i >= target.size() || target[i] != in[i]) {
      return {};
    }
  }
  if (inferAt < 0)
    return target;
  int64_t outKnown = 1;
  for (size_t i = 0; i < target.size(); ++i)
    if (static_cast<int>(i) != inferAt && target[i] >= 0 &&
        __builtin_mul_overflow(outKnown, target[i], &outKnown))
      return {};
  if (symbolicInferred) {
    // x.view(-1, K) on a batch of unknown size: the rest must match.
    if (outKnown != inKnown)
      return {};
    return target;
  }
  if (outKnown == 0 || inKnown % outKnown != 0)
    return {};
  target[static_cast<size_t>(inferAt)] = inKnown / outKnown;
  return target;
}

bool sliceGeometry(const Node& node, int64_t opset,
                   const std::vector<int64_t>& dims,
                   std::vector<int64_t>& begin, std::vector<int64_t>& step,
                   std::vector<int64_t>& extent) {
  const Node* n = &node;
  OpAttrs a(node, opset);
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset < 10) {
    starts = a.getInts("starts");
    ends = a.getInts("ends");
    axes = a.getInts("axes");
  } else {
    for (size_t i = 1; i < n->inputs.size(); ++i)
      if (!n->inputs[i]->isConstant() && !n->inputs[i]->name.empty())
        return false;
    auto input = [&](size_t i) {
      return i < n->inputs.size() && n->inputs[i]->isConstant()
                 ? n->inputs[i]->constant->toInts()
                 : std::vector<int64_t>{};
    };
    starts = input(1);
    ends = input(2);
    axes = input(3);
    steps = input(4);
  }
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return false;
  begin.assign(dims.size(), 0);
  step.assign(dims.size(), 1);
  extent = dims;
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t ax = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (ax < 0 || ax >= rank || seen[size_t(ax)] || steps[i] == 0)
      return false;
    seen[size_t(ax)] = true;
    const int64_t d = dims[size_t(ax)], s = steps[i];
    if (d < 0)
      return false;
    auto clampIndex = [&](int64_t v) {
      v = v < 0 ? v + d : v;
      return s > 0 ? std::clamp<int64_t>(v, 0, d)
                   : std::clamp<int64_t>(v, -1, d - 1);
    };
    int64_t b = clampIndex(starts[i]), e = clampIndex(ends[i]);
    int64_t len = s > 0 ? (e - b + s - 1) / s : (b - e + (-s) - 1) / (-s);
    begin[size_t(ax)] = b;
    step[size_t(ax)] = s;
    extent[size_t(ax)] = std::max<int64_t>(len, 0);
  }
  return true;
}

/// Computes pads (explicit or auto_pad) and output size of \p axis and
/// whether HPVM's symmetric pad padBegin computes the same outputs: the
/// output count is the same, windows start at o*stride - padBegin in both,
/// and every extra position either side reads is padding in both.
std::string resolveAxis(Axis& a, const std::string& autoPad, bool ceilMode,
                        const char* axisName) {
  if (autoPad == "VALID") {
    a.padBegin = a.padEnd = 0;
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    int64_t out = (a.in + a.stride - 1) / a.stride;
    int64_t total =
        std::max<int64_t>((out - 1) * a.stride + a.kernel - a.in, 0);
    a.padBegin = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
    a.padEnd = total - a.padBegin;
  }
  int64_t span = a.in + a.padBegin + a.padEnd - a.kernel;
  if (span < 0)
    return std::string("the window (") + std::to_string(a.kernel) +
           ") is larger than the padded input " + axisName + " (" +
           std::to_string(a.in + a.padBegin + a.padEnd) + ")";
  a.out = span / a.stride + 1;
  if (ceilMode) {
    a.out = (span + a.stride - 1) / a.stride + 1;
    // A last window that would start in the end padding is dropped (ONNX,
    // PyTorch).
    if ((a.out - 1) * a.stride >= a.in + a.padBegin)
      --a.out;
  }
  int64_t reach = (a.out - 1) * a.stride + a.kernel - a.in - a.padBegin;
  a.padEndUsed = std::max<int64_t>(reach, 0);
  a.overhang = reach > a.padEnd;
  a.pad = a.padBegin;
  int64_t symmetric = a.in + 2 * a.padBegin - a.kernel;
  a.symmetric =
      (a.padBegin == a.padEnd && !a.overhang) ||
      (symmetric >= 0 && symmetric / a.stride + 1 == a.out && !a.overhang);
  return "";
}

/// Reads kernel/stride/pad attributes of a Conv or pool over the spatial
/// dims of \p x into \p h and \p w.
std::string windowGeometry(OpAttrs& attrs, const std::vector<int64_t>& x,
                           int64_t kh, int64_t kw, bool ceilMode, Axis& h,
                           Axis& w) {
  std::vector<int64_t> strides = attrs.getInts("strides");
  std::vector<int64_t> pads = attrs.getInts("pads");
  std::string autoPad = attrs.getString("auto_pad");
  if (strides.size() != 2 || pads.size() != 4)
    return "strides " + formatInts(strides) + " / pads " + formatInts(pads) +
           " do not describe a 2-D window";
  h = Axis{x[2], kh, strides[0], pads[0], pads[2], 0, 0};
  w = Axis{x[3], kw, strides[1], pads[1], pads[3], 0, 0};
  std::string reason = resolveAxis(h, autoPad, ceilMode, "height");
  if (reason.empty())
    reason = resolveAxis(w, autoPad, ceilMode, "width");
  return reason;
}

std::vector<int64_t> form4d(const std::vector<int64_t>& shape) {
  if (shape.size() == 4)
    return shape;
  if (shape.size() == 2)
    return {shape[0], shape[1], 1, 1};
  return {};
}

std::vector<int64_t> reshapeTarget(const Node& r, int64_t opset) {
  const std::vector<int64_t>& in = r.inputs[0]->shape;
  OpAttrs attrs(r, opset);
  if (r.kind == OpKind::OnnxFlatten) {
    int64_t rank = static_cast<int64_t>(in.size());
    int64_t axis = attrs.getInt("axis");
    axis = axis < 0 ? axis + rank : axis;
    if (in.empty() || axis < 0 || axis > rank)
      return {};
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < rank; ++i) {
      int64_t d = in[static_cast<size_t>(i)];
      if (d < 0 && !(i == 0 && axis == 1))
        return {};
      int64_t& part = i < axis ? outer : inner;
      if (__builtin_mul_overflow(part, d, &part))
        return {};
    }
    return {outer, inner};
  }
  std::vector<int64_t> target;
  if (r.inputs.size() > 1) {
    if (!r.inputs[1]->isConstant())
      return {};
    target = r.inputs[1]->constant->toInts();
  } else {
    target = attrs.getInts("shape");
  }
  if (target.empty())
    return {};
  return resolveReshape(in, target);
}

std::string reshapeAliasBlocker(const Node& r, int64_t opset) {
  const Value* in = r.inputs[0];
  std::vector<int64_t> out = reshapeTarget(r, opset);
  std::string what = r.kind == OpKind::OnnxFlatten ? "flattening" : "reshaping";
  if (out.empty())
    return "the target shape is not known when compiling (dynamic shapes "
           "are not supported)";
  if (in->shape.empty())
    return "the input shape is not known when compiling (dynamic shapes "
           "are not supported)";
  std::vector<int64_t> in4 = form4d(in->shape), out4 = form4d(out);
  if (!in4.empty() && in4 == out4)
    return "";
  const std::vector<int64_t>& s = in->shape;
  if (s.size() == 4 && out.size() == 2 && out[0] == s[0] && s[1] >= 0 &&
      out[1] == s[1] * s[2] * s[3]) {
    // The reader of the flattened values that is not Gemm or MatMul
    // (through a pre-quantized model's QuantizeLinear and DequantizeLinear,
    // element-wise), if any.
    std::vector<const Value*> work{r.output};
    while (!work.empty()) {
      const Value* v = work.back();
      work.pop_back();
      for (const Node* user : v->users) {
        if (user->kind == OpKind::OnnxQuantizeLinear ||
            user->kind == OpKind::OnnxDequantizeLinear ||
            user->kind == OpKind::OnnxDynamicQuantizeLinear) {
          if (user->inputs[0] == v) {
            work.push_back(user->output);
            continue;
          }
        } else if ((user->kind == OpKind::OnnxGemm ||
                    user->kind == OpKind::OnnxMatMul) &&
                   user->inputs[0] == v) {
          continue;
        }
        return what + " " + formatShape(s) + " to " + formatShape(out) +
               " is only supported right before Gemm or MatMul (it feeds " +
               describeProducer(user->output) + ")";
      }
    }
    return "";
  }
  return what + " " + formatShape(s) + " to " + formatShape(out) +
         " is not supported (only reshapes that keep the batch and each "
         "image's values in order: N x C x H x W or N x K to N x C' x H' x "
         "W' or N x K')";
}

bool constantPads(const Node& pad, int64_t opset, std::vector<int64_t>& pads) {
  // Attribute (opset < 11, "paddings" in opset 1) or constant input 1.
  if (pad.inputs.size() > 1) {
    if (!pad.inputs[1]->isConstant())
      return false;
    pads = pad.inputs[1]->constant->toInts();
  } else {
    OpAttrs attrs(pad, opset);
    pads =
        attrs.has("pads") ? attrs.getInts("pads") : attrs.getInts("paddings");
  }
  return true;
}

std::string padGeometry(const Node& pad, int64_t opset,
                        std::vector<int64_t>& pads, double& value,
                        bool channelLast) {
  if (!constantPads(pad, opset, pads))
    return "the pads are computed at run time (only constant pads are "
           "supported)";
  OpAttrs attrs(pad, opset);
  value = attrs.getFloat("value");
  if (pad.inputs.size() > 2 && !pad.inputs[2]->name.empty()) {
    const Value* v = pad.inputs[2];
    if (!v->isConstant() || v->constant->numElements() != 1)
      return "the padding value is not a constant scalar";
    value = v->constant->asDouble(0);
  }
  const Value* in = pad.inputs[0];
  if (in->shape.size() != 4 || pads.size() != 8)
    return "only padding of 4-D (N, C, H, W) tensors is supported (input "
           "has shape " +
           formatShape(in->shape) + ")";
  for (int64_t p : pads)
    if (p < 0)
      return "negative pads " + formatInts(pads) +
             " (cropping) are not supported";
  const size_t channel = channelLast ? 3 : 1;
  if (pads[0] || pads[channel] || pads[4] || pads[4 + channel])
    return "pads " + formatInts(pads) +
           " pad the batch or channel dimension, which is not supported";
  return "";
}

std::string padFoldBlocker(const Node& pad, int64_t opset) {
  std::vector<int64_t> pads;
  double value = 0;
  if (std::string why = padGeometry(pad, opset, pads, value); !why.empty())
    return why;
  const Value* in = pad.inputs[0];
  bool minusInf = std::isinf(value) && value < 0;
  if (value != 0.0 && !minusInf)
    return "padding value " + std::to_string(value) +
           " is not supported (only 0)";
  if (pad.output->users.size() != 1)
    return "the padded tensor feeds " +
           std::to_string(pad.output->users.size()) +
           " nodes; Pad is only folded into a single Conv or pool";
  const Node& user = *pad.output->users.front();
  bool isPool =
      user.kind == OpKind::OnnxMaxPool || user.kind == OpKind::OnnxAveragePool;
  if ((user.kind != OpKind::OnnxConv && !isPool) ||
      user.inputs[0] != pad.output)
    return "Pad is only folded into the Conv, MaxPool or AveragePool it "
           "feeds (it feeds " +
           describeProducer(user.output) + ")";
  OpAttrs userAttrs(user, opset);
  std::string autoPad = userAttrs.getString("auto_pad");
  if (autoPad != "NOTSET" && autoPad != "VALID")
    return "Pad feeds " + describeProducer(user.output) + " with auto_pad " +
           autoPad + ", which cannot be combined";
  std::vector<int64_t> own = userAttrs.getInts("pads");
  bool ownPads =
      std::any_of(own.begin(), own.end(), [](int64_t p) { return p != 0; }) &&
      autoPad == "NOTSET";
  // Zero padding is what Conv pads with, and what AveragePool averages in
  // with count_include_pad=1. -inf padding is what MaxPool assumes.
  if (user.kind == OpKind::OnnxConv)
    return minusInf ? "padding with -inf before a Conv is not supported" : "";
  if (user.kind == OpKind::OnnxAveragePool) {
    if (minusInf)
      return "padding with -inf before AveragePool is not supported";
    if (ownPads && userAttrs.getInt("count_include_pad") == 0)
      return "Pad feeds AveragePool with its own pads and "
             "count_include_pad=0, which cannot be combined";
    return "";
  }
  if (minusInf)
    return "";
  // MaxPool after zero padding: max(window with zeros) equals max over the
  // real elements exactly when those are all >= 0 (the input comes from a
  // Relu, or a Clip with min >= 0) and every window holds at least one real
  // element (each side's total pad is smaller than the window).
  const Node* producer = in->producer;
  bool nonNegative =
      producer != nullptr && (producer->kind == OpKind::OnnxRelu ||
                              producer->kind == OpKind::OnnxClip);
  if (producer != nullptr && producer->kind == OpKind::OnnxClip) {
    OpAttrs clip(*producer, opset);
    double lo = clip.getFloat("min");
    if (producer->inputs.size() > 1) {
      const Value* v = producer->inputs[1];
      lo = v->isConstant() && v->constant->numElements() == 1
               ? v->constant->asDouble(0)
               : -1.0;
    }
    nonNegative = lo >= 0.0;
  }
  if (!nonNegative)
    return "zero padding before MaxPool changes the result unless its input "
           "is non-negative (produced by Relu)";
  std::vector<int64_t> kernel = userAttrs.getInts("kernel_shape");
  if (kernel.size() != 2)
    return "MaxPool has no 2-D kernel_shape";
  if (own.size() != 4)
    own.assign(4, 0);
  if (autoPad == "VALID")
    own.assign(4, 0);
  if (pads[2] + own[0] >= kernel[0] || pads[6] + own[2] >= kernel[0] ||
      pads[3] + own[1] >= kernel[1] || pads[7] + own[3] >= kernel[1])
    return "zero padding before MaxPool is only folded when every window "
           "overlaps the image (pads smaller than the window)";
  return "";
}

} // namespace hpvm::fe

namespace hpvm::fe {

namespace {

/// The longest axis a Resize may make (the IR's activation checks refuse
/// anything near it; this bound keeps the size an exact int64).
constexpr double kMaxResizedSize = double(int64_t(1) << 40);

std::string axisName(int axis) {
  return axis == 2   ? "height"
         : axis == 3 ? "width"
                     : "axis " + std::to_string(axis);
}

/// The enumerator whose ONNX name is \p name, or -1.
template <size_t N>
int indexOfName(const std::string_view (&names)[N], const std::string& name) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == name)
      return static_cast<int>(i);
  return -1;
}

/// The constant operand \p i of \p n, when present and non-empty.
const TensorData* constantOperand(const Node& n, size_t i, bool& computed) {
  if (i >= n.inputs.size())
    return nullptr;
  const Value* v = n.inputs[i];
  if (!v->isConstant()) {
    computed = true;
    return nullptr;
  }
  return v->constant->numElements() == 0 ? nullptr : v->constant.get();
}

} // namespace

std::string resizeGeometry(const Node& n, int64_t opset,
                           const std::vector<int64_t>& x, ResizeGeometry& g) {
  using hpvm::rt::NearestRounding;
  using hpvm::rt::ResizeCoord;
  OpAttrs a(n, opset);
  std::vector<std::string> why;
  const bool upsample = n.kind == OpKind::OnnxUpsample;
  if (x.size() != 4 || x[2] < 1 || x[3] < 1)
    return "input has shape " + formatShape(x) +
           "; only 4-D inputs of known height and width are resized";
  // The mode.
  const std::string mode = a.getString("mode");
  g.linear = mode == "linear" || mode == "bilinear";
  g.cubic = mode == "cubic" || mode == "bicubic";
  if (!g.linear && !g.cubic && mode != "nearest")
    why.push_back("mode '" + escapeName(mode) + "' is not one of ONNX's");
  if (g.cubic && (upsample || opset < 11))
    why.push_back("mode '" + escapeName(mode) + "' needs Resize of opset 11 " +
                  "or later (" + (upsample ? "Upsample" : "Resize-10") +
                  " is nearest or linear)");
  else if (g.cubic) {
    g.cubicA = float(a.getFloat("cubic_coeff_a"));
    g.excludeOutside = a.getInt("exclude_outside") != 0;
    if (!std::isfinite(g.cubicA))
      why.push_back("cubic_coeff_a " + std::to_string(g.cubicA) +
                    " is not finite");
  }
  // Coordinates: Upsample and Resize-10 map asymmetrically; their nearest
  // pixel is ONNX Runtime's: floor upsampling, ceil downsampling.
  const bool legacy = upsample || opset < 11;
  if (!legacy) {
    const std::string coord = a.getString("coordinate_transformation_mode");
    const int c = indexOfName(hpvm::rt::kResizeCoordNames, coord);
    if (c < 0)
      why.push_back("coordinate_transformation_mode '" + escapeName(coord) +
                    "' is not supported");
    else
      g.coord = static_cast<ResizeCoord>(c);
    g.crop = g.coord == ResizeCoord::TfCropAndResize;
    const std::string nearest = a.getString("nearest_mode");
    const int r = indexOfName(hpvm::rt::kNearestRoundingNames, nearest);
    if (r < 0)
      why.push_back("nearest_mode '" + escapeName(nearest) +
                    "' is not supported");
    else
      g.rounding = static_cast<NearestRounding>(r);
  } else {
    g.coord = ResizeCoord::Asymmetric;
  }
  // Scales (attribute of Upsample-7, input 1 of Upsample-9 and Resize-10,
  // input 2 later) or sizes (input 3).
  bool computed = false;
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (upsample && n.inputs.size() < 2) {
    scales = a.getFloats("scales");
  } else if (const TensorData* s =
                 constantOperand(n, legacy ? 1 : 2, computed)) {
    for (float f : s->toFloats())
      scales.push_back(f);
  }
  if (!legacy)
    if (const TensorData* s = constantOperand(n, 3, computed))
      sizes = s->toInts();
  // roi (input 1): tf_crop_and_resize's region, starts then ends.
  std::vector<float> roi;
  bool roiComputed = false;
  if (g.crop)
    if (const TensorData* r = constantOperand(n, 1, roiComputed))
      roi = r->toFloats();
  if (computed)
    why.push_back("its scales or sizes are computed at run time; only "
                  "constants (or values folded from known shapes) are "
                  "supported");
  else if (scales.empty() == sizes.empty())
    why.push_back("it needs exactly one of scales and sizes");
  if (roiComputed)
    why.push_back("its roi (the region tf_crop_and_resize crops) is "
                  "computed at run time; only a constant one is supported");
  computed = computed || roiComputed;
  // axes (opset 18): scales or sizes of those axes only.
  std::vector<int64_t> axes =
      legacy ? std::vector<int64_t>{} : a.getInts("axes");
  const size_t given = scales.empty() ? sizes.size() : scales.size();
  if (axes.empty())
    for (size_t i = 0; i < given; ++i)
      axes.push_back(int64_t(i));
  if (!computed && given != 0 && axes.size() != given)
    why.push_back("it has " + std::to_string(given) + " scales or sizes for " +
                  std::to_string(axes.size()) + " axes");
  if (g.crop && !computed && roi.size() != 2 * axes.size())
    why.push_back("tf_crop_and_resize needs an roi of " +
                  std::to_string(2 * axes.size()) +
                  " values (each axis' start, then each one's end), not " +
                  std::to_string(roi.size()));
  if (g.crop) {
    const double v = a.getFloat("extrapolation_value");
    g.extrapolation = static_cast<float>(v);
    if (!std::isfinite(g.extrapolation))
      why.push_back("extrapolation_value " + formatScalar(Scalar::real(v)) +
                    " is not finite");
  }
  if (!why.empty()) {
    std::string all = why[0];
    for (size_t i = 1; i < why.size(); ++i)
      all += "; " + why[i];
    return all;
  }
  double scale[4] = {1, 1, 1, 1};
  int64_t out[4] = {x[0], x[1], x[2], x[3]};
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + 4 : axes[i];
    if (axis < 0 || axis > 3)
      return "axis " + std::to_string(axes[i]) + " is not one of the input's";
    if (g.crop) {
      const float start = roi[i], end = roi[axes.size() + i];
      if (!(std::fabs(start) <= 1e6f && std::fabs(end) <= 1e6f))
        return "roi " + formatScalar(Scalar::real(start)) + " .. " +
               formatScalar(Scalar::real(end)) + " of axis " +
               std::to_string(axis) +
               " is not a finite fraction of at most "
               "1e6";
      if (axis >= 2) {
        g.roi[axis - 2] = start;
        g.roi[axis] = end;
      } else if ((start != 0.f || end != 1.f) && x[axis] != 1) {
        return "its roi crops the " +
               std::string(axis == 0 ? "batch" : "channel") +
               " axis (only height and width are cropped)";
      }
    }
    if (!scales.empty()) {
      scale[axis] = scales[i];
      if (!(scales[i] > 0) || !std::isfinite(scales[i]))
        return "scale " + formatScalar(Scalar::real(scales[i])) +
               " is not a positive number";
      const double size = std::floor(double(x[axis]) * scales[i]);
      if (axis >= 2 && !(size < kMaxResizedSize))
        return "scale " + formatScalar(Scalar::real(scales[i])) +
               " makes the output's " + axisName(axis) + " " +
               formatScalar(Scalar::real(size)) + " (more than 2^40)";
      out[axis] = axis < 2 ? x[axis] : static_cast<int64_t>(size);
    } else {
      // A folded Shape gives 0 for an unknown batch.
      out[axis] = axis == 0 && sizes[i] <= 0 ? x[0] : sizes[i];
      if (axis >= 2)
        scale[axis] = double(float(sizes[i]) / float(x[axis]));
    }
  }
  if (!sizes.empty() && !legacy) {
    const std::string policy = a.getString("keep_aspect_ratio_policy");
    if (policy == "not_larger" || policy == "not_smaller") {
      const double s = policy == "not_larger" ? std::min(scale[2], scale[3])
                                              : std::max(scale[2], scale[3]);
      for (int axis = 2; axis < 4; ++axis) {
        scale[axis] = s;
        const double size = std::floor(double(x[axis]) * s + 0.5);
        if (!(size < kMaxResizedSize))
          return "keep_aspect_ratio_policy '" + policy +
                 "' makes the output's " + axisName(axis) + " " +
                 formatScalar(Scalar::real(size)) + " (more than 2^40)";
        out[axis] = static_cast<int64_t>(size);
      }
    } else if (policy != "stretch") {
      return "keep_aspect_ratio_policy '" + escapeName(policy) +
             "' is not one of ONNX's";
    }
  }
  if (scale[0] != 1 || scale[1] != 1 || (out[0] != x[0] && x[0] > 0) ||
      out[1] != x[1])
    return "it resizes the batch or channel axis (only height and width are "
           "resized)";
  if (out[2] < 1 || out[3] < 1 || out[2] > (int64_t(1) << 24) ||
      out[3] > (int64_t(1) << 24))
    return "output size " + std::to_string(out[2]) + " x " +
           std::to_string(out[3]) + " is not between 1 and 2^24";
  if ((g.linear || g.cubic) && !legacy && a.getInt("antialias") != 0 &&
      (scale[2] < 1 || scale[3] < 1))
    return std::string("antialias=1 on a downsampling ") +
           (g.linear ? "linear" : "cubic") + " resize is not supported";
  if (legacy && !g.linear) {
    if ((scale[2] < 1) != (scale[3] < 1))
      return "it upsamples one axis and downsamples the other, which opset " +
             std::to_string(opset) +
             " rounds differently (give opset 11 or "
             "later's nearest_mode)";
    g.rounding = scale[2] < 1 ? NearestRounding::Ceil : NearestRounding::Floor;
  }
  g.outH = out[2];
  g.outW = out[3];
  g.scaleH = static_cast<float>(scale[2]);
  g.scaleW = static_cast<float>(scale[3]);
  return "";
}

std::string transposeGeometry(const Node& n, int64_t opset,
                              const std::vector<int64_t>& x,
                              const std::vector<int64_t>& w,
                              TransposeGeometry& g) {
  OpAttrs a(n, opset);
  if (x.size() != 4 || w.size() != 4)
    return "input " + formatShape(x) + " and filter " + formatShape(w) +
           " are not those of a 2-D transposed convolution (4-D both)";
  g.groups = a.getInt("group");
  if (g.groups < 1 || x[1] != w[0] || x[1] % g.groups != 0)
    return "filter " + formatShape(w) + " does not fit " +
           std::to_string(x[1]) + " input channels in " +
           std::to_string(g.groups) + " groups";
  std::vector<int64_t> kernel = a.getInts("kernel_shape");
  if (kernel.empty())
    kernel = {w[2], w[3]};
  const std::vector<int64_t> strides = a.getInts("strides"),
                             dil = a.getInts("dilations"),
                             outPad = a.getInts("output_padding"),
                             pads = a.getInts("pads");
  std::vector<int64_t> outShape = a.getInts("output_shape");
  if (outShape.size() == 4)
    outShape.erase(outShape.begin(), outShape.begin() + 2);
  if (kernel != std::vector<int64_t>{w[2], w[3]} || strides.size() != 2 ||
      dil.size() != 2 || outPad.size() != 2 || pads.size() != 4 ||
      (!outShape.empty() && outShape.size() != 2))
    return "kernel_shape " + formatInts(kernel) + ", strides " +
           formatInts(strides) + ", dilations " + formatInts(dil) +
           ", output_padding " + formatInts(outPad) + ", pads " +
           formatInts(pads) + " or output_shape " + formatInts(outShape) +
           " do not describe this 2-D filter " + formatShape(w);
  for (int64_t v : {strides[0], strides[1], dil[0], dil[1]})
    if (v < 1)
      return "strides and dilations must be positive";
  for (size_t i = 0; i < 2; ++i)
    if (outPad[i] < 0 || outPad[i] >= std::max(strides[i], dil[i]))
      return "output_padding " + formatInts(outPad) +
             " must be below the stride or the dilation";
  const std::string autoPad = a.getString("auto_pad");
  int64_t begin[2], end[2];
  for (size_t i = 0; i < 2; ++i) {
    const int64_t in = x[2 + i];
    const int64_t full =
        strides[i] * (in - 1) + outPad[i] + (kernel[i] - 1) * dil[i] + 1;
    if (!outShape.empty() || autoPad == "SAME_UPPER" ||
        autoPad == "SAME_LOWER") {
      const int64_t want = outShape.empty() ? in * strides[i] : outShape[i];
      const int64_t total = full - want;
      const bool upper = autoPad == "SAME_UPPER";
      // A larger output_shape than the scatter covers: zeros after it
      // (a negative end pad), as ONNX's reference computes it.
      begin[i] = total < 0 ? 0 : upper ? total / 2 : total - total / 2;
      end[i] = total - begin[i];
    } else if (autoPad == "VALID") {
      begin[i] = end[i] = 0;
    } else {
      begin[i] = pads[i];
      end[i] = pads[i + 2];
    }
    if (begin[i] < 0 || (end[i] < 0 && outShape.empty()))
      return "pads " + formatInts(pads) + " must not be negative";
  }
  g.strideH = strides[0];
  g.strideW = strides[1];
  g.dilH = dil[0];
  g.dilW = dil[1];
  g.padTop = begin[0];
  g.padLeft = begin[1];
  g.padBottom = end[0] - outPad[0];
  g.padRight = end[1] - outPad[1];
  g.outH = strides[0] * (x[2] - 1) + outPad[0] + (kernel[0] - 1) * dil[0] + 1 -
           begin[0] - end[0];
  g.outW = strides[1] * (x[3] - 1) + outPad[1] + (kernel[1] - 1) * dil[1] + 1 -
           begin[1] - end[1];
  if (g.outH < 1 || g.outW < 1)
    return "the pads leave an output of " + std::to_string(g.outH) + " x " +
           std::to_string(g.outW);
  return "";
}

} // namespace hpvm::fe
