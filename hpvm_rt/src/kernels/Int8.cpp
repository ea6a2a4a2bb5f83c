// Int8.cpp - the int8 engine (Int8.h): quantized activations and weights,
// oneDNN's int8 convolution and inner product, and the value ranges int8
// calibration records.
#include "kernels/Int8.h"

#include "approx/Isa.h"
#include "base/Errors.h"
#include "kernels/DerivedWeights.h"
#include "kernels/Elementwise.h"
#include "kernels/PostOps.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hpvm::rt {
namespace kern {

namespace {

/// The smallest and largest value of x (over its current memory: the zero
/// padding of a blocked layout changes neither the sign test nor the
/// largest magnitude).
std::pair<float, float> valueRange(const Tensor* x) {
  const dnnl::memory cur = currentMemory(x);
  float lo = INFINITY, hi = -INFINITY;
  extendRange(static_cast<const float*>(cur.get_data_handle()),
              static_cast<int64_t>(cur.get_desc().get_size() / sizeof(float)),
              lo, hi);
  return {lo, hi};
}

} // namespace

Int8Quant inputQuant(const KnobSpec& knob, const Tensor* x) {
  if (knob.precision == Precision::INT8) {
    HPVM_ASSERT(knob.hasRange,
                fmt::format("int8 knob {} has no calibrated range", knob.id));
    return int8QuantOf(knob.inLo, knob.inHi);
  }
  const auto [lo, hi] = valueRange(x);
  Int8Quant q = int8QuantOf(lo, hi);
  // The batch's scale is rounded up to a grid of 16 steps per octave (at
  // most 4.4% of the 8-bit range unused): batches of similar ranges
  // quantize alike.
  q.scale = std::exp2(std::ceil(std::log2(q.scale) * 16.f) / 16.f);
  return q;
}

dnnl::memory quantizedSource(const Tensor* x, const dnnl::memory::desc& want,
                             float scale, const PoolBuffer& buf) {
  const dnnl::memory stored = storedMemory(x);
  const dt storedType = stored.get_desc().data_type();
  if ((storedType == dt::u8 || storedType == dt::s8) &&
      storedType == want.data_type() && implOf(x).memScale == scale) {
    if (stored.get_desc() == want)
      return stored;
    dnnl::memory out(want, engine(), buf.get());
    reorder(stored, out);
    return out;
  }
  dnnl::memory out(want, engine(), buf.get());
  reorderScaled(currentMemory(x), out, 1.f / scale);
  return out;
}

Int8Code int8Code(dt srcType, bool convolution) {
  if (approx::int8Vnni())
    return {};
  return {63.f, convolution && srcType == dt::s8};
}

namespace {

/// The name (a string literal, TensorImpl::Derived::name) of int8 weights
/// quantized with \p code, plain or reordered.
const char* int8Name(Int8Code code) {
  HPVM_ASSERT(code.qmax == 127.f || code.qmax == 63.f,
              fmt::format("int8 code qmax {}", code.qmax));
  if (code.qmax == 127.f)
    return code.doubled ? "int8x2" : "int8";
  return code.doubled ? "int8-63x2" : "int8-63";
}

/// The int8 weights of a conv or dense layer in their plain layout
/// \p plainTag: bias and batch norm folded in (foldPostOps), then each
/// output channel quantized symmetrically to -qmax..qmax with its own scale
/// (largest magnitude / qmax; `code`). Cached on w like derivedWeights():
/// `weights` is the plain s8 filter, `bias` the folded fp32 bias, `scales`
/// the per-channel weight scales.
const TensorImpl::Derived& int8Plain(const Tensor* w, const PostOps& post,
                                     const dims& wDims, tag plainTag, int64_t K,
                                     int64_t perK, int64_t kStride,
                                     int64_t kStep, Int8Code code) {
  TensorImpl& impl = implOf(w);
  // (The same weights serve a dense layer on 2-D and on 4-D inputs: the
  // plain layout is part of the request.)
  const RawRequest request(post);
  const char* name = int8Name(code);
  const dnnl::memory::desc plainDesc(wDims, dt::s8, plainTag);
  for (const TensorImpl::Derived& d : impl.derived)
    if (request.matches(d) && d.name == name && d.want == plainDesc &&
        d.plain == plainDesc)
      return d;
  const float* wp = hostData(w);
  std::vector<float> wf(wp, wp + numElems(w)), bf;
  foldPostOps(post, K, perK, kStride, kStep, wf, bf);
  TensorImpl::Derived d;
  d.scales.assign(static_cast<size_t>(K), 1.f);
  d.weights = weightMemory(plainDesc, d);
  int8_t* q = static_cast<int8_t*>(d.weights.get_data_handle());
  for (int64_t k = 0; k < K; ++k) {
    float m = 0.f;
    for (int64_t e = 0; e < perK; ++e)
      m = std::max(m, std::fabs(wf[k * kStride + e * kStep]));
    const float s = m > 0.f && std::isfinite(m) ? m / code.qmax : 1.f;
    const float times = code.doubled ? 2.f : 1.f;
    d.scales[k] = s / times;
    for (int64_t e = 0; e < perK; ++e) {
      const int64_t i = k * kStride + e * kStep;
      q[i] = static_cast<int8_t>(
          times * std::clamp(std::nearbyint(wf[i] / s), -code.qmax, code.qmax));
    }
  }
  d.bias = dnnl::memory({{K}, dt::f32, tag::x}, engine());
  std::memcpy(d.bias.get_data_handle(), bf.data(), K * sizeof(float));
  request.record(d);
  d.name = name;
  d.want = d.plain = plainDesc;
  return storeDerived(impl, std::move(d));
}

} // namespace

const TensorImpl::Derived& int8Unfolded(const Tensor* w, int64_t groups,
                                        Int8Code code) {
  const Dims4 wd = dims4(w);
  const int64_t K = wd[0], perK = wd[1] * wd[2] * wd[3];
  const dims wDims = groups == 1
                         ? dims{K, wd[1], wd[2], wd[3]}
                         : dims{groups, K / groups, wd[1], wd[2], wd[3]};
  return int8Plain(w, PostOps{}, wDims, groups == 1 ? tag::oihw : tag::goihw, K,
                   perK, perK, 1, code);
}

const float* dequantizedWeights(const Tensor* w, int64_t groups) {
  TensorImpl& impl = implOf(w);
  const std::string key = "int8-dequantized";
  if (const TensorImpl::Derived* found = findDerived(impl, key))
    return static_cast<const float*>(found->weights.get_data_handle());
  const TensorImpl::Derived& plain =
      int8Unfolded(w, groups, int8Code(dt::u8, false));
  const int8_t* q = static_cast<const int8_t*>(plain.weights.get_data_handle());
  const int64_t n = numElems(w), perK = n / dims4(w)[0];
  TensorImpl::Derived d;
  d.key = key;
  d.weights = dnnl::memory({{n}, dt::f32, tag::x}, engine());
  float* out = static_cast<float*>(d.weights.get_data_handle());
  for (int64_t i = 0; i < n; ++i)
    out[i] = float(q[i]) * plain.scales[size_t(i / perK)];
  storeDerived(impl, std::move(d), &plain);
  return out;
}

namespace {

/// The plain int8 weights \p plain reordered into the primitive's layout
/// \p want (which may carry oneDNN's signed-source compensation), cached on
/// w next to them.
dnnl::memory int8Weights(const Tensor* w, const TensorImpl::Derived& plain,
                         const dnnl::memory::desc& want) {
  TensorImpl& impl = implOf(w);
  // Matched raw, as int8Plain() matches: the plain entry's request, name
  // and layout, and \p want.
  HPVM_ASSERT(plain.raw, "int8 weights without their raw request");
  const RawRequest request(plain);
  for (const TensorImpl::Derived& d : impl.derived)
    if (request.matches(d) && d.name == plain.name && d.plain == plain.plain &&
        d.want == want)
      return d.weights;
  TensorImpl::Derived d;
  d.weights = weightMemory(want, d);
  reorder(plain.weights, d.weights);
  request.record(d);
  d.name = plain.name;
  d.plain = plain.plain;
  d.want = want;
  // The plain entry stays (it is what the reordered one comes from).
  return storeDerived(impl, std::move(d), &plain).weights;
}

/// The runtime arguments of an int8 layer for input scale sx: the output
/// scales sx * ws[k] that turn the 32-bit accumulator into real values,
/// and the fp32 bias in accumulator units (oneDNN adds the bias before
/// scaling).
struct Int8Args {
  std::vector<float> scales, bias;
  Int8Args(const TensorImpl::Derived& d, float sx) {
    const size_t K = d.scales.size();
    const float* b = static_cast<const float*>(d.bias.get_data_handle());
    scales.resize(K);
    bias.resize(K);
    for (size_t k = 0; k < K; ++k) {
      scales[k] = sx * d.scales[k];
      bias[k] = b[k] / scales[k];
    }
  }
};

/// The largest output (values) on which convInt8 adds an fp32 residual by
/// a sum post-op into fp32, then quantizes (Chain::Requant).
constexpr int64_t kRequantMaxElems = 32768;

} // namespace

void convInt8(const Tensor* x, const Tensor* w, const ConvArgs& args,
              const PostOps& post, const KnobSpec& knob, Tensor* y,
              const Dims4& xd, const Dims4& wd, const Dims4& yd) {
  const int64_t G = args.groups, K = wd[0], Cg = wd[1];
  const Int8Quant aq = inputQuant(knob, x);
  const dt srcType = aq.u8 ? dt::u8 : dt::s8;
  dims wDims =
      G == 1 ? dims{K, Cg, wd[2], wd[3]} : dims{G, K / G, Cg, wd[2], wd[3]};
  const auto& plain = int8Plain(w, post, wDims, G == 1 ? tag::oihw : tag::goihw,
                                K, Cg * wd[2] * wd[3], Cg * wd[2] * wd[3], 1,
                                int8Code(srcType, true));
  const Int8Args ia(plain, aq.scale);
  // int8_dyn: the batch's input scale changes from batch to batch; oneDNN
  // 2.6 fixes output scales when a primitive is created, so they hold the
  // weight scales only and the input scale multiplies at run time (one
  // primitive per layer). Except where oneDNN 2.6's AVX2 int8 depthwise
  // kernel gets that multiplication wrong (channels not filling its
  // 8-lane blocks: outputs of the last block 0): there the batch's scale
  // is fixed in a primitive per scale, as for int8 (the scale grid of
  // inputQuant keeps them few).
  const bool depthwiseTail = G == K && Cg == 1 && K % 8 != 0;
  const bool dyn = knob.precision == Precision::INT8DYN &&
                   !(depthwiseTail && !approx::haveAvx512());
  // int8 readers next: the result stored as their input, u8 or s8
  // (post.quantizeS8) at their scale qOut: q = saturate(round(v / qOut)) of
  // the fp32 value v the layer would write. Three ways to compute it:
  //  Folded: 1 / qOut folded into the output scales, where the activation
  //    (None or ReLU) commutes with a positive scale and there is no
  //    residual;
  //  Sum: also a residual arriving quantized (chained from the layer that
  //    computed it, in the output's type), added by oneDNN's sum post-op
  //    scaled, dst = outScale * acc + (sr / qOut) * residual, where both
  //    activations commute with the scale;
  //  Tail: any other: the fp32 post-ops as they are (a residual by a
  //    binary add), the last activation's result scaled by 1 / qOut
  //    (postOpsAttr);
  //  Requant: as Tail, on a small output (kRequantMaxElems): the fp32
  //    result with the residual by a sum post-op into a pooled buffer, then
  //    one scaled reorder into y. oneDNN 2.6's brgconv takes no full-tensor
  //    binary add, and the kernel that does (jit:avx512_core_amx) costs a
  //    fixed 8 us a call on AMX (it executes CPUID, 5.8 us in this VM):
  //    ResNet-18's downsampling blocks at batch 1, [1,32,16,16] and
  //    [1,64,8,8]: 11.4 and 10.6 us against 5.0 and 3.4 us; above 32K
  //    output values the extra passes cost more than that.
  float qOut = post.quantizeOut;
  const dt outType = post.quantizeS8 ? dt::s8 : dt::u8;
  const bool residualDims = post.residual && dims4(post.residual) == yd;
  enum class Chain : uint8_t { None, Folded, Sum, Tail, Requant };
  Chain chain = Chain::None;
  float residualScale = 0.f; // Sum: the quantized residual's scale sr
  dnnl::memory residualQ;
  auto residualF32 = [&] {
    return dnnl::memory::desc({yd[0], yd[1], yd[2], yd[3]}, dt::f32, tag::nhwc);
  };
  auto commutes = [](Act a) { return a == Act::None || a == Act::Relu; };
  if (qOut > 0.f && !post.residual) {
    chain = commutes(post.act) ? Chain::Folded : Chain::Tail;
  } else if (qOut > 0.f && residualDims) {
    const TensorImpl& ri = implOf(post.residual);
    chain = Chain::Tail;
    if (!dyn && commutes(post.act) && commutes(post.act2) && ri.memValid &&
        ri.mem.get_desc().data_type() == outType && ri.memScale > 0.f) {
      chain = Chain::Sum;
      residualScale = ri.memScale;
      residualQ = ri.mem;
    } else if (!dyn && approx::isaLevel() >= approx::IsaLevel::Amx &&
               yd[0] * yd[1] * yd[2] * yd[3] <= kRequantMaxElems) {
      chain = Chain::Requant;
    }
  } else {
    qOut = 0.f;
  }
  // The output scales are fixed in the primitive: its key names the
  // version of w (whose weight scales they hold) and the input scale.
  std::string key = "conv8";
  key.reserve(256);
  appendKey(key, xd, K, Cg, wd[2], wd[3], args.padH, args.padW, args.strideH,
            args.strideW, args.dilH, args.dilW, G, srcType, postKey(post),
            residualDims, tensorKey(w), foldKey(post), dyn,
            dyn ? 0.f : aq.scale, qOut, chain, outType);
  if (chain == Chain::Sum)
    appendKey(key, residualScale, descKey(residualQ.get_desc()));
  const Prim& p = cachedPrim(key, [&] {
    std::vector<float> outScales = dyn ? plain.scales : ia.scales;
    if (chain == Chain::Folded || chain == Chain::Sum)
      for (float& f : outScales)
        f /= qOut;
    dnnl::memory::desc src({xd[0], xd[1], xd[2], xd[3]}, srcType, tag::any);
    dnnl::memory::desc wAny(wDims, dt::s8, tag::any);
    dnnl::memory::desc biasDesc({K}, dt::f32, tag::x);
    auto makePd = [&](const dnnl::memory::desc& dst, ResidualAs how) {
      const dnnl::convolution_forward::desc desc = convForwardDesc(
          dnnl::algorithm::convolution_direct, src, wAny, biasDesc, dst, args);
      dnnl::primitive_attr attr =
          chain == Chain::Tail
              ? postOpsAttr(post, how, residualF32(), dyn, 1.f / qOut)
          : chain == Chain::Sum
              ? postOpsAttr(post, how, dst, dyn, 1.f, residualScale / qOut)
              : postOpsAttr(post, how, dst, dyn);
      attr.set_output_scales(1 << 1, outScales);
      const auto pd = approx::convolutionPd(desc, attr, engine());
      Prim made{dnnl::convolution_forward(pd), pd.src_desc(), pd.weights_desc(),
                pd.dst_desc(), how};
      made.binaryIndex = residualPostOpIndex(attr);
      made.reference = isRefImpl(pd);
      return made;
    };
    // The fp32 result in the exact layers' nChw16c where a fast kernel
    // writes it, else where oneDNN likes; the residual as for fp32.
    std::vector<dnnl::memory::desc> dsts{
        dnnl::memory::desc({yd[0], yd[1], yd[2], yd[3]}, dt::f32, tag::any)};
    if (K % 16 == 0)
      dsts.insert(dsts.begin(), dnnl::memory::desc({yd[0], yd[1], yd[2], yd[3]},
                                                   dt::f32, tag::nChw16c));
    if (chain == Chain::Requant)
      dsts = {residualF32()};
    else if (chain != Chain::None)
      dsts = {
          dnnl::memory::desc({yd[0], yd[1], yd[2], yd[3]}, outType, tag::nhwc),
          dnnl::memory::desc({yd[0], yd[1], yd[2], yd[3]}, outType, tag::any)};
    std::vector<ResidualAs> hows{ResidualAs::Split};
    if (post.residual)
      hows = {ResidualAs::Sum, ResidualAs::Split};
    if (chain == Chain::Sum) {
      // The residual's own layout first: it is copied into dst as it is.
      dsts.insert(dsts.begin(), residualQ.get_desc());
      hows = {ResidualAs::Sum};
    } else if (chain == Chain::Tail) {
      hows = {ResidualAs::Binary};
    } else if (chain == Chain::Requant) {
      hows = {ResidualAs::Sum};
    }
    std::optional<Prim> fallback;
    for (const auto& dst : dsts) {
      std::vector<ResidualAs> dstHows = hows;
      if (post.residual && residualDims && chain == Chain::None &&
          dst.data.format_kind == dnnl_blocked)
        dstHows.insert(dstHows.begin(), ResidualAs::Binary);
      for (ResidualAs how : dstHows) {
        try {
          Prim made = makePd(dst, how);
          if (!made.reference)
            return made;
          if (!fallback)
            fallback = made;
        } catch (const dnnl::error&) {
          // No implementation for this combination: try the next.
        }
      }
    }
    // Only oneDNN's reference kernel: correct, slow, and measured so.
    HPVM_ASSERT(fallback.has_value(), "no int8 convolution primitive");
    return *fallback;
  });
  dnnl::memory weights = int8Weights(w, plain, p.weights);
  PoolBuffer srcBuf(p.src.get_size());
  dnnl::memory src = quantizedSource(x, p.src, aq.scale, srcBuf);
  std::optional<PoolBuffer> resultBuf;
  if (chain == Chain::Requant)
    resultBuf.emplace(p.dst.get_size());
  dnnl::memory dst = chain == Chain::Requant
                         ? dnnl::memory(p.dst, engine(), resultBuf->get())
                         : outputMemory(y, p.dst);
  dnnl::memory bias({{K}, dt::f32, tag::x}, engine(),
                    const_cast<float*>(ia.bias.data()));
  float inScale = aq.scale;
  std::unordered_map<int, dnnl::memory> execArgs{{DNNL_ARG_SRC, src},
                                                 {DNNL_ARG_WEIGHTS, weights},
                                                 {DNNL_ARG_BIAS, bias},
                                                 {DNNL_ARG_DST, dst}};
  if (dyn)
    execArgs[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] =
        dnnl::memory({{1, 1, 1, 1}, dt::f32, tag::nchw}, engine(), &inScale);
  std::unique_ptr<PoolBuffer> residualHold;
  if (post.residual && (chain == Chain::Sum || chain == Chain::Tail)) {
    if (chain == Chain::Tail)
      execArgs[DNNL_ARG_ATTR_MULTIPLE_POST_OP(p.binaryIndex) | DNNL_ARG_SRC_1] =
          memoryAs(post.residual, residualF32(), residualHold);
    else if (residualQ.get_desc() == p.dst)
      // The sum post-op adds what dst holds: the residual, copied in.
      parallelCopy(dst.get_data_handle(), residualQ.get_data_handle(),
                   p.dst.get_size());
    else
      reorder(residualQ, dst);
    PostOps added = post;
    added.residual = nullptr;
    executeLayer(p, added, std::move(execArgs));
  } else {
    executeLayer(p, post, std::move(execArgs));
  }
  if (chain == Chain::Requant)
    reorderScaled(
        dst,
        outputMemory(y, dnnl::memory::desc({yd[0], yd[1], yd[2], yd[3]},
                                           outType, tag::nhwc)),
        1.f / qOut);
  if (qOut > 0.f)
    implOf(y).memScale = qOut;
  if (chain == Chain::None && post.residual && p.residual == ResidualAs::Split)
    runAdd(y, post.residual, post.act2, post.act2Lo, post.act2Hi, KnobSpec{},
           y);
}

void denseInt8(const Tensor* x, const Tensor* w, const PostOps& post,
               const KnobSpec& knob, Tensor* y) {
  const Dims4 xd = dims4(x), wd = dims4(w);
  const int64_t M = xd[0], K = xd[1] * xd[2] * xd[3], N = wd[3];
  const Int8Quant aq = inputQuant(knob, x);
  const dt srcType = aq.u8 ? dt::u8 : dt::s8;
  const dims wDims{N, xd[1], xd[2], xd[3]};
  const auto& plain = int8Plain(w, post, wDims, tag::ihwo, N, K, 1, N,
                                int8Code(srcType, false));
  const Int8Args ia(plain, aq.scale);
  const dnnl::memory::desc dstDesc({M, N}, dt::f32, tag::nc);
  std::string key =
      fmt::format(FMT_COMPILE("ip8|{}x{}x{}x{}|{}|{}|{}"), xd[0], xd[1], xd[2],
                  xd[3], N, static_cast<int>(srcType), postKey(post));
  const Prim& p = cachedPrim(key, [&] {
    dnnl::inner_product_forward::desc desc(
        dnnl::prop_kind::forward_inference,
        dnnl::memory::desc({xd[0], xd[1], xd[2], xd[3]}, srcType, tag::any),
        dnnl::memory::desc(wDims, dt::s8, tag::any),
        dnnl::memory::desc({N}, dt::f32, tag::x), dstDesc);
    auto make = [&](ResidualAs how) {
      dnnl::primitive_attr attr = postOpsAttr(post, how);
      attr.set_output_scales(1 << 1, {DNNL_RUNTIME_F32_VAL});
      dnnl::inner_product_forward::primitive_desc pd(desc, attr, engine());
      Prim made{dnnl::inner_product_forward(pd), pd.src_desc(),
                pd.weights_desc(), pd.dst_desc(), how};
      made.reference = isRefImpl(pd);
      return made;
    };
    // The residual as a sum post-op, else (only oneDNN's reference kernel
    // or no kernel at all fuses it, as for a 4-D source) added separately.
    try {
      Prim made = make(ResidualAs::Sum);
      if (!post.residual || !made.reference)
        return made;
    } catch (const dnnl::error&) {
      if (!post.residual)
        throw;
    }
    return make(ResidualAs::Split);
  });
  dnnl::memory weights = int8Weights(w, plain, p.weights);
  PoolBuffer srcBuf(p.src.get_size());
  dnnl::memory src = quantizedSource(x, p.src, aq.scale, srcBuf);
  allocHost(y);
  dnnl::memory dst(dstDesc, engine(), y->impl->host);
  dnnl::memory bias({{N}, dt::f32, tag::x}, engine(),
                    const_cast<float*>(ia.bias.data()));
  dnnl::memory scales({{N}, dt::f32, tag::x}, engine(),
                      const_cast<float*>(ia.scales.data()));
  executeLayer(p, post,
               {{DNNL_ARG_SRC, src},
                {DNNL_ARG_WEIGHTS, weights},
                {DNNL_ARG_BIAS, bias},
                {DNNL_ARG_DST, dst},
                {DNNL_ARG_ATTR_OUTPUT_SCALES, scales}});
  markHostWritten(y);
  if (post.residual && p.residual == ResidualAs::Split)
    runAdd(y, post.residual, post.act2, post.act2Lo, post.act2Hi, KnobSpec{},
           y);
}

} // namespace kern

// --- Ranges -----------------------------------------------------------------

void extendRange(const float* data, int64_t n, float& lo, float& hi) {
  float l = lo, h = hi;
#pragma omp parallel for reduction(min : l) reduction(max : h) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    l = std::min(l, data[i]);
    h = std::max(h, data[i]);
  }
  lo = l;
  hi = h;
}

} // namespace hpvm::rt
