// LowerConvDensePool.cpp - lowering of the ops HPVM computes with windows or
// matrices: Conv, Gemm and MatMul (dense), the pools and the spatial mean.
#include "lower/LoweringState.h"

#include "onnx/Attributes.h"
#include "onnx/OpAttrs.h"

#include <algorithm>
#include <memory>

namespace hpvm::fe {

namespace {

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

/// The mean of N x C x H x W activation \p x over its spatial axes, for
/// node \p n: a pool_mean whose window is the whole image.
Value* emitGlobalMean(Lowering& L, const Node* n, Value* x, int& pos) {
  return L.emit(OpKind::AvgPool, {x},
                {Scalar::integer(x->shape[2]), Scalar::integer(x->shape[3]),
                 Scalar::integer(0), Scalar::integer(0), Scalar::integer(1),
                 Scalar::integer(1)},
                {x->shape[0], x->shape[1], 1, 1}, n->output->name, *n, pos);
}

/// The activation and constant weight of a Conv or ConvTranspose \p n;
/// why they are not, or "".
std::string filterOperands(Node* n, Value*& x, Value*& wv) {
  x = n->inputs[0];
  if (auto r = needActivation(x, "input"); !r.empty())
    return r;
  if (n->inputs.size() < 2)
    return n->origins.front().opType + " has no weight";
  wv = n->inputs[1];
  return needConstant(wv, "weight");
}

/// The optional constant bias of \p n (input 2, K values) as 1 x K x 1 x 1
/// (null when absent); why it cannot be, or "".
std::string biasOperand(Lowering& L, Node* n, int64_t K, Value*& bias) {
  bias = nullptr;
  if (n->inputs.size() <= 2)
    return "";
  Value* b = n->inputs[2];
  if (auto r = needConstant(b, "bias"); !r.empty())
    return r;
  if (b->constant->numElements() != K)
    return "bias has shape " + formatShape(b->constant->dims) + ", expected " +
           std::to_string(K);
  bias = L.constantAs(b, {1, K, 1, 1});
  return "";
}

} // namespace

std::string lowerConv(Lowering& L, Node* n) {
  Value *x = nullptr, *wv = nullptr;
  if (auto r = filterOperands(n, x, wv); !r.empty())
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
  // Dilated taps: the window spans (k - 1) * d + 1 pixels.
  const std::vector<int64_t> dil = attrs.getInts("dilations");
  if (dil.size() != 2)
    return "dilations " + formatInts(dil) + " do not describe a 2-D window";
  const bool dilated = dil[0] != 1 || dil[1] != 1;
  Axis h, wd;
  if (auto r = windowGeometry(attrs, x->shape, (w[2] - 1) * dil[0] + 1,
                              (w[3] - 1) * dil[1] + 1, false, h, wd);
      !r.empty())
    return r;
  if (!h.symmetric)
    return asymmetricPads(h, "height");
  if (!wd.symmetric)
    return asymmetricPads(wd, "width");
  Value* bias = nullptr;
  if (auto r = biasOperand(L, n, K, bias); !r.empty())
    return r;
  Value* filter = L.constantAs(wv, w);
  int pos = L.position(n);
  std::vector<int64_t> shape = {x->shape[0], K, h.out, wd.out};
  std::vector<Scalar> scalars = {
      Scalar::integer(h.pad), Scalar::integer(wd.pad),
      Scalar::integer(h.stride), Scalar::integer(wd.stride)};
  OpKind kind = OpKind::Conv;
  if (dilated) {
    // HPVM's convolutions have no dilation: our runtime's extension.
    kind = OpKind::DilatedConv;
    scalars.push_back(Scalar::integer(dil[0]));
    scalars.push_back(Scalar::integer(dil[1]));
    scalars.push_back(Scalar::integer(group));
  } else if (group != 1) {
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

/// ConvTranspose: conv_transpose (hpvm_rt's), then the bias as an add.
std::string lowerConvTranspose(Lowering& L, Node* n) {
  Value *x = nullptr, *wv = nullptr;
  if (auto r = filterOperands(n, x, wv); !r.empty())
    return r;
  const std::vector<int64_t>& w = wv->constant->dims;
  TransposeGeometry geo;
  if (auto r = transposeGeometry(*n, L.g.source.opset, x->shape, w, geo);
      !r.empty())
    return r;
  const int64_t K = w[1] * geo.groups;
  Value* bias = nullptr;
  if (auto r = biasOperand(L, n, K, bias); !r.empty())
    return r;
  int pos = L.position(n);
  const std::vector<int64_t> shape = {x->shape[0], K, geo.outH, geo.outW};
  const std::string& name = n->output->name;
  Value* out =
      L.emit(OpKind::ConvTranspose, {x, L.constantAs(wv, w)},
             {Scalar::integer(geo.padTop), Scalar::integer(geo.padLeft),
              Scalar::integer(geo.padBottom), Scalar::integer(geo.padRight),
              Scalar::integer(geo.strideH), Scalar::integer(geo.strideW),
              Scalar::integer(geo.dilH), Scalar::integer(geo.dilW),
              Scalar::integer(geo.groups)},
             shape, bias ? name + ".deconv" : name, *n, pos);
  if (bias)
    out = L.emit(OpKind::Add, {out, bias}, {}, shape, name, *n, pos);
  L.finish(n, out);
  return "";
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
  const int64_t inK = dimsProduct(a->shape, 1);
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

} // namespace hpvm::fe
