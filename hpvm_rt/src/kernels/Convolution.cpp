// Convolution.cpp - runConv: the ordered list of convolution variants
// (kConvVariants) and the exact convolution on oneDNN with fused post-ops
// (bias, folded batch norm, activation, residual sum). The knob picks the
// numerics or hands the convolution to the approximate algorithms of
// namespace approx:
//   FP32 exact  oneDNN, fp32 throughout.
//   FP16        operands (input, weights after batch-norm folding, bias) and
//               the result rounded to binary16; between them, where the CPU
//               has AVX512-FP16, products and block sums in half arithmetic
//               (ConvHalf.cpp, as HPVM's half-precision GPU kernels),
//               elsewhere fp32 arithmetic (emulation).
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
#include "kernels/ConvDepthwise.h"
#include "kernels/ConvGated.h"
#include "kernels/ConvHalf.h"
#include "kernels/ConvIm2col.h"
#include "kernels/ConvLiveTaps.h"
#include "kernels/ConvPerforatedExact.h"
#include "kernels/ConvSampledExact.h"
#include "kernels/ConvWinograd.h"
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
                       ", stride {}x{}, dilation {}x{}, groups {}",
                       xd[0], xd[1], xd[2], xd[3], wd[0], wd[1], wd[2], wd[3],
                       yd[0], yd[1], yd[2], yd[3], a.padH, a.padW, a.strideH,
                       a.strideW, a.dilH, a.dilW, a.groups);
  };
  HPVM_ASSERT(a.groups >= 1 && a.strideH >= 1 && a.strideW >= 1 &&
                  a.padH >= 0 && a.padW >= 0 && a.dilH >= 1 && a.dilW >= 1,
              "bad conv arguments: " + shapes());
  HPVM_ASSERT(xd[1] == wd[1] * a.groups && wd[0] % a.groups == 0,
              "conv channels do not match the groups: " + shapes());
  const int64_t spanH = a.spanH(wd[2]), spanW = a.spanW(wd[3]);
  int64_t Ho = 1 + (xd[2] + 2 * a.padH - spanH) / a.strideH;
  int64_t Wo = 1 + (xd[3] + 2 * a.padW - spanW) / a.strideW;
  HPVM_ASSERT(xd[2] + 2 * a.padH >= spanH && xd[3] + 2 * a.padW >= spanW,
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
  /// x as stored, where exact-depthwise-in-place's applies() takes it.
  mutable std::optional<approx::ChannelBlocks> dwInput = std::nullopt;
  /// The live taps, where exact-live-taps's applies() found dead ones.
  mutable std::optional<LiveTaps> live = std::nullopt;
  /// The regions exact-live-regions's applies() found.
  mutable std::optional<LiveRegions> regions = std::nullopt;

  /// Perforation or sampling that skips something somewhere.
  bool approximate() const {
    return knob.variant != Variant::Exact && knob.rate > 1;
  }
  std::optional<approx::BlockedConv> blocked() const {
    return blockedShape(x, w, args, post, knob, xd, wd, yd);
  }
  /// How the exact convolution computes the knob's precision here: as
  /// numericsOf(), except bf16 on kTinyChannels input channels or fewer,
  /// run as fp32 on bf16-rounded operands (the same products, exact in
  /// fp32, and fp32 sums): oneDNN's bf16 kernels have no fast path for so
  /// few channels (a 3-channel first layer: 0.6-0.7x fp32; 1 channel:
  /// 0.4x).
  Numerics numerics() const;
  /// One filter per input channel (groups = channels = output channels).
  bool depthwise() const {
    return args.groups > 1 && args.groups == wd[0] && wd[1] == 1;
  }
};

/// Input channels up to which a convolution counts as a first layer
/// (ConvCall::numerics(), the "exact-prepadded" variant).
constexpr int64_t kTinyChannels = 3;

Numerics ConvCall::numerics() const {
  Numerics nm = numericsOf(knob);
  if (nm.nativeBf16 && args.groups == 1 && xd[1] <= kTinyChannels) {
    nm.nativeBf16 = false;
    nm.roundOperands = Precision::BF16;
  }
  return nm;
}

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

/// Output pixels of a batch, and input and output channels, from which
/// oneDNN's fp32 Winograd kernels beat its direct ones on a 3x3 window
/// (1 thread, Intel Xeon with AMX: 1.1-3.1x from 14x14 at batch 1 up,
/// 0.97x at 7x7; 1.3-2.0x with 32 channels or more, 0.83-0.96x with 16).
constexpr int64_t kWinogradMinPixels = 144;
constexpr int64_t kWinogradMinChannels = 32;

} // namespace

bool kern::winogradApplies(const ConvArgs& a, const Dims4& xd, const Dims4& wd,
                           const Dims4& yd) {
  return approx::haveAvx512() && a.groups == 1 && !a.dilated() && wd[2] == 3 &&
         wd[3] == 3 && a.strideH == 1 && a.strideW == 1 && xd[1] % 16 == 0 &&
         wd[0] % 16 == 0 && xd[1] >= kWinogradMinChannels &&
         wd[0] >= kWinogradMinChannels &&
         yd[0] * yd[2] * yd[3] >= kWinogradMinPixels;
}

bool kern::useWinograd(const KnobSpec& knob, bool gated, const ConvArgs& a,
                       const Dims4& xd, const Dims4& wd, const Dims4& yd) {
  return knob.precision == Precision::FP32 && knob.variant == Variant::Exact &&
         !gated && winogradApplies(a, xd, wd, yd);
}

namespace {

/// The exact convolution's primitive for c in \p layout; null where the
/// layout is Blocked or Nhwc and oneDNN has no fast kernel for it.
const Prim* exactPrim(const ConvCall& c, ConvLayout layout) {
  const Dims4 &xd = c.xd, &wd = c.wd, &yd = c.yd;
  const ConvArgs& args = c.args;
  const PostOps& post = c.post;
  const Numerics nm = c.numerics();
  const int64_t G = args.groups, K = wd[0], Cg = wd[1];
  const dt inType = nm.nativeBf16 ? dt::bf16 : dt::f32;
  // Depthwise on NHWC: oneDNN's direct kernel (no AMX one exists), so
  // that the AMX layers on either side need no reorders.
  const bool depthwise = c.depthwise();
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
  const bool winograd =
      layout == ConvLayout::Blocked &&
      kern::useWinograd(c.knob, post.gate != nullptr, args, xd, wd, yd);
  appendKey(key, xd, wd, args.padH, args.padW, args.strideH, args.strideW, G,
            args.dilH, args.dilW, inType, postKey(post), residualDims, bf16Out,
            layout, src16, winograd);
  const Prim& p = cachedPrim(key, [&] {
    dims wDims =
        G == 1 ? dims{K, Cg, wd[2], wd[3]} : dims{G, K / G, Cg, wd[2], wd[3]};
    dnnl::memory::desc wAny(wDims, inType, tag::any);
    dnnl::memory::desc biasDesc({K}, dt::f32, tag::x);
    auto makePd = [&](const dnnl::memory::desc& src,
                      const dnnl::memory::desc& dst, ResidualAs how,
                      dnnl::algorithm alg =
                          dnnl::algorithm::convolution_direct) {
      const dnnl::convolution_forward::desc desc =
          convForwardDesc(alg, src, wAny, biasDesc, dst, args);
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
      // fp32 3x3 windows at stride 1: oneDNN's Winograd kernels first
      // (kern::useWinograd()).
      if (winograd)
        for (ResidualAs how : hows) {
          try {
            Prim made = makePd(srcFixed, dstFixed, how,
                               dnnl::algorithm::convolution_winograd);
            if (!made.reference)
              return made;
          } catch (const dnnl::error&) {
            // No Winograd kernel for this residual: try the next.
          }
        }
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

/// The exact convolution (fp32, or fp16/bf16 numerics) with primitive p,
/// reading \p source (rounded as the numerics want) in place of c.x when
/// given.
void runExact(const ConvCall& c, const Prim& p,
              const dnnl::memory* source = nullptr) {
  const Dims4 &wd = c.wd, &yd = c.yd;
  const Numerics nm = c.numerics();
  const int64_t G = c.args.groups, K = wd[0], Cg = wd[1];
  dims wDims =
      G == 1 ? dims{K, Cg, wd[2], wd[3]} : dims{G, K / G, Cg, wd[2], wd[3]};
  dnnl::memory::desc wPlain(wDims, dt::f32, G == 1 ? tag::oihw : tag::goihw);
  // Weights: folded with bias/batch norm and reordered once, then cached.
  const auto& wts =
      derivedWeights(c.w, c.post, wPlain, p.weights, K, Cg * wd[2] * wd[3],
                     Cg * wd[2] * wd[3], 1, nm.roundOperands);
  const dnnl::memory bias = wts.bias;
  // (gatedWeights() may store a derived entry: wts is not used after it.)
  const dnnl::memory weights =
      c.post.gate ? gatedWeights(c.w, wts.weights, c.post.gate) : wts.weights;
  // Source: reordered only if its current layout is not the chosen one.
  std::vector<float> scratch;
  std::unique_ptr<PoolBuffer> srcHold;
  dnnl::memory src;
  if (!source) {
    src = sourceFor(c.x, p.src, nm.roundOperands, scratch, srcHold);
  } else if (source->get_desc() == p.src) {
    src = *source;
  } else {
    srcHold = std::make_unique<PoolBuffer>(p.src.get_size());
    src = dnnl::memory(p.src, engine(), srcHold->get());
    reorder(*source, src);
  }
  // Destination: y keeps the chosen layout for the next layer.
  dnnl::memory dst = outputMemory(c.y, p.dst);
  executeLayer(p, c.post,
               {{DNNL_ARG_SRC, src},
                {DNNL_ARG_WEIGHTS, weights},
                {DNNL_ARG_BIAS, bias},
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

/// The "exact-prepadded" variant: c.x copied into a zero-padded NCHW
/// buffer (rounded as the numerics want), convolved without padding.
void runPrepadded(const ConvCall& c) {
  const int64_t N = c.xd[0], C = c.xd[1], H = c.xd[2], W = c.xd[3];
  const int64_t ph = c.args.padH, pw = c.args.padW;
  const int64_t Hp = H + 2 * ph, Wp = W + 2 * pw;
  PoolBuffer padded(static_cast<size_t>(N * C * Hp * Wp) * sizeof(float));
  float* to = static_cast<float*>(padded.get());
  const float* from = hostData(c.x);
  const Precision round = c.numerics().roundOperands;
#pragma omp parallel for
  for (int64_t plane = 0; plane < N * C; ++plane) {
    float* dst = to + plane * Hp * Wp;
    std::fill(dst, dst + ph * Wp, 0.f);
    for (int64_t h = 0; h < H; ++h) {
      float* row = dst + (ph + h) * Wp;
      std::fill(row, row + pw, 0.f);
      std::copy(from + (plane * H + h) * W, from + (plane * H + h + 1) * W,
                row + pw);
      std::fill(row + pw + W, row + Wp, 0.f);
      roundTo(round, row + pw, W);
    }
    std::fill(dst + (ph + H) * Wp, dst + Hp * Wp, 0.f);
  }
  ConvArgs unpadded = c.args;
  unpadded.padH = unpadded.padW = 0;
  const ConvCall pc{c.x,  c.w, unpadded, c.post, c.knob, c.y, {N, C, Hp, Wp},
                    c.wd, c.yd};
  const Prim* p =
      c.wd[0] % 16 == 0 ? exactPrim(pc, ConvLayout::Blocked) : nullptr;
  if (!p)
    p = exactPrim(pc, ConvLayout::Any);
  const dnnl::memory src(dnnl::memory::desc({N, C, Hp, Wp}, dt::f32, tag::nchw),
                         engine(), padded.get());
  runExact(pc, *p, &src);
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
       if (c.knob.rate <= 1 || !approx::autoPath(approx::perforationPath()))
         return false;
       const std::vector<bool> kept = approx::perforationKept(
           c.knob.variant == Variant::PerfRow ? c.yd[2] : c.yd[3], c.knob.rate,
           c.knob.offset);
       return std::find(kept.begin(), kept.end(), false) == kept.end();
     },
     [](const ConvCall& c) {
       runConv(c.x, c.w, c.args, c.post, exactAt(c.knob), c.y);
     }},
    // Perforation whose skipped rows (columns) are copies of computed ones
    // (an axis of two), bf16 on an AMX CPU below kAmxMinPixels output
    // pixels: the exact convolution (im2col and AMX) and the copy
    // (ConvPerforatedExact.h). VGG16-CIFAR's 2x2 layers, batch 64: 3.8-4.3x
    // fp32 where the perforation engine ran 0.88-0.99x.
    {"perf-as-exact",
     [](const ConvCall& c) {
       return approx::perforationPath() == approx::PerforationPath::Auto &&
              c.knob.precision == Precision::BF16 && c.numerics().nativeBf16 &&
              approx::isaLevel() >= approx::IsaLevel::Amx &&
              c.yd[2] * c.yd[3] < kAmxMinPixels &&
              perforationIsCopy(c.knob, c.post, c.yd);
     },
     [](const ConvCall& c) {
       runConv(c.x, c.w, c.args, c.post, exactAt(c.knob), c.y);
       copySkipped(c.y, c.knob);
     }},
    // Filter sampling where the sampling engines would run slower than the
    // exact convolution (ConvSampledExact.h): the exact convolution of the
    // sampled filter. Batch 64, 1 thread, Intel Xeon (AMX): fp32 1.0x fp32
    // on ResNet-18-CIFAR's 32- and 64-channel layers against the engines'
    // 0.6-0.9x; samp_bf16 rate 2 3.3-9.0x fp32 on VGG16- and
    // ResNet-18-CIFAR's layers against 0.5-5.9x; samp_fp16 in half
    // arithmetic (AVX512-FP16) 1.1-2.1x fp32 on VGG16 (F-MNIST)'s 3x3
    // layers against the emulating engines' 0.6-1.2x.
    {"samp-as-exact",
     [](const ConvCall& c) {
       return approx::perforationPath() == approx::PerforationPath::Auto &&
              sampledAsExact(c.knob, c.args, c.post, c.xd, c.wd, c.yd);
     },
     [](const ConvCall& c) {
       const std::shared_ptr<const Tensor> w = sampledFilter(c.w, c.knob);
       runConv(c.x, w.get(), c.args, c.post, exactAt(c.knob), c.y);
     }},
    // perf_fp16 in half arithmetic where the CPU has AVX512-FP16
    // (ConvHalf.h): the kept rows (columns) on the half kernel, the skipped
    // ones averaged from their neighbours before the post-ops, as the
    // engines fill them.
    {"perf-fp16-native",
     [](const ConvCall& c) {
       return approx::perforationPath() == approx::PerforationPath::Auto &&
              (c.knob.variant == Variant::PerfRow ||
               c.knob.variant == Variant::PerfCol) &&
              convHalfApplies(c.knob, c.args, c.post, c.xd, c.wd, c.yd);
     },
     [](const ConvCall& c) {
       runConvHalf(c.x, c.w, c.args, c.post, c.knob, c.y, c.xd, c.wd, c.yd);
     }},
    // Perforation and sampling on nChw16c activations, the post-ops in the
    // output pass (PerforationBlocked.cpp, SamplingBlocked.cpp).
    {"approx-blocked",
     [](const ConvCall& c) {
       if (!c.approximate() || !approx::autoPath(approx::perforationPath()))
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
    // Exact, a window with taps that read only padding at every output
    // pixel (ConvLiveTaps.h): the convolution of its live taps, by the
    // variants below. DeepLabV3-MobileNetV3's ASPP at 224x224 (960 -> 256
    // channels at 14x14, dilations 24 and 36: the centre tap alone), AMD
    // EPYC (AVX2), batch 1, 1 thread: 1.1-1.2 ms against 15.4 ms a branch.
    // (Not int8: its weight scales come from the whole window.)
    {"exact-live-taps",
     [](const ConvCall& c) {
       if (c.knob.variant != Variant::Exact || isInt8(c.knob.precision) ||
           c.post.gate)
         return false;
       c.live = liveTaps(c.args, c.xd, c.wd, c.yd);
       return c.live.has_value();
     },
     [](const ConvCall& c) {
       const std::shared_ptr<const Tensor> w =
           croppedFilter(c.w, c.live->cropH, c.live->cropW);
       runConv(c.x, w.get(), c.live->args, c.post, c.knob, c.y);
     }},
    // Exact and dilated, a window with taps dead at some output pixels
    // only (ConvLiveTaps.h): region by region, each on its live taps. (Not
    // undilated: on small maps, such as VGG-CIFAR's 2x2, the regions are
    // single pixels, which the variants below compute faster whole.) The
    // ASPP branch at dilation 12 of the same DeepLabV3 (9 regions, 18% of
    // the window's products), same machine: 5.6 ms against 14.1 ms (1
    // thread), 4.0 ms against 9.4 ms (2 threads).
    {"exact-live-regions",
     [](const ConvCall& c) {
       if (!c.args.dilated() || c.knob.variant != Variant::Exact ||
           isInt8(c.knob.precision) || c.post.gate || c.post.residual)
         return false;
       c.regions = liveRegions(c.args, c.xd, c.wd, c.yd);
       return c.regions.has_value();
     },
     [](const ConvCall& c) {
       runConvLiveRegions(*c.regions, c.x, c.w, c.args, c.post, c.knob, c.y);
     }},
    // Exact fp32, a 3x3 window at stride 1 (any dilation), where oneDNN
    // has no Winograd kernel (below AVX-512): F(4x4, 3x3) on nChw8c
    // (ConvWinograd.h). AMD EPYC (AVX2), batch 1, 1 thread, against
    // oneDNN's jit:avx2: 512 -> 512 channels at 28x28 22 ms against 51 ms,
    // 64 -> 64 at 56x56 1.6 ms against 2.6 ms.
    {"exact-winograd",
     [](const ConvCall& c) {
       return convWinogradApplies(c.knob, c.args, c.post, c.xd, c.wd, c.yd);
     },
     [](const ConvCall& c) {
       runConvWinograd(c.x, c.w, c.args, c.post, c.y, c.xd, c.wd, c.yd);
     }},
    // Exact fp16 where the CPU has AVX512-FP16: products and sums in half
    // (ConvHalf.cpp), C and K in blocks of 16, no groups.
    {"exact-fp16-native",
     [](const ConvCall& c) {
       return c.knob.variant == Variant::Exact &&
              convHalfApplies(c.knob, c.args, c.post, c.xd, c.wd, c.yd);
     },
     [](const ConvCall& c) {
       runConvHalf(c.x, c.w, c.args, c.post, c.knob, c.y, c.xd, c.wd, c.yd);
     }},
    // Exact, a first layer (kTinyChannels input channels or fewer) padded
    // by at least its window (the F-MNIST nets' 28 -> 32 pixels): the
    // input padded once, then the unpadded convolution, which oneDNN's
    // direct kernels take (for the padding they take their generic path:
    // 1 -> 16 channels, batch 64: 0.25 ms against 0.8 ms).
    {"exact-prepadded",
     [](const ConvCall& c) {
       return c.args.groups == 1 && c.xd[1] <= kTinyChannels &&
              (c.args.padH >= c.wd[2] || c.args.padW >= c.wd[3]);
     },
     runPrepadded},
    // Exact fp32 or bf16 depthwise, the input stored in another type or
    // layout than oneDNN's kernel reads (ConvDepthwise.cpp): our kernel
    // reads it in place. MobileNet (F-MNIST) in bf16 on AMX, its first
    // depthwise layer after the fp32 first layer: 0.28 ms against 0.6-0.9
    // ms for the reorder to bf16 NHWC and oneDNN's kernel (batch 64).
    {"exact-depthwise-in-place",
     [](const ConvCall& c) {
       c.dwInput = convDepthwiseInput(c.x, c.args, c.post, c.knob, c.xd, c.wd);
       return c.dwInput.has_value();
     },
     [](const ConvCall& c) {
       runConvDepthwise(*c.dwInput, c.w, c.args, c.post, c.knob, c.y, c.xd,
                        c.wd, c.yd);
     }},
    // Exact bf16 on an AMX CPU, fewer than kAmxMinPixels output pixels per
    // image, no residual: im2col and oneDNN's AMX inner product over every
    // pixel of the batch (ConvIm2col.cpp).
    {"exact-amx-im2col",
     [](const ConvCall& c) {
       if (c.yd[2] * c.yd[3] >= kAmxMinPixels || !c.numerics().nativeBf16 ||
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
    // (brdgmm): between AMX pointwise layers, MobileNet-CIFAR in bf16 ran
    // 2.0-2.6x fp32 at batch 64 on 1 thread, 1.5x with nChw16c and a
    // reorder on either side.
    {"exact-amx",
     [](const ConvCall& c) {
       const bool depthwise = c.depthwise();
       if (!c.numerics().nativeBf16 ||
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
  // A gate folds into the filter of the exact fp32 convolution only
  // (runExact).
  // Dilated taps: the exact precisions only (Ops.def's dilated_conv row),
  // on oneDNN's kernels (the variants of our own kernels decline them).
  HPVM_ASSERT(!args.dilated() || knob.variant == Variant::Exact,
              "a dilated convolution with an approximate knob");
  HPVM_ASSERT(!post.gate ||
                  (knob.precision == Precision::FP32 &&
                   knob.variant == Variant::Exact && args.groups == 1 &&
                   !args.dilated() &&
                   gateFoldsIntoFilter(dims4(post.gate), call.xd, call.wd)),
              "a gate this convolution cannot fold into its filter");
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
