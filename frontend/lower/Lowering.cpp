// Lowering.cpp - turns each ONNX-level node into HPVM tensor ops, with the
// operand conventions of HPVM's intrinsics (reference section 2).
#include "lower/Lowering.h"

#include "ir/OpTable.h"
#include "ir/Printer.h"
#include "onnx/Attributes.h"
#include "onnx/OpAttrs.h"
#include "passes/OpGeometry.h"
#include "support/Diagnostics.h"
#include "support/InputFile.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

namespace hpvm::fe {

namespace {

/// State of one lowering run.
struct Lowering {
  explicit Lowering(Graph& graph) : g(graph) {}

  Graph& g;
  /// Constants already converted to a 4-D float32 form, by (data, shape).
  std::map<std::pair<const TensorData*, std::vector<int64_t>>, Value*> cache;

  /// Position of \p n in the node list.
  int position(const Node* n) const { return g.position(n); }

  /// \p c as a float32 constant of HPVM shape \p shape (same element
  /// count), sharing its bytes when it already is float32.
  Value* constantAs(Value* c, std::vector<int64_t> shape) {
    auto key = std::make_pair(c->constant.get(), shape);
    if (auto it = cache.find(key); it != cache.end())
      return it->second;
    Value* out;
    if (c->constant->dtype == DataType::Float) {
      out = g.addValue(c->name, DataType::Float, shape);
      out->constant = c->constant;
      out->initializerIndex = c->initializerIndex;
    } else {
      out = addFloats(c->name, c->constant->toFloats(), shape,
                      c->initializerIndex);
    }
    cache[key] = out;
    return out;
  }

  /// A new float32 constant holding \p values with shape \p shape.
  Value* addFloats(const std::string& name, const std::vector<float>& values,
                   std::vector<int64_t> shape, int initializerIndex) {
    auto t = std::make_shared<TensorData>();
    t->dtype = DataType::Float;
    t->dims = shape;
    const auto* bytes = reinterpret_cast<const uint8_t*>(values.data());
    t->bytes.assign(bytes, bytes + values.size() * sizeof(float));
    Value* v = g.addConstant(name, std::move(t), initializerIndex);
    v->shape = std::move(shape);
    return v;
  }

  /// Appends HPVM node \p kind at \p pos (advancing it), with output shape
  /// \p shape named \p name.
  Value* emit(OpKind kind, std::vector<Value*> inputs,
              std::vector<Scalar> scalars, std::vector<int64_t> shape,
              const std::string& name, const Node& from, int& pos) {
    Value* out = g.addValue(name, DataType::Float, std::move(shape));
    Node* n = g.addNode(kind, std::move(inputs), out, from.origins, pos++);
    n->scalars = std::move(scalars);
    return out;
  }

  /// Replaces ONNX node \p n by the HPVM value \p result.
  void finish(Node* n, Value* result) {
    // ONNX's dims, where it knows them (Flatten of a value it could not
    // infer: ?x1000), must be the lowering's.
    const std::vector<int64_t>& onnx = form4d(n->output->shape);
    bool same = onnx.size() == result->shape.size();
    for (size_t i = 0; same && i < onnx.size(); ++i)
      same = onnx[i] < 0 || onnx[i] == result->shape[i];
    HPVM_ASSERT(onnx.empty() || same,
                std::string(opKindName(n->kind)) + " lowered to shape " +
                    formatShape(result->shape) + ", ONNX infers " +
                    formatShape(n->output->shape));
    g.replaceAllUses(n->output, result);
    g.eraseNode(n);
  }
};

/// Checks that \p v is a 4-D activation (or, with \p allow2d, an (N, K)
/// one); returns the reason if not.
std::string needActivation(const Value* v, const char* role,
                           bool allow2d = false) {
  if (v->isConstant())
    return std::string(role) + " '" + escapeName(v->name) +
           "' is a constant; torch2hpvm needs it computed from the input";
  if (v->shape.empty())
    return std::string(role) + " '" + escapeName(v->name) +
           "' has an unknown shape (dynamic shapes are not supported)";
  if (v->shape.size() == 4 || (allow2d && v->shape.size() == 2))
    return "";
  return std::string(role) + " '" + escapeName(v->name) + "' has shape " +
         formatShape(v->shape) + "; only 4-D (N, C, H, W)" +
         (allow2d ? " or 2-D (N, K)" : "") + " tensors are supported";
}

std::string needConstant(const Value* v, const char* role) {
  if (v->isConstant())
    return "";
  return std::string(role) + " '" + escapeName(v->name) +
         "' is computed at run time by " + describeProducer(v) +
         "; only constant " + role + "s are supported";
}

/// Why \p a cannot be computed with HPVM's symmetric padding.
std::string asymmetricPads(const Axis& a, const char* axisName) {
  return std::string("asymmetric pads (") + axisName + " " +
         std::to_string(a.padBegin) + " before, " + std::to_string(a.padEnd) +
         " after) cannot be expressed with HPVM's symmetric padding";
}

// One lowering function lower<Lowering> per HPVM_ONNX row of Ops.def (its
// Lowering column), dispatched to by lowerNode(): a row without its
// function does not build. Each lowers ONNX-level node n into HPVM ops and
// returns why it cannot, or "".
#define HPVM_ONNX(OnnxName, MinOpset, Stem, Produces, IgnoredAttrs)            \
  std::string lower##Stem(Lowering& L, Node* n);
#include "hpvm_rt/Ops.def"

std::string lowerConv(Lowering& L, Node* n) {
  Value* x = n->inputs[0];
  if (auto r = needActivation(x, "input"); !r.empty())
    return r;
  if (n->inputs.size() < 2)
    return "Conv has no weight";
  Value* wv = n->inputs[1];
  if (auto r = needConstant(wv, "weight"); !r.empty())
    return r;
  const std::vector<int64_t>& w = wv->constant->dims;
  if (w.size() != 4)
    return "weight has shape " + formatShape(w) +
           "; only 2-D convolutions (4-D weights) are supported";
  OpAttrs attrs(*n, L.g.source.opset);
  std::vector<int64_t> kernel = attrs.getInts("kernel_shape");
  if (kernel.empty())
    kernel = {w[2], w[3]};
  if (kernel != std::vector<int64_t>{w[2], w[3]})
    return "kernel_shape " + formatInts(kernel) +
           " does not match the weight shape " + formatShape(w);
  int64_t group = attrs.getInt("group");
  int64_t C = x->shape[1], K = w[0];
  if (C % group != 0 || K % group != 0 || w[1] * group != C)
    return "weight shape " + formatShape(w) + " does not fit " +
           std::to_string(C) + " input channels in " + std::to_string(group) +
           " groups";
  Axis h, wd;
  if (auto r = windowGeometry(attrs, x->shape, w[2], w[3], false, h, wd);
      !r.empty())
    return r;
  if (!h.symmetric)
    return asymmetricPads(h, "height");
  if (!wd.symmetric)
    return asymmetricPads(wd, "width");
  Value* bias = nullptr;
  if (n->inputs.size() > 2) {
    Value* b = n->inputs[2];
    if (auto r = needConstant(b, "bias"); !r.empty())
      return r;
    if (b->constant->numElements() != K)
      return "bias has shape " + formatShape(b->constant->dims) +
             ", expected " + std::to_string(K);
    bias = L.constantAs(b, {1, K, 1, 1});
  }
  Value* filter = L.constantAs(wv, w);
  int pos = L.position(n);
  std::vector<int64_t> shape = {x->shape[0], K, h.out, wd.out};
  std::vector<Scalar> scalars = {
      Scalar::integer(h.pad), Scalar::integer(wd.pad),
      Scalar::integer(h.stride), Scalar::integer(wd.stride)};
  OpKind kind = OpKind::Conv;
  if (group != 1) {
    kind = OpKind::GroupConv;
    scalars.push_back(Scalar::integer(1));
    scalars.push_back(Scalar::integer(group));
  }
  const std::string& name = n->output->name;
  Value* out = L.emit(kind, {x, filter}, scalars, shape,
                      bias ? name + ".conv" : name, *n, pos);
  if (bias)
    out = L.emit(OpKind::Add, {out, bias}, {}, shape, name, *n, pos);
  L.finish(n, out);
  return "";
}

/// The K x N weight matrix alpha * op(B) of a Gemm, where B is N x K when
/// \p transB (PyTorch's Linear) and K x N otherwise. Transposes in 64 x 64
/// tiles: classifier weights reach hundreds of MB.
std::shared_ptr<TensorData> transposeScale(const TensorData& b, bool transB,
                                           int64_t K, int64_t N, double alpha) {
  std::vector<float> converted;
  const float* src;
  if (b.dtype == DataType::Float) {
    src = reinterpret_cast<const float*>(b.bytes.data());
  } else {
    converted = b.toFloats();
    src = converted.data();
  }
  auto out = std::make_shared<TensorData>();
  out->dtype = DataType::Float;
  out->dims = {1, 1, K, N};
  out->bytes.resize(static_cast<size_t>(K * N) * sizeof(float));
  float* dst = reinterpret_cast<float*>(out->bytes.data());
  float scale = static_cast<float>(alpha);
  if (!transB) {
    for (int64_t i = 0; i < K * N; ++i)
      dst[i] = scale * src[i];
    return out;
  }
  constexpr int64_t Tile = 64;
  for (int64_t j0 = 0; j0 < N; j0 += Tile)
    for (int64_t k0 = 0; k0 < K; k0 += Tile) {
      int64_t jEnd = std::min(N, j0 + Tile), kEnd = std::min(K, k0 + Tile);
      for (int64_t j = j0; j < jEnd; ++j)
        for (int64_t k = k0; k < kEnd; ++k)
          dst[static_cast<size_t>(k * N + j)] =
              scale * src[static_cast<size_t>(j * K + k)];
    }
  return out;
}

/// Dense layers: Gemm (alpha * A * op(B) + beta * C) and MatMul (A * B).
std::string lowerDense(Lowering& L, Node* n) {
  Value* a = n->inputs[0];
  if (auto r = needActivation(a, "input A", true); !r.empty())
    return r;
  Value* bv = n->inputs[1];
  if (auto r = needConstant(bv, "weight"); !r.empty())
    return r;
  const TensorData& b = *bv->constant;
  if (b.dims.size() != 2)
    return "weight has shape " + formatShape(b.dims) +
           "; only 2-D weights (batched MatMul is not supported)";
  OpAttrs attrs(*n, L.g.source.opset);
  // MatMul is Gemm with the defaults (alpha = beta = 1, no transposes).
  bool gemm = n->kind == OpKind::OnnxGemm;
  bool transB = gemm && attrs.getInt("transB") != 0;
  double alpha = gemm ? attrs.getFloat("alpha") : 1.0;
  double beta = gemm ? attrs.getFloat("beta") : 1.0;
  int64_t K = transB ? b.dims[1] : b.dims[0];
  int64_t N = transB ? b.dims[0] : b.dims[1];
  int64_t inK = 1;
  for (size_t i = 1; i < a->shape.size(); ++i)
    inK *= a->shape[i];
  if (inK != K)
    return "input A has shape " + formatShape(a->shape) + " (" +
           std::to_string(inK) + " features) but the weight expects " +
           std::to_string(K);
  if (!gemm && a->shape.size() != 2 && a->shape.size() != 4)
    return "MatMul input has shape " + formatShape(a->shape);

  // Weights in HPVM's 1 x 1 x K x N layout: transpose and scale if needed.
  Value* weight;
  if (!transB && alpha == 1.0) {
    weight = L.constantAs(bv, {1, 1, K, N});
  } else {
    weight = L.g.addConstant(bv->name, transposeScale(b, transB, K, N, alpha),
                             bv->initializerIndex);
  }

  Value* bias = nullptr;
  if (gemm && n->inputs.size() > 2 && beta != 0.0) {
    Value* c = n->inputs[2];
    if (auto r = needConstant(c, "bias"); !r.empty())
      return r;
    int64_t count = c->constant->numElements();
    int64_t rows = c->constant->dims.size() == 2 ? c->constant->dims[0] : 1;
    if ((count != N && count != 1) || rows != 1)
      return "bias C has shape " + formatShape(c->constant->dims) +
             "; only a vector of " + std::to_string(N) +
             " values (or a scalar) is supported";
    if (count == N && beta == 1.0) {
      bias = L.constantAs(c, {1, N, 1, 1});
    } else {
      std::vector<float> src = c->constant->toFloats();
      std::vector<float> dst(static_cast<size_t>(N));
      for (int64_t j = 0; j < N; ++j)
        dst[static_cast<size_t>(j)] = static_cast<float>(
            beta * src[static_cast<size_t>(count == 1 ? 0 : j)]);
      bias = L.addFloats(c->name, dst, {1, N, 1, 1}, c->initializerIndex);
    }
  }
  int pos = L.position(n);
  std::vector<int64_t> shape = {a->shape[0], N, 1, 1};
  const std::string& name = n->output->name;
  Value* out = L.emit(OpKind::Mul, {a, weight}, {}, shape,
                      bias ? name + ".mul" : name, *n, pos);
  if (bias)
    out = L.emit(OpKind::Add, {out, bias}, {}, shape, name, *n, pos);
  L.finish(n, out);
  return "";
}

/// The mean of N x C x H x W activation \p x over its spatial axes, for
/// node \p n: a pool_mean whose window is the whole image.
Value* emitGlobalMean(Lowering& L, const Node* n, Value* x, int& pos) {
  return L.emit(OpKind::AvgPool, {x},
                {Scalar::integer(x->shape[2]), Scalar::integer(x->shape[3]),
                 Scalar::integer(0), Scalar::integer(0), Scalar::integer(1),
                 Scalar::integer(1)},
                {x->shape[0], x->shape[1], 1, 1}, n->output->name, *n, pos);
}

std::string lowerPool(Lowering& L, Node* n) {
  Value* x = n->inputs[0];
  if (auto r = needActivation(x, "input"); !r.empty())
    return r;
  int pos = L.position(n);
  if (n->kind == OpKind::OnnxGlobalAveragePool) {
    L.finish(n, emitGlobalMean(L, n, x, pos));
    return "";
  }
  OpAttrs attrs(*n, L.g.source.opset);
  std::vector<int64_t> kernel = attrs.getInts("kernel_shape");
  if (kernel.size() != 2)
    return "kernel_shape " + formatInts(kernel) + " is not a 2-D window";
  bool ceilMode = attrs.getInt("ceil_mode") != 0;
  Axis h, w;
  if (auto r =
          windowGeometry(attrs, x->shape, kernel[0], kernel[1], ceilMode, h, w);
      !r.empty())
    return r;
  bool avg = n->kind == OpKind::OnnxAveragePool;
  bool padded = h.padBegin || h.padEnd || w.padBegin || w.padEnd;
  bool overhang = h.overhang || w.overhang;
  bool symmetric = h.symmetric && w.symmetric;
  // HPVM's pools where they compute the same; else the extension ops with
  // pads of their own. A mean over a partial window counts what the
  // padding covers (count_include_pad=1) or not (0): HPVM's pool_mean
  // counts the whole window, pool_mean_pads only the input; a mean with no
  // padding and no partial window is the same in all three.
  OpKind kind;
  if (!avg) {
    kind = symmetric ? OpKind::MaxPool : OpKind::MaxPoolPads;
  } else if (attrs.getInt("count_include_pad") != 0) {
    if (symmetric)
      kind = OpKind::AvgPool;
    else if (!padded)
      kind = OpKind::AvgPoolPads;
    else
      return std::string(overhang ? "ceil_mode=1" : "asymmetric padding") +
             " with padding counted in the mean (count_include_pad=1) is not "
             "supported (pads " +
             formatInts(attrs.getInts("pads")) +
             "): only symmetric pads, or ceil_mode with no padding";
  } else {
    kind = padded || overhang ? OpKind::AvgPoolPads : OpKind::AvgPool;
  }
  std::vector<Scalar> scalars = {
      Scalar::integer(kernel[0]), Scalar::integer(kernel[1]),
      Scalar::integer(h.padBegin), Scalar::integer(w.padBegin)};
  if (kind == OpKind::MaxPoolPads || kind == OpKind::AvgPoolPads) {
    scalars.push_back(Scalar::integer(h.padEndUsed));
    scalars.push_back(Scalar::integer(w.padEndUsed));
  }
  scalars.push_back(Scalar::integer(h.stride));
  scalars.push_back(Scalar::integer(w.stride));
  Value* out = L.emit(kind, {x}, std::move(scalars),
                      {x->shape[0], x->shape[1], h.out, w.out}, n->output->name,
                      *n, pos);
  L.finish(n, out);
  return "";
}

/// The constant operand \p b of elementwise op \p n on an activation of
/// 4-D form \p x4, as HPVM's binary ops take it: broadcast by ONNX's rules
/// (aligned to the right, or at `axis` for the legacy opset < 7 broadcast)
/// against the activation's ONNX shape, then made 1 x C x 1 x 1 (a scalar
/// or per-channel constant) or the full shape at batch 1. Sets \p c, or
/// returns why it cannot; \p doing names the op in messages ("adding").
std::string constantOperand(Lowering& L, Node* n, Value* b,
                            const std::vector<int64_t>& x4, const char* doing,
                            const char* result, Value*& c) {
  const std::vector<int64_t>& onnx = n->output->shape;
  std::vector<int64_t> cd = b->constant->dims;
  if (onnx.size() != 2 && onnx.size() != 4)
    return std::string("the ") + result + " has shape " + formatShape(onnx) +
           "; only 4-D or 2-D activations are supported";
  if (cd.size() > onnx.size())
    return "the constant has shape " + formatShape(cd) +
           ", of higher rank than the activation";
  OpAttrs attrs(*n, L.g.source.opset);
  size_t offset = onnx.size() - cd.size();
  if (attrs.getInt("broadcast") != 0 && attrs.has("axis"))
    offset = static_cast<size_t>(attrs.getInt("axis"));
  std::vector<int64_t> aligned(onnx.size(), 1);
  for (size_t i = 0; i < cd.size() && offset + i < aligned.size(); ++i)
    aligned[offset + i] = cd[i];
  int64_t C = x4[1];
  int64_t count = b->constant->numElements();
  c = nullptr;
  std::vector<int64_t> perChannel(onnx.size(), 1);
  perChannel[1] = C;
  if (count == 1) {
    std::vector<float> v(static_cast<size_t>(C),
                         static_cast<float>(b->constant->asDouble(0)));
    c = L.addFloats(b->name, v, {1, C, 1, 1}, b->initializerIndex);
  } else if (aligned == perChannel) {
    c = L.constantAs(b, {1, C, 1, 1});
  } else if (aligned.size() == 4 && aligned[0] == 1 && x4[0] == 1 &&
             std::equal(aligned.begin() + 1, aligned.end(), x4.begin() + 1)) {
    c = L.constantAs(b, x4);
  }
  if (c == nullptr)
    return std::string(doing) + " a constant of shape " + formatShape(cd) +
           " to an activation of shape " + formatShape(onnx) +
           " is not supported (only per-channel 1xCx1x1, a scalar, or the "
           "full shape at batch 1)";
  return "";
}

/// The operands of elementwise binary op \p n: \p a an activation, \p b
/// an activation or a constant (swapped if the constant came first).
std::string binaryOperands(Node* n, Value*& a, Value*& b) {
  if (n->inputs.size() != 2)
    return std::string(n->origins.front().opType) + " needs two inputs";
  a = n->inputs[0];
  b = n->inputs[1];
  if (a->isConstant() && b->isConstant())
    return "both operands are constants (folding constant arithmetic is not "
           "supported)";
  if (a->isConstant())
    std::swap(a, b);
  return needActivation(a, "input", true);
}

std::string lowerAdd(Lowering& L, Node* n) {
  Value *a = nullptr, *b = nullptr;
  if (auto r = binaryOperands(n, a, b); !r.empty())
    return r;
  std::vector<int64_t> x4 = form4d(a->shape);
  int pos = L.position(n);
  if (!b->isConstant()) {
    if (auto r = needActivation(b, "input", true); !r.empty())
      return r;
    if (form4d(b->shape) != x4)
      return "adding activations of different shapes (" +
             formatShape(a->shape) + " and " + formatShape(b->shape) +
             ") is not supported";
    L.finish(n, L.emit(OpKind::Add, {a, b}, {}, x4, n->output->name, *n, pos));
    return "";
  }
  Value* c = nullptr;
  if (auto r = constantOperand(L, n, b, x4, "adding", "sum", c); !r.empty())
    return r;
  L.finish(n, L.emit(OpKind::Add, {a, c}, {}, x4, n->output->name, *n, pos));
  return "";
}

/// The hard_sigmoid node computing \p gate from \p x with hard swish's
/// alpha 1/6 and beta 1/2 and read only by the product \p gate * \p x,
/// or null: x * HardSigmoid(x), PyTorch's export of hardswish before
/// opset 14. (With another alpha or beta the product stays a multiply.)
Node* hardSwishGate(const Graph& g, Value* gate, Value* x) {
  Node* hs = gate->producer;
  if (hs == nullptr || hs->kind != OpKind::HardSigmoid || hs->inputs[0] != x ||
      gate->users.size() != 1 || gate == g.output)
    return nullptr;
  const float alpha = static_cast<float>(hs->scalars[0].d);
  const float beta = static_cast<float>(hs->scalars[1].d);
  return alpha == 1.f / 6.f && beta == 0.5f ? hs : nullptr;
}

/// Elementwise product (multiply): activations of the same shape, or one
/// broadcast over the other's spatial extents (a squeeze-and-excitation
/// gate N x C x 1 x 1); an activation and a constant (per channel, scalar,
/// full shape at batch 1). x * HardSigmoid(x) (hardswish) becomes one
/// hard_swish.
std::string lowerMul(Lowering& L, Node* n) {
  Value *a = nullptr, *b = nullptr;
  if (auto r = binaryOperands(n, a, b); !r.empty())
    return r;
  std::vector<int64_t> x4 = form4d(a->shape);
  int pos = L.position(n);
  Node* gate = hardSwishGate(L.g, b, a);
  if (gate == nullptr && (gate = hardSwishGate(L.g, a, b)) != nullptr)
    std::swap(a, b);
  if (gate != nullptr) {
    Value* out = L.emit(OpKind::HardSwish, {a}, {}, form4d(a->shape),
                        n->output->name, *n, pos);
    out->producer->origins.push_back(gate->origins.front());
    L.finish(n, out);
    L.g.eraseNode(gate);
    return "";
  }
  if (b->isConstant()) {
    Value* c = nullptr;
    if (auto r = constantOperand(L, n, b, x4, "multiplying by", "product", c);
        !r.empty())
      return r;
    L.finish(
        n, L.emit(OpKind::Multiply, {a, c}, {}, x4, n->output->name, *n, pos));
    return "";
  }
  if (auto r = needActivation(b, "input", true); !r.empty())
    return r;
  if (a->shape.size() != b->shape.size())
    return "multiplying activations of different ranks (" +
           formatShape(a->shape) + " and " + formatShape(b->shape) +
           ") is not supported";
  std::vector<int64_t> b4 = form4d(b->shape);
  // The full-size operand first; the other broadcast over 1 x 1 spatially.
  auto fits = [](const std::vector<int64_t>& big,
                 const std::vector<int64_t>& small) {
    if (small == big)
      return true;
    return small[2] == 1 && small[3] == 1 &&
           (small[1] == big[1] || small[1] == 1) && small[0] == big[0];
  };
  if (!fits(x4, b4)) {
    std::swap(a, b);
    std::swap(x4, b4);
  }
  if (!fits(x4, b4))
    return "multiplying activations of shapes " + formatShape(a->shape) +
           " and " + formatShape(b->shape) +
           " is not supported (only the same shape, or one N x C x 1 x 1 or "
           "N x 1 x 1 x 1 against the other)";
  L.finish(n,
           L.emit(OpKind::Multiply, {a, b}, {}, x4, n->output->name, *n, pos));
  return "";
}

/// An activation minus or divided by a constant (\p op of \p n): an add of
/// the negated, or a multiply by the reciprocal, constant; whatever else
/// the folding left is refused.
std::string lowerByConstant(Lowering& L, Node* n, float (*op)(float),
                            OpKind kind, const char* doing, const char* what) {
  if (n->inputs.size() != 2)
    return std::string(n->origins.front().opType) + " needs two inputs";
  Value* a = n->inputs[0];
  Value* b = n->inputs[1];
  if (!b->isConstant())
    return std::string(what) + " an activation is not supported (only " +
           "an activation " + doing + " a constant)";
  if (auto r = needActivation(a, "input", true); !r.empty())
    return r;
  std::vector<float> v = b->constant->toFloats();
  for (float& f : v)
    f = op(f);
  Value* negated = L.addFloats(b->name, v, b->constant->dims, -1);
  std::vector<int64_t> x4 = form4d(a->shape);
  Value* c = nullptr;
  if (auto r = constantOperand(L, n, negated, x4, doing, "result", c);
      !r.empty())
    return r;
  int pos = L.position(n);
  L.finish(n, L.emit(kind, {a, c}, {}, x4, n->output->name, *n, pos));
  return "";
}

std::string lowerSub(Lowering& L, Node* n) {
  return lowerByConstant(
      L, n, [](float f) { return -f; }, OpKind::Add, "minus", "subtracting");
}

std::string lowerDiv(Lowering& L, Node* n) {
  return lowerByConstant(
      L, n, [](float f) { return 1.0f / f; }, OpKind::Multiply, "divided by",
      "dividing by");
}

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

std::string lowerTranspose(Lowering&, Node* n) {
  return "transposing activations is not supported (only within "
         "ShuffleNet's channel shuffle: Reshape to (N, g, C/g, H, W), "
         "Transpose perm [0, 2, 1, 3, 4], Reshape back)";
}

/// Appends inputs 1.. of \p n, constants of \p C elements named \p roles,
/// to \p ops as 1 x C x 1 x 1; an absent optional one is the role's
/// identity (a scale of ones, a bias of zeros).
std::string perChannelOperands(Lowering& L, Node* n,
                               const std::vector<const char*>& roles, int64_t C,
                               std::vector<Value*>& ops) {
  for (size_t i = 1; i <= roles.size(); ++i) {
    const std::string role = roles[i - 1];
    if (i >= n->inputs.size() || n->inputs[i]->name.empty()) {
      ops.push_back(L.addFloats(
          n->output->name + "." + role,
          std::vector<float>(size_t(C), role == "scale" ? 1.f : 0.f),
          {1, C, 1, 1}, -1));
      continue;
    }
    Value* v = n->inputs[i];
    if (auto r = needConstant(v, role.c_str()); !r.empty())
      return r;
    if (v->constant->numElements() != C)
      return role + " has shape " + formatShape(v->constant->dims) +
             ", expected " + std::to_string(C) + " channels";
    ops.push_back(L.constantAs(v, {1, C, 1, 1}));
  }
  return "";
}

std::string lowerBatchNormalization(Lowering& L, Node* n) {
  Value* x = n->inputs[0];
  if (auto r = needActivation(x, "input", true); !r.empty())
    return r;
  if (n->inputs.size() != 5)
    return "BatchNormalization needs 5 inputs";
  std::vector<int64_t> x4 = form4d(x->shape);
  std::vector<Value*> ops = {x};
  if (auto r = perChannelOperands(L, n, {"scale", "bias", "mean", "variance"},
                                  x4[1], ops);
      !r.empty())
    return r;
  OpAttrs attrs(*n, L.g.source.opset);
  double eps = shortestFloat(static_cast<float>(attrs.getFloat("epsilon")));
  int pos = L.position(n);
  L.finish(n, L.emit(OpKind::BatchNorm, ops, {Scalar::real(eps)}, x4,
                     n->output->name, *n, pos));
  return "";
}

std::string lowerUnary(Lowering& L, Node* n, OpKind kind,
                       std::vector<Scalar> scalars = {}) {
  Value* x = n->inputs[0];
  if (auto r = needActivation(x, "input", true); !r.empty())
    return r;
  std::vector<int64_t> x4 = form4d(x->shape);
  int pos = L.position(n);
  L.finish(n,
           L.emit(kind, {x}, std::move(scalars), x4, n->output->name, *n, pos));
  return "";
}

std::string lowerClip(Lowering& L, Node* n) {
  OpAttrs attrs(*n, L.g.source.opset);
  constexpr double inf = std::numeric_limits<double>::infinity();
  double lo = attrs.getFloat("min"), hi = attrs.getFloat("max");
  for (size_t i = 1; i < n->inputs.size() && i < 3; ++i) {
    const Value* v = n->inputs[i];
    if (!v->isConstant() || v->constant->numElements() != 1)
      return std::string(i == 1 ? "min" : "max") + " is not a constant scalar";
    (i == 1 ? lo : hi) = v->constant->asDouble(0);
  }
  // opset < 11 spells "no bound" as the float range's limits.
  if (hi >= std::numeric_limits<float>::max())
    hi = inf;
  if (lo == 0.0 && hi == inf)
    return lowerUnary(L, n, OpKind::Relu);
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi)
    return "Clip(" + std::to_string(lo) + ", " + std::to_string(hi) +
           ") is not supported (only finite bounds, or min 0 without max)";
  return lowerUnary(L, n, OpKind::ClippedRelu,
                    {Scalar::real(shortestFloat(static_cast<float>(lo))),
                     Scalar::real(shortestFloat(static_cast<float>(hi)))});
}

std::string lowerSoftmax(Lowering& L, Node* n) {
  const Value* x = n->inputs[0];
  if (auto r = needActivation(x, "input", true); !r.empty())
    return r;
  // The axis refers to the ONNX shape (the output's), not to the 4-D form
  // the input may already have been lowered to.
  const std::vector<int64_t>& onnx = n->output->shape;
  if (onnx.size() != 2 && onnx.size() != 4)
    return "softmax of shape " + formatShape(onnx) +
           " is not supported (only N x classes)";
  OpAttrs attrs(*n, L.g.source.opset);
  int64_t rank = static_cast<int64_t>(onnx.size());
  int64_t axis = attrs.getInt("axis");
  axis = axis < 0 ? axis + rank : axis;
  std::vector<int64_t> x4 = form4d(onnx);
  if (axis != 1 || x4[2] != 1 || x4[3] != 1)
    return "softmax over axis " + std::to_string(axis) + " of shape " +
           formatShape(onnx) +
           " is not supported (only over the classes of N x classes)";
  return lowerUnary(L, n, OpKind::Softmax);
}

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

// The rows that share another's lowering.
std::string lowerGemm(Lowering& L, Node* n) { return lowerDense(L, n); }
std::string lowerMatMul(Lowering& L, Node* n) { return lowerDense(L, n); }
std::string lowerMaxPool(Lowering& L, Node* n) { return lowerPool(L, n); }

/// The mean over the spatial axes of an N x C x H x W activation (what
/// `x.mean([2, 3])` exports): a global average pool, whose N x C x 1 x 1
/// result also serves keepdims=0's N x C.
std::string lowerReduceMean(Lowering& L, Node* n) {
  Value* x = n->inputs[0];
  if (auto r = needActivation(x, "input"); !r.empty())
    return r;
  if (n->inputs.size() > 1)
    return "axes given as an input are not supported (only the attribute)";
  OpAttrs attrs(*n, L.g.source.opset);
  std::vector<int64_t> axes = attrs.getInts("axes");
  for (int64_t& a : axes)
    a = a < 0 ? a + 4 : a;
  std::sort(axes.begin(), axes.end());
  if (axes != std::vector<int64_t>{2, 3})
    return "the mean over axes " + formatInts(attrs.getInts("axes")) +
           " of shape " + formatShape(x->shape) +
           " is not supported (only over the spatial axes 2 and 3)";
  int pos = L.position(n);
  L.finish(n, emitGlobalMean(L, n, x, pos));
  return "";
}
std::string lowerAveragePool(Lowering& L, Node* n) { return lowerPool(L, n); }
std::string lowerGlobalAveragePool(Lowering& L, Node* n) {
  return lowerPool(L, n);
}
std::string lowerRelu(Lowering& L, Node* n) {
  return lowerUnary(L, n, OpKind::Relu);
}
std::string lowerTanh(Lowering& L, Node* n) {
  return lowerUnary(L, n, OpKind::Tanh);
}
std::string lowerSigmoid(Lowering& L, Node* n) {
  return lowerUnary(L, n, OpKind::Sigmoid);
}
/// ONNX HardSigmoid: hard_sigmoid with alpha and beta as its scalars
/// (lowerMul makes x * HardSigmoid(x) one hard_swish).
std::string lowerHardSigmoid(Lowering& L, Node* n) {
  OpAttrs attrs(*n, L.g.source.opset);
  const auto alpha = static_cast<float>(attrs.getFloat("alpha"));
  const auto beta = static_cast<float>(attrs.getFloat("beta"));
  if (!std::isfinite(alpha) || !std::isfinite(beta))
    return "alpha " + std::to_string(alpha) + " and beta " +
           std::to_string(beta) + " must be finite float32 values";
  return lowerUnary(
      L, n, OpKind::HardSigmoid,
      {Scalar::real(shortestFloat(alpha)), Scalar::real(shortestFloat(beta))});
}
/// ONNX LeakyRelu: leaky_relu with alpha as its scalar.
std::string lowerLeakyRelu(Lowering& L, Node* n) {
  OpAttrs attrs(*n, L.g.source.opset);
  const auto alpha = static_cast<float>(attrs.getFloat("alpha"));
  if (!std::isfinite(alpha))
    return "alpha " + std::to_string(alpha) + " must be a finite float32 value";
  return lowerUnary(L, n, OpKind::LeakyRelu,
                    {Scalar::real(shortestFloat(alpha))});
}
/// ONNX HardSwish (opset 14): x * max(0, min(1, x / 6 + 1/2)).
std::string lowerHardSwish(Lowering& L, Node* n) {
  return lowerUnary(L, n, OpKind::HardSwish);
}
/// ONNX LayerNormalization whose normalized axes (axis to the last) are
/// the channels: of an N x C activation, or of N x C x 1 x 1 (ConvNeXt's
/// head); a channel-last LayerNorm between Transposes was made
/// channel-first layer_norm by makeChannelFirst. Scale and bias: constants
/// of C elements.
std::string lowerLayerNormalization(Lowering& L, Node* n) {
  Value* x = n->inputs[0];
  if (auto r = needActivation(x, "input", true); !r.empty())
    return r;
  const std::vector<int64_t>& onnx =
      n->output->shape.empty() ? x->shape : n->output->shape;
  OpAttrs attrs(*n, L.g.source.opset);
  int64_t rank = static_cast<int64_t>(onnx.size());
  int64_t axis = attrs.getInt("axis");
  axis = axis < 0 ? axis + rank : axis;
  if (axis != 1 || (rank != 2 && (rank != 4 || onnx[2] != 1 || onnx[3] != 1)))
    return "layer normalization over axes " + std::to_string(axis) +
           ".. of shape " + formatShape(onnx) +
           " is not supported (only over the channels: of N x C, or of N x "
           "C x 1 x 1; a channel-last LayerNorm between Transposes to and "
           "from N x H x W x C is made channel-first)";
  std::vector<int64_t> x4 = form4d(x->shape);
  std::vector<Value*> ops = {x};
  if (auto r = perChannelOperands(L, n, {"scale", "bias"}, x4[1], ops);
      !r.empty())
    return r;
  double eps = shortestFloat(static_cast<float>(attrs.getFloat("epsilon")));
  int pos = L.position(n);
  L.finish(n, L.emit(OpKind::LayerNorm, ops, {Scalar::real(eps)}, x4,
                     n->output->name, *n, pos));
  return "";
}
std::string lowerPow(Lowering&, Node*) {
  return "Pow of activations is only supported inside the LayerNorm the "
         "PyTorch exporter writes (ReduceMean, Sub, Pow 2, ReduceMean, Add, "
         "Sqrt, Div over the last axis)";
}
std::string lowerSqrt(Lowering& L, Node* n) { return lowerPow(L, n); }
std::string lowerErf(Lowering&, Node*) {
  return "Erf of activations is only supported inside the GELU the PyTorch "
         "exporter writes (x * (1 + erf(x / sqrt(2))) * 0.5)";
}

// Rows the passes remove where they can: what is left says why not.
std::string lowerFlatten(Lowering& L, Node* n) {
  return reshapeLeftover(n, L.g.source.opset);
}
std::string lowerReshape(Lowering& L, Node* n) {
  return reshapeLeftover(n, L.g.source.opset);
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
std::string lowerUnsqueeze(Lowering&, Node* n) { return notFolded(n); }
std::string lowerSqueeze(Lowering&, Node* n) { return notFolded(n); }
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
/// or of N x K; constant inputs were folded, or are refused): one concat
/// of up to kMaxTensorArgs parts, a tree of them beyond; a single input is
/// the input itself.
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
  if (axis != 1)
    return "concatenation along axis " + std::to_string(axis) + " of shape " +
           formatShape(onnx) +
           " is not supported (only along the channels, "
           "axis 1)";
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
      shape[1] = 0;
      for (Value* v : group)
        shape[1] += form4d(v->shape)[1];
      bool last = e - b == parts.size();
      std::string name = last ? n->output->name
                              : n->output->name + "_part" +
                                    std::to_string(level) + "_" +
                                    std::to_string(b / kMaxTensorArgs);
      next.push_back(
          L.emit(OpKind::Concat, std::move(group), {}, shape, name, *n, pos));
    }
    parts = std::move(next);
  }
  L.finish(n, parts[0]);
  return "";
}

/// Lowers ONNX-level node \p n into HPVM ops with its row's function;
/// returns why it cannot be, or why the passes left a node of a kind they
/// remove, or "".
std::string lowerNode(Lowering& L, Node* n) {
  switch (n->kind) {
#define HPVM_ONNX(OnnxName, MinOpset, Stem, Produces, IgnoredAttrs)            \
  case OpKind::Onnx##Stem:                                                     \
    return lower##Stem(L, n);
#include "hpvm_rt/Ops.def"
    // lowerNodes() lowers ONNX-level nodes only.
#define HPVM_OP(Kind, ...) case OpKind::Kind:
#include "hpvm_rt/Ops.def"
    break;
  }
  HPVM_UNREACHABLE("lowerNode of HPVM kind " +
                   std::string(opKindName(n->kind)));
}

} // namespace

void lowerNodes(Graph& g) {
  Lowering L(g);
  ErrorList errors(g.source.path);
  std::vector<Node*> nodes;
  for (const auto& n : g.nodes())
    if (!isHpvmOp(n->kind))
      nodes.push_back(n.get());
  for (Node* n : nodes) {
    Origin origin = n->origins.front();
    std::string reason;
    try {
      reason = lowerNode(L, n);
    } catch (const AttrError& e) {
      reason = e.what();
    }
    if (!reason.empty())
      errors.add(origin, reason);
  }
  errors.throwIfAny();
  g.pruneValues();
}

void checkOperandRanges(const Graph& g, uint64_t maxBytes) {
  ErrorList errors(g.source.path);
  for (const auto& n : g.nodes()) {
    if (!isHpvmOp(n->kind))
      continue;
    const HpvmOpDesc& desc = hpvmOpDesc(n->kind);
    // The name of operand i: its group's ("pads" for both pads).
    const std::vector<std::string> labels = scalarLabels(*desc.facts);
    std::string group = "operand";
    for (size_t i = 0; i < n->scalars.size(); ++i) {
      if (i < labels.size() && !labels[i].empty())
        group = labels[i];
      const Scalar& s = n->scalars[i];
      if (s.isInteger && (s.i < std::numeric_limits<int32_t>::min() ||
                          s.i > std::numeric_limits<int32_t>::max())) {
        errors.add(n->origins.front(), group + " " + std::to_string(s.i) +
                                           " does not fit the int operand of " +
                                           desc.intrinsic);
        break; // one message per node
      }
    }
    // Per image: the batch dimension is left out.
    const std::vector<int64_t>& shape = n->output->shape;
    const std::optional<uint64_t> bytes =
        tensorBytes(std::vector<int64_t>(
                        shape.begin() + (shape.empty() ? 0 : 1), shape.end()),
                    sizeof(float));
    if (!bytes || *bytes > maxBytes)
      errors.add(n->origins.front(),
                 "its output " + formatShape(shape) + " takes " +
                     (bytes ? byteSize(*bytes) : "more bytes than 2^63") +
                     " per image, more than the " + byteSize(maxBytes) +
                     " limit (raise it with --max-size)");
  }
  errors.throwIfAny();
}

} // namespace hpvm::fe
