// ConvTranspose.cpp - conv_transpose (ONNX ConvTranspose, U-Net's and
// FPN's upsampling): oneDNN's deconvolution, the filter in ONNX's layout
// (input channels first: C x K/groups x KH x KW) reordered once into the
// primitive's and cached with the tensor; fp16 numerics emulated by
// rounding operands and result.
#include "base/Errors.h"
#include "kernels/DerivedWeights.h"
#include "kernels/Numerics.h"
#include "kernels/Primitives.h"
#include "kernels/TensorImpl.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace hpvm::rt {
using namespace kern;

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
