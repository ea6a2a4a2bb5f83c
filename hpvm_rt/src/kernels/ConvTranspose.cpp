// ConvTranspose.cpp - conv_transpose (ONNX ConvTranspose, U-Net's and
// FPN's upsampling): oneDNN's deconvolution, the filter in ONNX's layout
// (input channels first: C x K/groups x KH x KW) reordered once into the
// primitive's and cached with the tensor; fp16 numerics emulated by
// rounding operands and result. A stride equal to the window (one tap per
// output pixel) runs as a 1x1 convolution and an interleave.
#include "base/Errors.h"
#include "kernels/DerivedWeights.h"
#include "kernels/Kernels.h"
#include "kernels/Numerics.h"
#include "kernels/Primitives.h"
#include "kernels/TensorImpl.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace hpvm::rt {
using namespace kern;

namespace {

/// True where every output pixel takes exactly one tap: the stride equal
/// to the window, no padding, dilation or groups (U-Net's k2 s2).
bool oneTapPerPixel(const TransposeArgs& a, const Dims4& wd) {
  return a.groups == 1 && a.dilH == 1 && a.dilW == 1 && a.strideH == wd[2] &&
         a.strideW == wd[3] && a.padTop == 0 && a.padLeft == 0 &&
         a.padBottom == 0 && a.padRight == 0;
}

/// oneTapPerPixel()'s transposed convolution as a 1x1 convolution into K x
/// KH x KW channels, channel (k, r, t) holding output pixel (i * KH + r,
/// j * KW + t) of input pixel (i, j), then that interleave: oneDNN's
/// forward kernels, where its deconvolution runs its backward-data ones.
/// U-Net's 64 -> 32 channels, 56x56 -> 112x112, batch 1, AMD EPYC (AVX2),
/// 1 thread: 1.4 ms against 3.3 ms.
void runOneTapPerPixel(const OpCall& c, const Dims4& xd, const Dims4& wd,
                       const Dims4& yd) {
  const int64_t C = xd[1], K = wd[1], KH = wd[2], KW = wd[3], taps = KH * KW;
  // ONNX's filter is C x K x KH x KW; the 1x1 one (K * taps) x C.
  const std::shared_ptr<const Tensor> pointwise =
      derivedTensor(c.in[1], "pointwise|", {K * taps, C, 1, 1},
                    [&](const float* from, float* to) {
                      for (int64_t ci = 0; ci < C; ++ci)
                        for (int64_t o = 0; o < K * taps; ++o)
                          to[o * C + ci] = from[ci * K * taps + o];
                    });
  OwnedTensor z({xd[0], K * taps, xd[2], xd[3]});
  runConv(c.in[0], pointwise.get(), ConvArgs{}, PostOps{}, exactAt(c.knob),
          &z.t);
  const float* zp = hostData(&z.t);
  auto* yp = static_cast<float*>(
      outputMemory(c.out, nchwDesc(c.out)).get_data_handle());
  const int64_t H = xd[2], W = xd[3], plane = H * W;
#pragma omp parallel for collapse(2)
  for (int64_t nk = 0; nk < xd[0] * K; ++nk)
    for (int64_t row = 0; row < yd[2]; ++row) {
      const int64_t i = row / KH, r = row % KH;
      // The taps (r, 0..KW-1) of output channel nk: planes nk*taps + r*KW + t.
      const float* from = zp + (nk * taps + r * KW) * plane + i * W;
      float* to = yp + (nk * yd[2] + row) * yd[3];
      for (int64_t j = 0; j < W; ++j)
        for (int64_t t = 0; t < KW; ++t)
          to[j * KW + t] = from[t * plane + j];
    }
}

} // namespace

void runConvTranspose(const OpCall& c) {
  applyThreads();
  const Tensor* x = c.in[0];
  const Tensor* w = c.in[1];
  const TransposeArgs a = transposeArgsOf(c.scalars);
  const Dims4 xd = dims4(x), wd = dims4(w), yd = dims4(c.out);
  const int64_t G = a.groups, Kg = wd[1], K = Kg * G, Cg = xd[1] / G;
  HPVM_ASSERT(G >= 1 && xd[1] % G == 0 && wd[0] == xd[1] && yd[0] == xd[0] &&
                  yd[1] == K && yd[2] == a.outH(xd[2], wd[2]) &&
                  yd[3] == a.outW(xd[3], wd[3]),
              fmt::format("conv_transpose of {} with filter {} into {} "
                          "(groups {})",
                          dimsStr(x), dimsStr(w), dimsStr(c.out), G));
  if (oneTapPerPixel(a, wd)) {
    runOneTapPerPixel(c, xd, wd, yd);
    return;
  }
  const Numerics nm = numericsOf(exactAt(c.knob));
  // ONNX's filter, C x K/G x KH x KW: oneDNN's (G,) O, I, H, W dims in the
  // (g)iohw layout.
  const dims wDims =
      G == 1 ? dims{K, Cg, wd[2], wd[3]} : dims{G, Kg, Cg, wd[2], wd[3]};
  const dnnl::memory::desc wPlain(wDims, dt::f32,
                                  G == 1 ? tag::iohw : tag::giohw);
  std::string key = "deconv";
  appendKey(key, xd, wd, a.padTop, a.padLeft, a.padBottom, a.padRight,
            a.strideH, a.strideW, a.dilH, a.dilW, G);
  const Prim& p = cachedPrim(key, [&] {
    const dnnl::memory::desc src({xd[0], xd[1], xd[2], xd[3]}, dt::f32,
                                 tag::any);
    const dnnl::memory::desc dst({yd[0], yd[1], yd[2], yd[3]}, dt::f32,
                                 tag::any);
    const dnnl::memory::desc wAny(wDims, dt::f32, tag::any);
    const dnnl::memory::desc biasDesc({K}, dt::f32, tag::x);
    dnnl::deconvolution_forward::desc desc(
        dnnl::prop_kind::forward_inference,
        dnnl::algorithm::deconvolution_direct, src, wAny, biasDesc, dst,
        {a.strideH, a.strideW}, {a.dilH - 1, a.dilW - 1}, {a.padTop, a.padLeft},
        {a.padBottom, a.padRight});
    dnnl::deconvolution_forward::primitive_desc pd(desc, engine());
    return Prim{dnnl::deconvolution_forward(pd), pd.src_desc(),
                pd.weights_desc(), pd.dst_desc()};
  });
  // The filter in the primitive's layout (no bias: the lowering adds it),
  // per output channel k: Cg * KH * KW values, not contiguous in ONNX's
  // layout (folding nothing, derivedWeights only reorders).
  const auto& wts = derivedWeights(w, PostOps{}, wPlain, p.weights, K,
                                   Cg * wd[2] * wd[3], 1, 1, nm.roundOperands);
  std::vector<float> scratch;
  std::unique_ptr<PoolBuffer> srcHold;
  const dnnl::memory src =
      sourceFor(x, p.src, nm.roundOperands, scratch, srcHold);
  dnnl::memory dst = outputMemory(c.out, p.dst);
  p.prim.execute(stream(), {{DNNL_ARG_SRC, src},
                            {DNNL_ARG_WEIGHTS, wts.weights},
                            {DNNL_ARG_BIAS, wts.bias},
                            {DNNL_ARG_DST, dst}});
  stream().wait();
  roundResult(nm.roundOutput, c.out);
}

} // namespace hpvm::rt
