// Ops.cpp - the tensor intrinsics and HPVM's direct tensor calls: shape
// rules (reference section 2), FLOP counts, and eager execution of single
// ops on the kernels.
#include "Core.h"
#include "Executor.h"
#include "base/Errors.h"
#include "hpvm.h"
#include "hpvm_rt/Resize.h"
#include "kernels/Kernels.h"
#include "tensor_runtime.h"

#include <cmath>
#include <cstdarg>

namespace hpvm::rt {

ConvArgs convArgs(HpvmOp op, const double* s) {
  return convArgsOf(s, op == HpvmOp::GroupConv     ? ConvScalars::Grouped
                       : op == HpvmOp::DilatedConv ? ConvScalars::Dilated
                                                   : ConvScalars::Plain);
}

PoolArgs poolArgs(HpvmOp op, const double* s) {
  const bool max = op == HpvmOp::MaxPool || op == HpvmOp::MaxPoolPads;
  return poolArgsOf(s, max ? PoolArgs::Max : PoolArgs::Avg,
                    op == HpvmOp::MaxPoolPads || op == HpvmOp::AvgPoolPads);
}

namespace {

/// Output extent of a window of \p k with padding \p p before and \p q
/// after and stride \p s over \p n; throws UserError if the geometry is
/// invalid (for a \p pool also a pad as large as the window, which would
/// leave a window with no input).
template <class Where>
int64_t windowExtent(int64_t n, int64_t k, int64_t p, int64_t q, int64_t s,
                     bool pool, const char* axis, const Where& where) {
  auto padText = [&] {
    return p == q
               ? std::to_string(p)
               : std::to_string(p) + " before, " + std::to_string(q) + " after";
  };
  if (k < 1 || s < 1 || p < 0 || q < 0)
    throw UserError(where() + ": bad " + axis + " geometry: window " +
                    std::to_string(k) + ", padding " + padText() + ", stride " +
                    std::to_string(s) +
                    " (window and stride must be >= 1, padding >= 0)");
  if (n + p + q < k)
    throw UserError(where() + ": " + axis + " window " + std::to_string(k) +
                    " is larger than the padded input extent " +
                    std::to_string(n + p + q));
  if (pool && (p >= k || q >= k))
    throw UserError(where() + ": " + axis + " padding " + padText() +
                    " is not smaller than the window " + std::to_string(k) +
                    " (a window would see padding only)");
  return 1 + (n + p + q - k) / s;
}

bool isInPlace(HpvmOp op) { return opInfo(op).facts->inPlace; }

/// Checks that operands 2 .. \p n of \p what hold one element per channel
/// of operand 1.
template <class Where>
void checkPerChannel(const Shape* in, int n, const char* what,
                     const Where& where) {
  const Shape& x = in[0];
  for (int i = 1; i < n; ++i)
    if (numElements(in[i]) != x[1])
      throw UserError(where() + ": " + what + " operand " +
                      std::to_string(i + 1) + " has shape " + shapeText(in[i]) +
                      "; expected " + std::to_string(x[1]) +
                      " elements (one per channel of " + shapeText(x) + ")");
}

} // namespace

Shape inferShape(HpvmOp op, const Shape* in, int numIn, const double* s,
                 const char* api, const std::string* node) {
  auto where = [&] {
    return node ? "node " + *node + ": " + api : std::string(api);
  };
  const Shape& x = in[0];
  switch (op) {
  case HpvmOp::Conv:
  case HpvmOp::GroupConv:
  case HpvmOp::DilatedConv: {
    const Shape& w = in[1];
    ConvArgs a = convArgs(op, s);
    if (a.groups < 1)
      throw UserError(where() + ": group count " + std::to_string(a.groups) +
                      " must be >= 1");
    if (a.dilH < 1 || a.dilW < 1)
      throw UserError(where() + ": dilations " + std::to_string(a.dilH) + ", " +
                      std::to_string(a.dilW) + " must be >= 1");
    if (w[1] * a.groups != x[1] || w[0] % a.groups != 0)
      throw UserError(
          where() + ": input " + shapeText(x) + " does not fit filter " +
          shapeText(w) + " with " + std::to_string(a.groups) +
          " group(s) (need input channels = filter dim 1 x groups and "
          "filter dim 0 divisible by groups)");
    return {x[0], w[0],
            windowExtent(x[2], a.spanH(w[2]), a.padH, a.padH, a.strideH, false,
                         "vertical", where),
            windowExtent(x[3], a.spanW(w[3]), a.padW, a.padW, a.strideW, false,
                         "horizontal", where)};
  }
  case HpvmOp::ConvTranspose: {
    const Shape& w = in[1];
    const TransposeArgs a = transposeArgsOf(s);
    if (a.groups < 1 || a.strideH < 1 || a.strideW < 1 || a.dilH < 1 ||
        a.dilW < 1 || a.padTop < 0 || a.padLeft < 0)
      throw UserError(where() + ": groups " + std::to_string(a.groups) +
                      ", strides, dilations (>= 1) or top/left pads (>= 0) "
                      "out of range");
    if (w[0] != x[1] || x[1] % a.groups != 0)
      throw UserError(where() + ": input " + shapeText(x) +
                      " does not fit filter " + shapeText(w) + " with " +
                      std::to_string(a.groups) +
                      " group(s) (need input channels = filter dim 0, "
                      "divisible by groups)");
    const int64_t h = a.outH(x[2], w[2]), wo = a.outW(x[3], w[3]);
    if (h < 1 || wo < 1)
      throw UserError(where() + ": pads leave an output of " +
                      std::to_string(h) + " x " + std::to_string(wo));
    return {x[0], w[1] * a.groups, h, wo};
  }
  case HpvmOp::Mul: {
    const Shape& w = in[1];
    int64_t k = x[1] * x[2] * x[3];
    if (w[0] * w[1] != 1 || w[2] != k)
      throw UserError(where() + ": input " + shapeText(x) + " (" +
                      std::to_string(k) + " features) does not fit weights " +
                      shapeText(w) + " (expected 1x1x" + std::to_string(k) +
                      "xN)");
    return {x[0], w[3], 1, 1};
  }
  case HpvmOp::Add:
    if (addForm(x, in[1]) == AddForm::None)
      throw UserError(where() + ": cannot add " + shapeText(in[1]) + " to " +
                      shapeText(x) +
                      " (need the same element count, one element per "
                      "channel, or each dim the same or 1)");
    return x;
  case HpvmOp::Multiply:
    if (!broadcastsTo(in[1], x))
      throw UserError(where() + ": cannot multiply " + shapeText(x) + " by " +
                      shapeText(in[1]) +
                      " (need each dim of the second the same or 1)");
    return x;
  case HpvmOp::Sub:
  case HpvmOp::Div:
  case HpvmOp::Maximum:
  case HpvmOp::Minimum: {
    const Shape& b = in[1];
    bool fits = true;
    for (int d = 0; d < 4; ++d)
      fits = fits && (b[d] == x[d] || b[d] == 1);
    if (!fits)
      throw UserError(where() + ": cannot combine " + shapeText(x) + " with " +
                      shapeText(b) +
                      " (need each dim of the second the same or 1)");
    return x;
  }
  case HpvmOp::Pow:
    if (!std::isfinite(s[0]))
      throw UserError(where() + ": exponent " + std::to_string(s[0]) +
                      " must be finite");
    return x;
  case HpvmOp::Sqrt:
  case HpvmOp::QuantizeDynamic:
    return x;
  case HpvmOp::BatchNorm:
    checkPerChannel(in, 5, "batch norm", where);
    return x;
  case HpvmOp::MaxPool:
  case HpvmOp::AvgPool:
  case HpvmOp::MaxPoolPads:
  case HpvmOp::AvgPoolPads: {
    PoolArgs a = poolArgs(op, s);
    return {x[0], x[1],
            windowExtent(x[2], a.kh, a.padH, a.bottom(), a.strideH, true,
                         "vertical", where),
            windowExtent(x[3], a.kw, a.padW, a.right(), a.strideW, true,
                         "horizontal", where)};
  }
  case HpvmOp::ClippedRelu:
    if (!(s[0] <= s[1]))
      throw UserError(where() + ": clip bounds [" + std::to_string(s[0]) +
                      ", " + std::to_string(s[1]) + "] are empty");
    return x;
  case HpvmOp::HardSigmoid:
    if (!std::isfinite(s[0]) || !std::isfinite(s[1]))
      throw UserError(where() + ": hard sigmoid alpha " + std::to_string(s[0]) +
                      " and beta " + std::to_string(s[1]) + " must be finite");
    return x;
  case HpvmOp::Quantize: {
    auto whole = [](double v) {
      return std::isfinite(v) && v == std::floor(v);
    };
    if (!(s[0] > 0 && std::isfinite(s[0])))
      throw UserError(where() + ": quantize scale " + std::to_string(s[0]) +
                      " must be finite and > 0");
    if (!whole(s[1]) || !whole(s[2]) || !whole(s[3]) || s[2] > s[1] ||
        s[1] > s[3])
      throw UserError(where() + ": quantize zero point " +
                      std::to_string(s[1]) + " must be an integer within " +
                      "the integer range " + std::to_string(s[2]) + " .. " +
                      std::to_string(s[3]));
    return x;
  }
  case HpvmOp::LeakyRelu:
    if (!std::isfinite(s[0]))
      throw UserError(where() + ": leaky relu alpha " + std::to_string(s[0]) +
                      " must be finite");
    return x;
  case HpvmOp::Relu:
  case HpvmOp::Tanh:
  case HpvmOp::Sigmoid:
  case HpvmOp::HardSwish:
  case HpvmOp::Gelu:
  case HpvmOp::Silu:
  case HpvmOp::Softmax:
    return x;
  case HpvmOp::ChannelSoftmax:
    if (s[0] != 0 && s[0] != 1)
      throw UserError(where() + ": channel softmax log flag " +
                      std::to_string(s[0]) + " must be 0 or 1");
    return x;
  case HpvmOp::GroupSoftmax: {
    const int64_t groups = int64_t(s[0]);
    if (groups < 1 || x[1] % groups != 0)
      throw UserError(where() + ": " + std::to_string(x[1]) +
                      " channels cannot be split into " +
                      std::to_string(groups) +
                      " softmax groups (need a group count >= 1 that divides "
                      "them)");
    return x;
  }
  case HpvmOp::LayerNorm:
    checkPerChannel(in, 3, "layer norm", where);
    if (!(s[0] >= 0))
      throw UserError(where() + ": layer norm epsilon " + std::to_string(s[0]) +
                      " must be >= 0");
    return x;
  case HpvmOp::ChannelSlice: {
    const int64_t begin = int64_t(s[0]), end = int64_t(s[1]);
    if (begin < 0 || end <= begin || end > x[1])
      throw UserError(
          where() + ": channels " + std::to_string(begin) + " .. " +
          std::to_string(end - 1) + " are not within " + shapeText(x) +
          " (need 0 <= begin < end <= " + std::to_string(x[1]) + ")");
    return {x[0], end - begin, x[2], x[3]};
  }
  case HpvmOp::ChannelShuffle: {
    const int64_t groups = int64_t(s[0]);
    if (groups < 1 || x[1] % groups != 0)
      throw UserError(where() + ": " + std::to_string(x[1]) +
                      " channels cannot be shuffled in " +
                      std::to_string(groups) +
                      " groups (need a group count >= 1 that divides them)");
    return x;
  }
  case HpvmOp::ChannelsLast:
    return {x[0], x[2], x[3], x[1]};
  case HpvmOp::ChannelsFirst:
    return {x[0], x[3], x[1], x[2]};
  case HpvmOp::Reshape: {
    if (!(s[0] >= 1 && s[1] >= 1 && s[2] >= 1 &&
          s[0] * s[1] * s[2] == double(x[1] * x[2] * x[3])))
      throw UserError(where() + ": " + std::to_string(s[0]) + " x " +
                      std::to_string(s[1]) + " x " + std::to_string(s[2]) +
                      " does not hold the " +
                      std::to_string(x[1] * x[2] * x[3]) +
                      " values of each image of " + shapeText(x));
    return {x[0], int64_t(s[0]), int64_t(s[1]), int64_t(s[2])};
  }
  case HpvmOp::TokenTranspose: {
    if (!(s[0] >= 1 && s[1] >= 1 && s[0] * s[1] == double(x[1])))
      throw UserError(where() + ": " + std::to_string(s[0]) + " x " +
                      std::to_string(s[1]) + " tokens do not hold the " +
                      std::to_string(x[1]) + " channels of " + shapeText(x));
    return {x[0], x[2] * x[3], int64_t(s[0]), int64_t(s[1])};
  }
  case HpvmOp::TokenMatMul: {
    // a: N x K x h x w (h*w tokens of K features); b: N x M x hb x wb
    // (K tokens of M features).
    const Shape& b = in[1];
    if (b.size() != 4 || b[0] != x[0] || b[2] * b[3] != x[1])
      throw UserError(where() + ": the tokens of " + shapeText(x) + " have " +
                      std::to_string(x[1]) +
                      " features, and cannot be multiplied by " + shapeText(b) +
                      " (need the same batch and " + std::to_string(x[1]) +
                      " of its tokens)");
    return {x[0], b[1], x[2], x[3]};
  }
  case HpvmOp::ClassToken: {
    const int64_t tokens = 1 + x[2] * x[3];
    if (numElements(in[1]) != x[1] || numElements(in[2]) != x[1] * tokens)
      throw UserError(where() + ": class token " + shapeText(in[1]) +
                      " and position embedding " + shapeText(in[2]) +
                      " do not fit " + shapeText(x) + " (need " +
                      std::to_string(x[1]) + " and " + std::to_string(x[1]) +
                      " x " + std::to_string(tokens) + " elements)");
    return {x[0], x[1], tokens, 1};
  }
  case HpvmOp::Attention: {
    const int64_t heads = int64_t(s[0]);
    if (heads < 1 || x[1] % (3 * heads) != 0)
      throw UserError(where() + ": " + shapeText(x) +
                      " is not queries, keys and values of " +
                      std::to_string(heads) +
                      " head(s) (need channels divisible by 3 x heads)");
    return {x[0], x[1] / 3, x[2], x[3]};
  }
  case HpvmOp::WindowAttention: {
    const int64_t wh = int64_t(s[0]), ww = int64_t(s[1]), heads = int64_t(s[2]),
                  sh = int64_t(s[3]), sw = int64_t(s[4]);
    if (heads < 1 || x[1] % (3 * heads) != 0)
      throw UserError(where() + ": " + shapeText(x) +
                      " is not queries, keys and values of " +
                      std::to_string(heads) +
                      " head(s) (need channels divisible by 3 x heads)");
    if (wh < 1 || ww < 1 || x[2] % wh != 0 || x[3] % ww != 0)
      throw UserError(where() + ": windows of " + std::to_string(wh) + " x " +
                      std::to_string(ww) + " do not tile " + shapeText(x) +
                      " (need window sizes >= 1 that divide the height and "
                      "width)");
    if (sh < 0 || sh >= x[2] || sw < 0 || sw >= x[3])
      throw UserError(where() + ": shift " + std::to_string(sh) + ", " +
                      std::to_string(sw) + " is not within " + shapeText(x) +
                      " (need 0 <= shift < height, width)");
    const int64_t T = wh * ww, windows = (x[2] / wh) * (x[3] / ww);
    const int64_t masks = numElements(in[2]) / (T * T);
    if (numElements(in[1]) != heads * T * T ||
        numElements(in[2]) != masks * T * T || (masks != 1 && masks != windows))
      throw UserError(
          where() + ": bias " + shapeText(in[1]) + " and mask " +
          shapeText(in[2]) + " do not fit " + std::to_string(heads) +
          " head(s) of " + std::to_string(windows) + " window(s) of " +
          std::to_string(T) + " tokens (need " + std::to_string(heads) + " x " +
          std::to_string(T) + " x " + std::to_string(T) + ", and 1 or " +
          std::to_string(windows) + " x " + std::to_string(T) + " x " +
          std::to_string(T) + " elements)");
    return {x[0], x[1] / 3, x[2], x[3]};
  }
  case HpvmOp::Pad: {
    for (int i = 0; i < 4; ++i)
      if (!(s[i] >= 0 && s[i] <= 1e9 && s[i] == std::floor(s[i])))
        throw UserError(where() + ": pad " + std::to_string(s[i]) +
                        " is not a whole number >= 0");
    if (!std::isfinite(s[4]))
      throw UserError(where() + ": padding value " + std::to_string(s[4]) +
                      " must be finite");
    return {x[0], x[1], x[2] + int64_t(s[0]) + int64_t(s[2]),
            x[3] + int64_t(s[1]) + int64_t(s[3])};
  }
  case HpvmOp::SpatialSlice: {
    const int64_t bh = int64_t(s[0]), bw = int64_t(s[1]), th = int64_t(s[2]),
                  tw = int64_t(s[3]), nh = int64_t(s[4]), nw = int64_t(s[5]);
    if (bh < 0 || bw < 0 || th < 1 || tw < 1 || nh < 1 || nw < 1 ||
        bh + (nh - 1) * th >= x[2] || bw + (nw - 1) * tw >= x[3])
      throw UserError(
          where() + ": " + std::to_string(nh) + " x " + std::to_string(nw) +
          " pixels from " + std::to_string(bh) + ", " + std::to_string(bw) +
          " in steps of " + std::to_string(th) + ", " + std::to_string(tw) +
          " are not within " + shapeText(x) +
          " (need begins >= 0, steps and sizes >= 1, the last pixel inside)");
    return {x[0], x[1], nh, nw};
  }
  case HpvmOp::ResizeNearest:
  case HpvmOp::ResizeLinear:
  case HpvmOp::ResizeCubic:
  case HpvmOp::ResizeNearestCrop:
  case HpvmOp::ResizeLinearCrop:
  case HpvmOp::ResizeCubicCrop: {
    auto whole = [](double v, double lo, double hi) {
      return v >= lo && v <= hi && v == std::floor(v);
    };
    const bool crop = op == HpvmOp::ResizeNearestCrop ||
                      op == HpvmOp::ResizeLinearCrop ||
                      op == HpvmOp::ResizeCubicCrop;
    // The mode's own scalars: the rounding, or the cubic coefficient and
    // exclude_outside.
    const int extra = crop ? 7 : 5;
    if (!whole(s[0], 1, 1e9) || !whole(s[1], 1, 1e9))
      throw UserError(where() + ": output size " + std::to_string(s[0]) +
                      " x " + std::to_string(s[1]) +
                      " is not two whole numbers >= 1");
    if (crop) {
      for (int i = 2; i < 6; ++i)
        if (!(std::fabs(s[i]) <= 1e6))
          throw UserError(where() + ": region " + std::to_string(s[2]) + ", " +
                          std::to_string(s[3]) + ", " + std::to_string(s[4]) +
                          ", " + std::to_string(s[5]) +
                          " must be finite fractions of at most 1e6");
      if (!std::isfinite(s[6]))
        throw UserError(where() + ": extrapolation value " +
                        std::to_string(s[6]) + " must be finite");
    } else {
      if (!(s[2] > 0 && s[3] > 0 && std::isfinite(s[2]) && std::isfinite(s[3])))
        throw UserError(where() + ": scales " + std::to_string(s[2]) + ", " +
                        std::to_string(s[3]) + " must be finite and > 0");
      // (tf_crop_and_resize is the crop rows'.)
      const double coords = double(ResizeCoord::TfCropAndResize) - 1;
      if (!whole(s[4], 0, coords))
        throw UserError(where() + ": coordinate mode " + std::to_string(s[4]) +
                        " is not one of hpvm_rt/Resize.h's (tf_crop_and_"
                        "resize is the *_crop rows')");
    }
    const double roundings = std::size(kNearestRoundingNames) - 1;
    if ((op == HpvmOp::ResizeNearest || op == HpvmOp::ResizeNearestCrop) &&
        !whole(s[extra], 0, roundings))
      throw UserError(where() + ": rounding " + std::to_string(s[extra]) +
                      " is not one of hpvm_rt/Resize.h's");
    if ((op == HpvmOp::ResizeCubic || op == HpvmOp::ResizeCubicCrop) &&
        (!std::isfinite(s[extra]) || (s[extra + 1] != 0 && s[extra + 1] != 1)))
      throw UserError(where() + ": cubic coefficient " +
                      std::to_string(s[extra]) +
                      " must be finite and exclude_outside " +
                      std::to_string(s[extra + 1]) + " 0 or 1");
    return {x[0], x[1], int64_t(s[0]), int64_t(s[1])};
  }
  case HpvmOp::SelectToken: {
    const int64_t index = int64_t(s[0]);
    if (index < 0 || index >= x[2] * x[3])
      throw UserError(where() + ": token " + std::to_string(index) +
                      " is not within the " + std::to_string(x[2] * x[3]) +
                      " tokens of " + shapeText(x));
    return {x[0], x[1], 1, 1};
  }
  case HpvmOp::Concat: {
    Shape out = x;
    for (int i = 1; i < numIn; ++i) {
      const Shape& y = in[i];
      if (y[0] != x[0] || y[2] != x[2] || y[3] != x[3])
        throw UserError(where() + ": cannot concatenate " + shapeText(y) +
                        " (operand " + std::to_string(i + 1) + ") to " +
                        shapeText(x) +
                        " along the channels (need the same batch, height "
                        "and width)");
      out[1] += y[1];
    }
    return out;
  }
  case HpvmOp::ConcatWidth: {
    Shape out = x;
    for (int i = 1; i < numIn; ++i) {
      const Shape& y = in[i];
      if (y[0] != x[0] || y[1] != x[1] || y[2] != x[2])
        throw UserError(where() + ": cannot concatenate " + shapeText(y) +
                        " (operand " + std::to_string(i + 1) + ") to " +
                        shapeText(x) +
                        " along the width (need the same batch, channels "
                        "and height)");
      out[3] += y[3];
    }
    return out;
  }
  }
  return x;
}

double opFlops(HpvmOp op, const Shape* in, const Shape& out, const double* s) {
  const OpFacts& f = *opInfo(op).facts;
  return opFlopsOf(f, double(numElements(out)), in[0].data(),
                   f.tensorArgs > 1 ? in[1].data() : nullptr, s);
}

bool fusesActivation(HpvmOp op) {
  return op == HpvmOp::Add || op == HpvmOp::Multiply || op == HpvmOp::BatchNorm;
}

void runSingleOp(HpvmOp op, const OpCall& call) {
  HPVM_ASSERT(call.post.act == Act::None || fusesActivation(op),
              "an activation fused into an op whose kernel has none");
  switch (op) {
#define HPVM_OP(Kind, ...)                                                     \
  case HpvmOp::Kind:                                                           \
    run##Kind(call);                                                           \
    return;
#include "hpvm_rt/Ops.def"
  }
}

/// Eager execution (outside a launch): HPVM's semantics, in-place ops
/// write into their first operand and return it.
void* eagerOp(HpvmOp op, const char* api, int numTensors, void* const* tensors,
              const double* scalars) {
  Tensor* in[kMaxTensorArgs] = {};
  Shape shapes[kMaxTensorArgs];
  for (int i = 0; i < numTensors; ++i) {
    if (!tensors[i])
      throw UserError(std::string(api) + ": tensor operand " +
                      std::to_string(i + 1) + " is NULL");
    in[i] = static_cast<Tensor*>(tensors[i]);
    shapes[i] = shapeOf(in[i]);
  }
  Shape outShape = inferShape(op, shapes, numTensors, scalars, api, nullptr);
  Tensor* out = isInPlace(op) ? in[0] : newTensor(outShape, 4, true);
  runSingleOp(op, OpCall{in, numTensors, scalars, PostAct{}, exactKnob(), out});
  return out;
}

/// tensorOp for HPVM's direct calls, whose operand count is their array's.
template <size_t N>
void* directOp(HpvmOp op, const char* api, void* const (&tensors)[N],
               const double* scalars) {
  return tensorOp(op, api, static_cast<int>(N), tensors, scalars);
}

} // namespace hpvm::rt

using hpvm::rt::HpvmOp;

// --- Intrinsics, expanded from Ops.def --------------------------------------

// Parameters of an intrinsic with TensorArgs tensors, and the statements
// that gather them into `tensors[numTensors]`.
#define HPVM_RT_TPARAMS_1 void* t0
#define HPVM_RT_TPARAMS_2 void *t0, void *t1
#define HPVM_RT_TPARAMS_3 void *t0, void *t1, void *t2
#define HPVM_RT_TPARAMS_5 void *t0, void *t1, void *t2, void *t3, void *t4
#define HPVM_RT_TPARAMS_N int n, ...
#define HPVM_RT_TGATHER_1                                                      \
  void* const tensors[] = {t0};                                                \
  const int numTensors = 1;
#define HPVM_RT_TGATHER_2                                                      \
  void* const tensors[] = {t0, t1};                                            \
  const int numTensors = 2;
#define HPVM_RT_TGATHER_3                                                      \
  void* const tensors[] = {t0, t1, t2};                                        \
  const int numTensors = 3;
#define HPVM_RT_TGATHER_5                                                      \
  void* const tensors[] = {t0, t1, t2, t3, t4};                                \
  const int numTensors = 5;
#define HPVM_RT_TGATHER_N                                                      \
  void* tensors[hpvm::rt::kMaxTensorArgs] = {};                                \
  const int numTensors = n;                                                    \
  {                                                                            \
    va_list ap;                                                                \
    va_start(ap, n);                                                           \
    for (int i = 0; i < n && i < hpvm::rt::kMaxTensorArgs; ++i)                \
      tensors[i] = va_arg(ap, void*);                                          \
    va_end(ap);                                                                \
  }
#define HPVM_RT_SPARAMS_0(T)
#define HPVM_RT_SPARAMS_1(T) , T s0
#define HPVM_RT_SPARAMS_2(T) , T s0, T s1
#define HPVM_RT_SPARAMS_3(T) , T s0, T s1, T s2
#define HPVM_RT_SPARAMS_4(T) , T s0, T s1, T s2, T s3
#define HPVM_RT_SPARAMS_5(T) , T s0, T s1, T s2, T s3, T s4
#define HPVM_RT_SPARAMS_6(T) , T s0, T s1, T s2, T s3, T s4, T s5
#define HPVM_RT_SPARAMS_7(T) , T s0, T s1, T s2, T s3, T s4, T s5, T s6
#define HPVM_RT_SPARAMS_8(T) , T s0, T s1, T s2, T s3, T s4, T s5, T s6, T s7
#define HPVM_RT_SPARAMS_9(T)                                                   \
  , T s0, T s1, T s2, T s3, T s4, T s5, T s6, T s7, T s8
#define HPVM_RT_SLIST_0 0.0
#define HPVM_RT_SLIST_1 double(s0)
#define HPVM_RT_SLIST_2 double(s0), double(s1)
#define HPVM_RT_SLIST_3 double(s0), double(s1), double(s2)
#define HPVM_RT_SLIST_4 double(s0), double(s1), double(s2), double(s3)
#define HPVM_RT_SLIST_5                                                        \
  double(s0), double(s1), double(s2), double(s3), double(s4)
#define HPVM_RT_SLIST_6                                                        \
  double(s0), double(s1), double(s2), double(s3), double(s4), double(s5)
#define HPVM_RT_SLIST_7                                                        \
  double(s0), double(s1), double(s2), double(s3), double(s4), double(s5),      \
      double(s6)
#define HPVM_RT_SLIST_8                                                        \
  double(s0), double(s1), double(s2), double(s3), double(s4), double(s5),      \
      double(s6), double(s7)
#define HPVM_RT_SLIST_9                                                        \
  double(s0), double(s1), double(s2), double(s3), double(s4), double(s5),      \
      double(s6), double(s7), double(s8)

extern "C" {
#define HPVM_OP(Kind, ConfName, JsonType, Intrinsic, RtCall, TensorArgs,       \
                ScalarArgs, Knobs, FlopsPerElem, FlopsPerReduce, Fuse, Act,    \
                InPlace, ReduceOver, Scalar, Hpvm, ScalarNames, Batch)         \
  void* Intrinsic(                                                             \
      HPVM_RT_TPARAMS_##TensorArgs HPVM_RT_SPARAMS_##ScalarArgs(Scalar)) {     \
    HPVM_RT_TGATHER_##TensorArgs const double scalars[] = {                    \
        HPVM_RT_SLIST_##ScalarArgs};                                           \
    return hpvm::rt::tensorOp(HpvmOp::Kind, #Intrinsic, numTensors, tensors,   \
                              scalars);                                        \
  }
#include "hpvm_rt/Ops.def"

// --- HPVM's direct calls ----------------------------------------------------

void* tensorConvolution(void* input, void* filter, int vertical_pad,
                        int horizontal_pad, int vertical_stride,
                        int horizontal_stride, int conv_mode, int conv_groups) {
  void* const tensors[] = {input, filter};
  const double scalars[] = {double(vertical_pad),    double(horizontal_pad),
                            double(vertical_stride), double(horizontal_stride),
                            double(conv_mode),       double(conv_groups)};
  return hpvm::rt::directOp(conv_groups > 1 ? HpvmOp::GroupConv : HpvmOp::Conv,
                            "tensorConvolution", tensors, scalars);
}

void* tensorPooling(void* input, int poolFunction, int window_height,
                    int window_width, int vertical_pad, int horizontal_pad,
                    int vertical_stride, int horizontal_stride) {
  if (poolFunction != 0 && poolFunction != 1)
    throw hpvm::rt::UserError(
        "tensorPooling: pool function " + std::to_string(poolFunction) +
        " is not supported (0 = max, 1 = mean; HPVM has no "
        "kernel for min pooling)");
  void* const tensors[] = {input};
  const double scalars[] = {double(window_height),   double(window_width),
                            double(vertical_pad),    double(horizontal_pad),
                            double(vertical_stride), double(horizontal_stride)};
  return hpvm::rt::directOp(poolFunction == 0 ? HpvmOp::MaxPool
                                              : HpvmOp::AvgPool,
                            "tensorPooling", tensors, scalars);
}

void* tensorGemmGPU(void* lhs, void* rhs) {
  void* const tensors[] = {lhs, rhs};
  const double scalars[] = {0.0};
  return hpvm::rt::directOp(HpvmOp::Mul, "tensorGemmGPU", tensors, scalars);
}

void* tensorGemmCPU(void* lhs, void* rhs) {
  void* const tensors[] = {lhs, rhs};
  const double scalars[] = {0.0};
  return hpvm::rt::directOp(HpvmOp::Mul, "tensorGemmCPU", tensors, scalars);
}

void* tensorAdd(void* x, void* bias) {
  void* const tensors[] = {x, bias};
  const double scalars[] = {0.0};
  return hpvm::rt::directOp(HpvmOp::Add, "tensorAdd", tensors, scalars);
}

void* tensorRelu(void* x) {
  void* const tensors[] = {x};
  const double scalars[] = {0.0};
  return hpvm::rt::directOp(HpvmOp::Relu, "tensorRelu", tensors, scalars);
}

void* tensorRelu2(void* x, float min, float max) {
  void* const tensors[] = {x};
  const double scalars[] = {double(min), double(max)};
  return hpvm::rt::directOp(HpvmOp::ClippedRelu, "tensorRelu2", tensors,
                            scalars);
}

void* tensorTanh(void* x) {
  void* const tensors[] = {x};
  const double scalars[] = {0.0};
  return hpvm::rt::directOp(HpvmOp::Tanh, "tensorTanh", tensors, scalars);
}

void* tensorSoftmax(void* x) {
  void* const tensors[] = {x};
  const double scalars[] = {0.0};
  return hpvm::rt::directOp(HpvmOp::Softmax, "tensorSoftmax", tensors, scalars);
}

void* tensorBatchNorm(void* x, void* scale, void* bias, void* mean,
                      void* variance, double epsilon) {
  void* const tensors[] = {x, scale, bias, mean, variance};
  const double scalars[] = {epsilon};
  return hpvm::rt::directOp(HpvmOp::BatchNorm, "tensorBatchNorm", tensors,
                            scalars);
}

} // extern "C"
