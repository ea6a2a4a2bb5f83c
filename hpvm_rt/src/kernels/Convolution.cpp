// Convolution.cpp - runConv: the ordered list of convolution variants
// (kConvVariants) and the exact convolution on oneDNN with fused post-ops
// (bias, folded batch norm, activation, residual sum). The knob picks the
// numerics or hands the convolution to the approximate algorithms of
// namespace approx:
//   FP32 exact  oneDNN, fp32 throughout.
//   FP16        operands (input, weights after batch-norm folding, bias) and
//               the result rounded to binary16, fp32 arithmetic between:
//               the CPU stand-in for HPVM's half-precision GPU kernels.
//   BF16        oneDNN bf16 convolution/inner product (bf16 operands, fp32
//               accumulation and result) where the CPU has avx512_bf16 or
//               AMX (AMX: its brgconv kernels on NHWC activations);
//               elsewhere the same numerics emulated by rounding the
//               operands (one warning per process).
//   PerfRow/PerfCol/Samp  approx:: on NCHW host data; the post-ops run
//               in the reference order (bit for bit; tanh as oneDNN's
//               eltwise, as in the exact path) inside the approximate
//               kernel's output pass (approx/Epilogue.h); FP16 variants
//               round operands and result as above.
#include "approx/ConvGeometry.h"
#include "approx/Epilogue.h"
#include "approx/Isa.h"
#include "base/Errors.h"
#include "kernels/ConvApprox.h"
#include "kernels/ConvIm2col.h"
#include "kernels/DerivedWeights.h"
#include "kernels/Int8.h"
#include "kernels/Numerics.h"
#include "kernels/PostOps.h"
#include "kernels/Primitives.h"
#include "kernels/TensorImpl.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hpvm::rt {
using namespace kern;

namespace {

void checkConvShapes(const Dims4& xd, const Dims4& wd, const Dims4& yd,
                     const ConvArgs& a) {
  auto shapes = [&] {
    return fmt::format("x {}x{}x{}x{}, w {}x{}x{}x{}, y {}x{}x{}x{}, pad {}x{}"
                       ", stride {}x{}, groups {}",
                       xd[0], xd[1], xd[2], xd[3], wd[0], wd[1], wd[2], wd[3],
                       yd[0], yd[1], yd[2], yd[3], a.padH, a.padW, a.strideH,
                       a.strideW, a.groups);
  };
  HPVM_ASSERT(a.groups >= 1 && a.strideH >= 1 && a.strideW >= 1 &&
                  a.padH >= 0 && a.padW >= 0,
              "bad conv arguments: " + shapes());
  HPVM_ASSERT(xd[1] == wd[1] * a.groups && wd[0] % a.groups == 0,
              "conv channels do not match the groups: " + shapes());
  int64_t Ho = 1 + (xd[2] + 2 * a.padH - wd[2]) / a.strideH;
  int64_t Wo = 1 + (xd[3] + 2 * a.padW - wd[3]) / a.strideW;
  HPVM_ASSERT(xd[2] + 2 * a.padH >= wd[2] && xd[3] + 2 * a.padW >= wd[3],
              "conv window larger than the padded input: " + shapes());
  HPVM_ASSERT(yd[0] == xd[0] && yd[1] == wd[0] && yd[2] == Ho && yd[3] == Wo,
              "conv output dims wrong: " + shapes());
}

/// One convolution call, as the variants below see it.
struct ConvCall {
  const Tensor* x;
  const Tensor* w;
  const ConvArgs& args;
  const PostOps& post;
  const KnobSpec& knob;
  Tensor* y;
  Dims4 xd, wd, yd;
  /// The primitive exact-amx's or exact-blocked's applies() found, for
  /// its run().
  mutable const Prim* exactChosen = nullptr;

  /// Perforation or sampling that skips something somewhere.
  bool approximate() const {
    return knob.variant != Variant::Exact && knob.rate > 1;
  }
  std::optional<approx::BlockedConv> blocked() const {
    return blockedShape(x, w, args, post, knob, xd, wd, yd);
  }
};

/// True when c's input is in nChw16c now (its last block padded if its
/// channels do not fill it).
bool inputBlocked16(const ConvCall& c) {
  const TensorImpl& in = implOf(c.x);
  return in.memValid && in.mem.get_desc() == blocked16Desc(c.x);
}

/// The activation layouts of an exact convolution's primitive.
enum class ConvLayout : uint8_t {
  Blocked, ///< nChw16c, oneDNN's direct kernels (fp32, and bf16 off AMX).
  Nhwc,    ///< NHWC, taken only from an AMX kernel (brgconv on bf16 tiles).
  Any,     ///< Whatever oneDNN picks, down to its reference kernel.
};

/// True for oneDNN's AMX implementations ("brgconv:avx512_core_amx_bf16").
bool isAmxImpl(const dnnl::primitive_desc_base& pd) {
  return std::strstr(pd.impl_info_str(), "amx") != nullptr;
}

/// The exact convolution's primitive for c in \p layout; null where the
/// layout is Blocked or Nhwc and oneDNN has no fast kernel for it.
const Prim* exactPrim(const ConvCall& c, ConvLayout layout) {
  const Dims4 &xd = c.xd, &wd = c.wd, &yd = c.yd;
  const ConvArgs& args = c.args;
  const PostOps& post = c.post;
  const Numerics nm = numericsOf(c.knob);
  const int64_t G = args.groups, K = wd[0], Cg = wd[1];
  const dt inType = nm.nativeBf16 ? dt::bf16 : dt::f32;
  // Depthwise on NHWC: oneDNN's direct kernel (no AMX one exists), so
  // that the AMX layers on either side need no reorders.
  const bool depthwise = G > 1 && G == K && Cg == 1;
  // bf16 chains: the result stored as bf16 when the layers reading it
  // compute in bf16 too (they would round it to bf16 anyway).
  const bool bf16Out = post.bf16Out && nm.nativeBf16;
  const dt outType = bf16Out ? dt::bf16 : dt::f32;
  // A binary post-op needs the residual with the output's dims.
  const bool residualDims = post.residual && dims4(post.residual) == yd;
  // Channels that do not fill the blocks: nChw16c (padded) in fp32 when
  // the input is in it already, else the layout oneDNN picks.
  const bool src16 =
      xd[1] % 16 == 0 ||
      (layout == ConvLayout::Blocked && inType == dt::f32 && inputBlocked16(c));
  std::string key = "conv";
  key.reserve(160);
  appendKey(key, xd, wd, args.padH, args.padW, args.strideH, args.strideW, G,
            inType, postKey(post), residualDims, bf16Out, layout, src16);
  const Prim& p = cachedPrim(key, [&] {
    dims wDims =
        G == 1 ? dims{K, Cg, wd[2], wd[3]} : dims{G, K / G, Cg, wd[2], wd[3]};
    dnnl::memory::desc wAny(wDims, inType, tag::any);
    dnnl::memory::desc biasDesc({K}, dt::f32, tag::x);
    auto makePd = [&](const dnnl::memory::desc& src,
                      const dnnl::memory::desc& dst, ResidualAs how) {
      dnnl::convolution_forward::desc desc(
          dnnl::prop_kind::forward_inference,
          dnnl::algorithm::convolution_direct, src, wAny, biasDesc, dst,
          {args.strideH, args.strideW}, {args.padH, args.padW},
          {args.padH, args.padW});
      const dnnl::primitive_attr attr = postOpsAttr(post, how, dst);
      const auto pd = approx::convolutionPd(desc, attr, engine());
      Prim made{dnnl::convolution_forward(pd), pd.src_desc(), pd.weights_desc(),
                pd.dst_desc(), how};
      made.binaryIndex = residualPostOpIndex(attr);
      made.reference = isRefImpl(pd);
      made.amx = isAmxImpl(pd);
      made.brgconv = std::strncmp(pd.impl_info_str(), "brg", 3) == 0;
      return made;
    };
    // The residual, best first: read in place by a binary post-op (needs
    // the output's layout fixed in advance), copied into dst for a sum
    // post-op, or added separately. A choice is taken unless oneDNN offers
    // only its slow reference kernel for it.
    std::vector<ResidualAs> hows{ResidualAs::Split};
    if (post.residual)
      hows = {ResidualAs::Sum, ResidualAs::Split};
    if (layout != ConvLayout::Any) {
      const bool nhwc = layout == ConvLayout::Nhwc;
      dnnl::memory::desc srcFixed({xd[0], xd[1], xd[2], xd[3]}, inType,
                                  nhwc    ? tag::nhwc
                                  : src16 ? tag::nChw16c
                                          : tag::any);
      dnnl::memory::desc dstFixed({yd[0], yd[1], yd[2], yd[3]}, outType,
                                  nhwc ? tag::nhwc : tag::nChw16c);
      if (residualDims)
        hows.insert(hows.begin(), ResidualAs::Binary);
      // On NHWC, AMX brgconv first: oneDNN's older AMX kernel takes a
      // binary residual brgconv declines, at a fifth of its speed
      // (ResNet-18-CIFAR, 16 channels at 32x32, batch 64: 8 ms vs 1.5 ms).
      for (const bool brgOnly : {nhwc, false}) {
        for (ResidualAs how : hows) {
          try {
            Prim made = makePd(srcFixed, dstFixed, how);
            if (!made.reference && (!nhwc || made.amx || depthwise) &&
                (!brgOnly || made.brgconv))
              return made;
          } catch (const dnnl::error&) {
            // No implementation in this layout: try the next.
          }
        }
      }
      return Prim{}; // declined (cached as such)
    }
    dnnl::memory::desc srcAny({xd[0], xd[1], xd[2], xd[3]}, inType, tag::any);
    dnnl::memory::desc dstAny({yd[0], yd[1], yd[2], yd[3]}, outType, tag::any);
    for (ResidualAs how : hows) {
      Prim made = makePd(srcAny, dstAny, how);
      if (how == ResidualAs::Split || !made.reference)
        return made;
    }
    HPVM_UNREACHABLE("no convolution primitive chosen");
  });
  return p.prim ? &p : nullptr;
}

/// The exact convolution (fp32, or fp16/bf16 numerics) with primitive p.
void runExact(const ConvCall& c, const Prim& p) {
  const Dims4 &wd = c.wd, &yd = c.yd;
  const Numerics nm = numericsOf(c.knob);
  const int64_t G = c.args.groups, K = wd[0], Cg = wd[1];
  dims wDims =
      G == 1 ? dims{K, Cg, wd[2], wd[3]} : dims{G, K / G, Cg, wd[2], wd[3]};
  dnnl::memory::desc wPlain(wDims, dt::f32, G == 1 ? tag::oihw : tag::goihw);
  // Weights: folded with bias/batch norm and reordered once, then cached.
  const auto& wts =
      derivedWeights(c.w, c.post, wPlain, p.weights, K, Cg * wd[2] * wd[3],
                     Cg * wd[2] * wd[3], 1, nm.roundOperands);
  // Source: reordered only if its current layout is not the chosen one.
  std::vector<float> scratch;
  std::unique_ptr<PoolBuffer> srcHold;
  dnnl::memory src = sourceFor(c.x, p.src, nm.roundOperands, scratch, srcHold);
  // Destination: y keeps the chosen layout for the next layer.
  dnnl::memory dst = outputMemory(c.y, p.dst);
  executeLayer(p, c.post,
               {{DNNL_ARG_SRC, src},
                {DNNL_ARG_WEIGHTS, wts.weights},
                {DNNL_ARG_BIAS, wts.bias},
                {DNNL_ARG_DST, dst}});
  // With 16 channels, NHWC is byte for byte nChw16c: say so, and the next
  // layer (blocked, like every fp32 layer) reads it without a reorder (a
  // first convolution whose padding the direct kernels reject writes NHWC).
  if (K == 16 && p.dst == dnnl::memory::desc({yd[0], 16, yd[2], yd[3]}, dt::f32,
                                             tag::nhwc)) {
    TensorImpl& impl = implOf(c.y);
    impl.mem = dnnl::memory(
        dnnl::memory::desc({yd[0], 16, yd[2], yd[3]}, dt::f32, tag::nChw16c),
        engine(), impl.memBuf);
  }
  if (c.post.residual && p.residual == ResidualAs::Split)
    runAdd(c.y, c.post.residual, c.post.act2, c.post.act2Lo, c.post.act2Hi,
           KnobSpec{}, c.y);
  roundResult(nm.roundOutput, c.y);
}

/// Output pixels per image below which oneDNN's AMX brgconv (a few output
/// pixels per tile pass) loses to im2col + AMX inner product (all pixels of
/// the batch as rows): VGG16-CIFAR at batch 64, 2 threads, over fp32:
/// 512x4x4 > 512 1.1-1.3x brgconv, 2.6-3.7x im2col; 2x2 1.3x / 2.5x; 8x8
/// about even (2.2-2.5x both); 16x16 brgconv 3.7-6x, im2col 2x.
constexpr int64_t kAmxMinPixels = 64;
/// ... and below which it loses even to the direct avx512_bf16 kernels on
/// nChw16c (512x2x2 > 512, batch 16: brgconv 0.77x fp32, direct 1.4x).
constexpr int64_t kBrgconvMinPixels = 16;

/// One way of computing a convolution, in oneDNN's implementation-list
/// style: applies() says whether it computes this call (reading no
/// activation data), run() computes it.
struct ConvVariant {
  const char* name;
  bool (*applies)(const ConvCall&);
  void (*run)(const ConvCall&);
};

/// The convolution variants, best first: runConv runs the first that
/// applies. The knob policy: perforation and sampling go to the
/// approximate engines, int8 to oneDNN's int8 kernels, everything else
/// (fp32, fp16 and bf16 numerics) to oneDNN's exact convolution. The layout
/// policy: activations stay in nChw16c (channels in blocks of 16) wherever
/// a fast kernel reads and writes it, measured fastest here for fp32 and
/// for bf16 without AMX, most of all on the small spatial sizes of CIFAR
/// nets; AMX bf16 kernels take NHWC only.
const ConvVariant kConvVariants[] = {
    // A perforation that skips nothing on this output (an offset beyond a
    // short axis) is the exact convolution at the knob's precision.
    {"perforation-skips-nothing",
     [](const ConvCall& c) {
       if (c.knob.variant != Variant::PerfRow &&
           c.knob.variant != Variant::PerfCol)
         return false;
       if (c.knob.rate <= 1 ||
           approx::perforationPath() != approx::PerforationPath::Auto)
         return false;
       const std::vector<bool> kept = approx::perforationKept(
           c.knob.variant == Variant::PerfRow ? c.yd[2] : c.yd[3], c.knob.rate,
           c.knob.offset);
       return std::find(kept.begin(), kept.end(), false) == kept.end();
     },
     [](const ConvCall& c) {
       KnobSpec exact = c.knob;
       exact.variant = Variant::Exact;
       exact.rate = 1;
       exact.offset = 0;
       runConv(c.x, c.w, c.args, c.post, exact, c.y);
     }},
    // Perforation and sampling on nChw16c activations, the post-ops in the
    // output pass (PerforationBlocked.cpp, SamplingBlocked.cpp).
    {"approx-blocked",
     [](const ConvCall& c) {
       if (!c.approximate() ||
           approx::perforationPath() != approx::PerforationPath::Auto)
         return false;
       const std::optional<approx::BlockedConv> bc = c.blocked();
       return bc && (c.knob.variant == Variant::Samp
                         ? approx::sampledBlockedApplies(*bc)
                         : approx::perforatedBlockedApplies(*bc));
     },
     [](const ConvCall& c) {
       convApproxBlocked(c.x, c.w, c.args, c.post, c.knob, c.y, c.xd, c.wd,
                         c.yd);
     }},
    // Perforation and sampling of any geometry, on NCHW host data
    // (ConvPerforation.cpp, ConvSampling.cpp).
    {"approx-nchw", [](const ConvCall& c) { return c.approximate(); },
     [](const ConvCall& c) {
       convApprox(c.x, c.w, c.args, c.post, c.knob, c.y, c.xd, c.wd, c.yd);
     }},
    // int8 and int8_dyn: oneDNN's int8 convolution, nChw16c or NHWC.
    {"int8", [](const ConvCall& c) { return isInt8(c.knob.precision); },
     [](const ConvCall& c) {
       convInt8(c.x, c.w, c.args, c.post, c.knob, c.y, c.xd, c.wd, c.yd);
     }},
    // Exact bf16 on an AMX CPU, fewer than kAmxMinPixels output pixels per
    // image, no residual: im2col and oneDNN's AMX inner product over every
    // pixel of the batch (ConvIm2col.cpp).
    {"exact-amx-im2col",
     [](const ConvCall& c) {
       if (c.yd[2] * c.yd[3] >= kAmxMinPixels ||
           !convIm2colBf16Applies(c.args, c.post, c.knob))
         return false;
       c.exactChosen = im2colPrim(c.post, c.xd, c.wd, c.yd);
       return c.exactChosen != nullptr;
     },
     [](const ConvCall& c) {
       runConvIm2colBf16(*c.exactChosen, c.x, c.w, c.args, c.post, c.y, c.xd,
                         c.wd, c.yd);
     }},
    // Exact bf16 on an AMX CPU, not grouped, at least kBrgconvMinPixels
    // output pixels per image: oneDNN's AMX brgconv on NHWC activations
    // (bf16 in and, chained, out). On VGG16-CIFAR's 16x16 and 32x32 layers
    // 3-6x the fp32 kernels, where the direct avx512_bf16 kernels on nChw16c
    // run 0.55-0.9x. Depthwise too, of any size, on oneDNN's NHWC kernel
    // (brdgmm): between AMX pointwise layers, MobileNet-CIFAR in bf16 runs
    // 2.6x fp32 at batch 64 on 1 thread, 1.5x with nChw16c and a reorder
    // on either side.
    {"exact-amx",
     [](const ConvCall& c) {
       const bool depthwise =
           c.args.groups > 1 && c.args.groups == c.wd[0] && c.wd[1] == 1;
       if (!numericsOf(c.knob).nativeBf16 ||
           approx::isaLevel() < approx::IsaLevel::Amx ||
           (c.args.groups != 1 && !depthwise) ||
           (!depthwise && c.yd[2] * c.yd[3] < kBrgconvMinPixels))
         return false;
       c.exactChosen = exactPrim(c, ConvLayout::Nhwc);
       return c.exactChosen != nullptr;
     },
     [](const ConvCall& c) { runExact(c, *c.exactChosen); }},
    // Exact, K in blocks of 16, not grouped (or depthwise): oneDNN's
    // direct kernels on nChw16c (for bf16 without AMX too: 1.9-2.2x over fp32
    // on
    // VGG16's layers against 1.7-1.8x in the layouts oneDNN picks). In fp32
    // on an input already in nChw16c, any K (the last block padded): oneDNN
    // would pick NHWC there, at the price of a reorder of the input and
    // one of the output for the next blocked layer (EfficientNet's 24 and
    // 40 channel projections: 11% of its time; MobileNet v3's 72, 120, 184
    // and 200 channel depthwise convolutions).
    {"exact-blocked",
     [](const ConvCall& c) {
       const int64_t K = c.wd[0], G = c.args.groups;
       if ((G != 1 && G != K) ||
           (K % 16 != 0 &&
            (c.knob.precision != Precision::FP32 || !inputBlocked16(c))))
         return false;
       c.exactChosen = exactPrim(c, ConvLayout::Blocked);
       return c.exactChosen != nullptr;
     },
     [](const ConvCall& c) { runExact(c, *c.exactChosen); }},
    // Exact, any geometry (odd groups, K not in blocks of 16): the layouts
    // oneDNN picks, down to its reference kernel.
    {"exact-any", [](const ConvCall&) { return true; },
     [](const ConvCall& c) { runExact(c, *exactPrim(c, ConvLayout::Any)); }},
};

thread_local const char* lastConvVariantName = "";

} // namespace

void runConv(const Tensor* x, const Tensor* w, const ConvArgs& args,
             const PostOps& post, const KnobSpec& knob, Tensor* y) {
  applyThreads();
  HPVM_ASSERT(x != y && post.residual != y,
              "conv output must not alias its input or residual");
  const ConvCall call{x, w, args, post, knob, y, dims4(x), dims4(w), dims4(y)};
  checkConvShapes(call.xd, call.wd, call.yd, args);
  for (const ConvVariant& v : kConvVariants)
    if (v.applies(call)) {
      v.run(call);
      lastConvVariantName = v.name;
      return;
    }
  HPVM_UNREACHABLE("no convolution variant applies");
}

const char* lastConvVariant() { return lastConvVariantName; }

} // namespace hpvm::rt
