// ConvTranspose.cpp - conv_transpose (ONNX ConvTranspose, U-Net's and
// FPN's upsampling), on oneDNN's forward convolutions: a stride equal to
// the window (one tap per output pixel) as a 1x1 convolution and an
// interleave; any other undilated one whose stride is no larger than its
// window as one convolution per output phase, interleaved. Otherwise
// oneDNN's deconvolution, the filter in ONNX's layout (input channels
// first: C x K/groups x KH x KW) reordered once into the primitive's and
// cached with the tensor; fp16 numerics emulated by rounding operands and
// result.
#include "base/Errors.h"
#include "kernels/DerivedWeights.h"
#include "kernels/Kernels.h"
#include "kernels/Numerics.h"
#include "kernels/Primitives.h"
#include "kernels/TensorImpl.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
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

/// The layout a transposed convolution's K output channels are
/// interleaved in, from forward convolution result \p z: its channel
/// blocking (8 or 16, as the next layer reads it) where K fills whole
/// blocks, else NCHW (block 1).
struct Interleave {
  int64_t block;
  tag layout;
};

Interleave interleaveLayout(const Tensor* z, int64_t K) {
  const std::optional<int64_t> block =
      channelBlock(currentMemory(z).get_desc());
  if (block == 8 && K % 8 == 0)
    return {8, tag::nChw8c};
  if (block == 16 && K % 16 == 0)
    return {16, tag::nChw16c};
  return {1, tag::nchw};
}

/// oneTapPerPixel()'s transposed convolution as a 1x1 convolution into
/// KH x KW x K channels, channel (r, t, k) holding output pixel
/// (i * KH + r, j * KW + t) of input pixel (i, j), then that interleave in
/// the channel blocking the convolution chose (8 or 16 channels, as the
/// next layer reads it) where K fills its blocks, else NCHW: oneDNN's
/// forward kernels, where its deconvolution runs its backward-data ones.
/// U-Net's 64 -> 32 channels, 56x56 -> 112x112, batch 1, AMD EPYC (AVX2),
/// 1 thread: 1.4 ms against the deconvolution's 3.3 ms (measured with an
/// NCHW interleave, before this one kept the blocking).
void runOneTapPerPixel(const OpCall& c, const Dims4& xd, const Dims4& wd,
                       const Dims4& yd) {
  const int64_t C = xd[1], K = wd[1], KH = wd[2], KW = wd[3], taps = KH * KW;
  // ONNX's filter is C x K x KH x KW; the 1x1 one (taps * K) x C.
  const std::shared_ptr<const Tensor> pointwise =
      derivedTensor(c.in[1], "pointwise-rtk|", {taps * K, C, 1, 1},
                    [&](const float* from, float* to) {
                      for (int64_t ci = 0; ci < C; ++ci)
                        for (int64_t k = 0; k < K; ++k)
                          for (int64_t tap = 0; tap < taps; ++tap)
                            to[(tap * K + k) * C + ci] =
                                from[(ci * K + k) * taps + tap];
                    });
  OwnedTensor z({xd[0], taps * K, xd[2], xd[3]});
  runConv(c.in[0], pointwise.get(), ConvArgs{}, PostOps{}, exactAt(c.knob),
          &z.t);
  const Interleave il = interleaveLayout(&z.t, K);
  const int64_t b = il.block;
  std::unique_ptr<PoolBuffer> hold;
  const int64_t H = xd[2], W = xd[3];
  const auto* zp = static_cast<const float*>(
      memoryAs(&z.t, {{xd[0], taps * K, H, W}, dt::f32, il.layout}, hold)
          .get_data_handle());
  auto* yp = static_cast<float*>(
      outputMemory(c.out, {{yd[0], yd[1], yd[2], yd[3]}, dt::f32, il.layout})
          .get_data_handle());
  // Output row oy = i * KH + r takes row i of the blocks (r, t, kb) of z,
  // pixel j to column j * KW + t: b channels (one block) a pixel.
  const int64_t KB = K / b, OH = yd[2], OW = yd[3];
#pragma omp parallel for collapse(2)
  for (int64_t nk = 0; nk < xd[0] * KB; ++nk)
    for (int64_t oy = 0; oy < OH; ++oy) {
      const int64_t n = nk / KB, kb = nk % KB, i = oy / KH, r = oy % KH;
      float* to = yp + (nk * OH + oy) * OW * b;
      for (int64_t t = 0; t < KW; ++t) {
        const int64_t zb = (n * taps + r * KW + t) * KB + kb;
        const float* from = zp + (zb * H + i) * W * b;
        for (int64_t j = 0; j < W; ++j)
          for (int64_t l = 0; l < b; ++l)
            to[(j * KW + t) * b + l] = from[j * b + l];
      }
    }
}

/// One axis of a transposed convolution split by output phase: the output
/// positions o = stride * m + phase take the taps k = first, first +
/// stride, ... (`count` of them) from input positions m + shift - j (tap
/// first + stride * j), which a forward convolution computes as a window
/// of `count` taps (reversed), padded by `pad` at both ends, whose output
/// position skip + m is the phase's m-th.
struct PhaseAxis {
  int64_t count = 0, pad = 0, skip = 0, first = 0, outputs = 0;
};

PhaseAxis phaseAxis(int64_t in, int64_t taps, int64_t stride, int64_t padLo,
                    int64_t out, int64_t phase) {
  PhaseAxis p;
  p.first = (phase + padLo) % stride;
  p.count = p.first < taps ? (taps - 1 - p.first) / stride + 1 : 0;
  p.outputs = out > phase ? (out - phase + stride - 1) / stride : 0;
  // Input m + shift - j for tap j; the window's tap t = count-1-j reads
  // m - lead + t.
  const int64_t shift = (phase + padLo - p.first) / stride;
  const int64_t lead = p.count - 1 - shift;
  p.pad = std::max<int64_t>({lead, 0, p.outputs + p.count - 1 - lead - in});
  p.skip = p.pad - lead;
  return p;
}

/// True where splitTransposeByPhase() computes the layer: no dilation, and
/// every phase takes at least one tap (a stride no larger than the window).
bool phaseSplitApplies(const TransposeArgs& a, const Dims4& wd) {
  return a.dilH == 1 && a.dilW == 1 && a.strideH <= wd[2] && a.strideW <= wd[3];
}

/// One output phase of splitTransposeByPhase(): its axes and its result.
struct Phase {
  PhaseAxis h, w;
  int64_t r = 0, t = 0;
  std::unique_ptr<OwnedTensor> z;
  std::unique_ptr<PoolBuffer> hold;
  const float* data = nullptr;
};

/// The transposed convolution as strideH * strideW forward convolutions, one
/// per output phase (sub-pixel convolution): phase (r, t) is a convolution
/// of x with the taps that reach its pixels, reversed and transposed into a
/// K x C/G filter, and its result is interleaved into y, in the channel
/// blocking the convolutions chose (8 or 16 channels, as the next layer
/// reads it) where K fills its blocks, else NCHW. Every product is one the
/// deconvolution makes, on oneDNN's forward kernels, where its
/// deconvolution runs the backward-data ones. Batch 1, AMD EPYC (AVX2),
/// 1 thread: U-Net's k3 s2 p1 (32 -> 16 channels, 112x112 -> 224x224)
/// 2.3 ms against 4.9; 128 -> 64 at 28x28 1.8 against 2.2; a k4 s2 p1 of
/// 64 channels at 32x32 2.4 against 3.8, of 256 at 16x16 11.2 against
/// 11.7; a k3 s1 one (a single phase) 0.39 against 0.99.
void splitTransposeByPhase(const OpCall& c, const TransposeArgs& a,
                           const Dims4& xd, const Dims4& wd, const Dims4& yd) {
  const int64_t G = a.groups, Cg = xd[1] / G, Kg = wd[1], K = Kg * G;
  const int64_t sH = a.strideH, sW = a.strideW;
  std::vector<Phase> phases;
  for (int64_t r = 0; r < sH; ++r)
    for (int64_t t = 0; t < sW; ++t) {
      Phase p;
      p.h = phaseAxis(xd[2], wd[2], sH, a.padTop, yd[2], r);
      p.w = phaseAxis(xd[3], wd[3], sW, a.padLeft, yd[3], t);
      p.r = r;
      p.t = t;
      if (p.h.outputs == 0 || p.w.outputs == 0)
        continue;
      // Filter tap (u, v) of the phase's window is ONNX's tap
      // (first + stride * (count-1-u), ...) of the same input channel.
      const PhaseAxis ph = p.h, pw = p.w;
      const std::shared_ptr<const Tensor> f = derivedTensor(
          c.in[1], fmt::format("phase|{}|{}|{}|{}|", sH, sW, r, t),
          {K, Cg, ph.count, pw.count}, [&](const float* from, float* to) {
            for (int64_t k = 0; k < K; ++k)
              for (int64_t ci = 0; ci < Cg; ++ci)
                for (int64_t u = 0; u < ph.count; ++u)
                  for (int64_t v = 0; v < pw.count; ++v) {
                    const int64_t kh = ph.first + sH * (ph.count - 1 - u);
                    const int64_t kw = pw.first + sW * (pw.count - 1 - v);
                    const int64_t cin = (k / Kg) * Cg + ci;
                    to[((k * Cg + ci) * ph.count + u) * pw.count + v] =
                        from[((cin * Kg + k % Kg) * wd[2] + kh) * wd[3] + kw];
                  }
          });
      ConvArgs ca;
      ca.padH = int(ph.pad);
      ca.padW = int(pw.pad);
      ca.groups = int(G);
      p.z = std::make_unique<OwnedTensor>(
          Dims4{xd[0], K, xd[2] + 2 * ph.pad - ph.count + 1,
                xd[3] + 2 * pw.pad - pw.count + 1});
      runConv(c.in[0], f.get(), ca, PostOps{}, exactAt(c.knob), &p.z->t);
      phases.push_back(std::move(p));
    }
  // The layout: the first phase's.
  const Interleave il = interleaveLayout(&phases.front().z->t, K);
  const int64_t b = il.block;
  for (Phase& p : phases) {
    const size_t* zd = p.z->dims;
    p.data = static_cast<const float*>(
        memoryAs(
            &p.z->t,
            {{xd[0], K, int64_t(zd[2]), int64_t(zd[3])}, dt::f32, il.layout},
            p.hold)
            .get_data_handle());
  }
  auto* yp = static_cast<float*>(
      outputMemory(c.out, {{yd[0], yd[1], yd[2], yd[3]}, dt::f32, il.layout})
          .get_data_handle());
  // Output row oy = sH * m + r takes row m of the phases (r, *), each
  // every sW-th pixel from its t on: b channels (one block) a pixel.
  const int64_t planes = xd[0] * K / b, OH = yd[2], OW = yd[3];
#pragma omp parallel for collapse(2)
  for (int64_t nb = 0; nb < planes; ++nb)
    for (int64_t oy = 0; oy < OH; ++oy) {
      float* to = yp + (nb * OH + oy) * OW * b;
      for (const Phase& p : phases) {
        if (p.r != oy % sH)
          continue;
        const int64_t zh = int64_t(p.z->dims[2]), zw = int64_t(p.z->dims[3]);
        const float* from =
            p.data + ((nb * zh + oy / sH + p.h.skip) * zw + p.w.skip) * b;
        for (int64_t q = 0; q < p.w.outputs; ++q)
          for (int64_t i = 0; i < b; ++i)
            to[(sW * q + p.t) * b + i] = from[q * b + i];
      }
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
  if (phaseSplitApplies(a, wd)) {
    splitTransposeByPhase(c, a, xd, wd, yd);
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
