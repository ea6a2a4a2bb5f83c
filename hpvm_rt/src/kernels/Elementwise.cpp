// Elementwise.cpp - element-wise layers on oneDNN: activations (eltwise)
// and the binary add and multiply with broadcasting.
#include "kernels/Elementwise.h"

#include "base/Errors.h"
#include "kernels/Numerics.h"
#include "kernels/Primitives.h"
#include "kernels/Reference.h"
#include "kernels/TensorImpl.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

namespace hpvm::rt {
using namespace kern;

namespace kern {

EltwiseSteps eltwiseSteps(Act a, float lo, float hi) {
  using alg = dnnl::algorithm;
  switch (a) {
  case Act::None:
    return {};
  case Act::Relu:
    return {{{alg::eltwise_relu}}, 1};
  case Act::Clip:
    return {{{alg::eltwise_clip, lo, hi}}, 1};
  case Act::Tanh:
    return {{{alg::eltwise_tanh}}, 1};
  case Act::Sigmoid:
    return {{{alg::eltwise_logistic}}, 1};
  case Act::HardSigmoid:
    return {{{alg::eltwise_linear, lo, hi}, {alg::eltwise_clip, 0.f, 1.f}}, 2};
  case Act::HardSwish:
    return {{{alg::eltwise_hardswish}}, 1};
  case Act::Gelu:
    return {{{alg::eltwise_gelu_erf}}, 1};
  case Act::LeakyRelu: // (oneDNN's relu: alpha * x below zero)
    return {{{alg::eltwise_relu, lo}}, 1};
  case Act::Silu: // (oneDNN's swish: x * sigmoid(alpha * x))
    return {{{alg::eltwise_swish, 1.f}}, 1};
  }
  HPVM_UNREACHABLE("eltwiseSteps of an invalid Act");
}

namespace {

/// The algorithms computing what \p a computes forward, \p a first.
/// oneDNN 2.6's JIT kernels keep one eltwise injector per algorithm in a
/// post-op chain, set up with the parameters of its first entry: a later
/// entry of that algorithm with other parameters (a clip, a residual add,
/// another clip) computes with the first one's. Another name for the same
/// function gets an injector of its own.
std::vector<dnnl::algorithm> sameFunction(dnnl::algorithm a, float alpha) {
  using alg = dnnl::algorithm;
  switch (a) {
  case alg::eltwise_relu: // (the use_dst variant needs alpha >= 0)
    if (alpha >= 0.f)
      return {a, alg::eltwise_relu_use_dst_for_bwd};
    return {a};
  case alg::eltwise_clip:
    return {a, alg::eltwise_clip_v2, alg::eltwise_clip_v2_use_dst_for_bwd};
  case alg::eltwise_tanh:
    return {a, alg::eltwise_tanh_use_dst_for_bwd};
  case alg::eltwise_logistic:
    return {a, alg::eltwise_logistic_use_dst_for_bwd};
  default:
    return {a};
  }
}

/// True when \p ops holds no eltwise post-op of algorithm \p a with
/// parameters other than \p alpha and \p beta, or another output scale.
bool fits(const dnnl::post_ops& ops, dnnl::algorithm a, float alpha, float beta,
          float scale = 1.f) {
  for (int i = 0; i < ops.len(); ++i) {
    if (ops.kind(i) != dnnl::primitive::kind::eltwise)
      continue;
    float sc = 0, al = 0, be = 0;
    dnnl::algorithm got{};
    ops.get_params_eltwise(i, sc, got, al, be);
    if (got == a && (al != alpha || be != beta || sc != scale))
      return false;
  }
  return true;
}

/// The name act's step \p e takes in \p ops: the first name for its
/// function that fits the chain (with output scale \p scale), or none.
std::optional<dnnl::algorithm> freeName(const dnnl::post_ops& ops,
                                        const EltwiseStep& e, float scale) {
  for (dnnl::algorithm a : sameFunction(e.alg, e.alpha))
    if (fits(ops, a, e.alpha, e.beta, scale))
      return a;
  return std::nullopt;
}

/// Appends act to \p ops, each step under a free name (its steps are of
/// distinct functions), the last one's result multiplied by \p scale;
/// false, and \p ops unchanged, where a step has none.
bool tryAppendAct(dnnl::post_ops& ops, Act act, float lo, float hi,
                  float scale = 1.f) {
  const EltwiseSteps steps = eltwiseSteps(act, lo, hi);
  dnnl::algorithm names[2];
  for (int i = 0; i < steps.count; ++i) {
    const std::optional<dnnl::algorithm> a =
        freeName(ops, steps.step[i], i + 1 == steps.count ? scale : 1.f);
    if (!a)
      return false;
    names[i] = *a;
  }
  for (int i = 0; i < steps.count; ++i)
    ops.append_eltwise(i + 1 == steps.count ? scale : 1.f, names[i],
                       steps.step[i].alpha, steps.step[i].beta);
  return true;
}

} // namespace

void appendAct(dnnl::post_ops& ops, Act a, float lo, float hi, float scale) {
  if (a != Act::None && scale != 1.f && tryAppendAct(ops, a, lo, hi, scale))
    return;
  HPVM_ASSERT(tryAppendAct(ops, a, lo, hi),
              "an activation that cannot share this post-op chain "
              "(actsChain() keeps such a pair apart)");
  if (scale != 1.f)
    appendScale(ops, scale);
}

void appendScale(dnnl::post_ops& ops, float s) {
  using alg = dnnl::algorithm;
  if (fits(ops, alg::eltwise_linear, s, 0.f))
    ops.append_eltwise(1.f, alg::eltwise_linear, s, 0.f);
  else if (fits(ops, alg::eltwise_pow, s, 1.f))
    ops.append_eltwise(1.f, alg::eltwise_pow, s, 1.f);
  else
    HPVM_UNREACHABLE("appendScale: no free name for a scale");
}

std::string actKey(Act a, float lo, float hi) {
  std::string key;
  appendKey(key, static_cast<int32_t>(a), lo, hi);
  return key;
}

void eltwise(const dnnl::memory& src, const dnnl::memory& dst, Act act,
             float lo, float hi) {
  if (act == Act::None) {
    if (src.get_data_handle() != dst.get_data_handle())
      parallelCopy(dst.get_data_handle(), src.get_data_handle(),
                   src.get_desc().get_size());
    return;
  }
  // One primitive per step, the first from src, the others in place on dst.
  const EltwiseSteps steps = eltwiseSteps(act, lo, hi);
  for (int i = 0; i < steps.count; ++i) {
    const EltwiseStep& e = steps.step[i];
    const std::string key =
        fmt::format(FMT_COMPILE("elt|{}|{}|{}"), descKey(src.get_desc()),
                    actKey(act, lo, hi), i);
    const Prim& p = cachedPrim(key, [&] {
      dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference,
                                       e.alg, src.get_desc(), e.alpha, e.beta);
      dnnl::eltwise_forward::primitive_desc pd(desc, engine());
      return Prim{
          dnnl::eltwise_forward(pd), src.get_desc(), {}, src.get_desc()};
    });
    p.prim.execute(stream(),
                   {{DNNL_ARG_SRC, i == 0 ? src : dst}, {DNNL_ARG_DST, dst}});
    stream().wait();
  }
}

} // namespace kern

bool actsChain(Act a, float aLo, float aHi, Act b, float bLo, float bHi) {
  dnnl::post_ops ops;
  return tryAppendAct(ops, a, aLo, aHi) && tryAppendAct(ops, b, bLo, bHi);
}

// --- Activations ------------------------------------------------------------

void runAct(const Tensor* x, Act act, float lo, float hi, const KnobSpec& knob,
            Tensor* y) {
  applyThreads();
  HPVM_ASSERT(numElems(y) == numElems(x),
              fmt::format("activation output {} differs from input {}",
                          dimsStr(y), dimsStr(x)));
  // ReLU (and a clip to bounds the precision represents) selects input
  // values or bounds: on input already rounded to the knob's precision the
  // result is rounded too, and needs no rounding pass.
  auto representable = [&](float v) {
    float r = v;
    roundTo(knob.precision, &r, 1);
    return r == v;
  };
  const bool selects =
      act == Act::None || act == Act::Relu ||
      (act == Act::Clip && representable(lo) && representable(hi));
  const bool rounded = selects && alreadyRounded(x, knob.precision);
  dnnl::memory src = currentMemory(x);
  dnnl::memory dst = sameLayoutOutput(x, src, y);
  eltwise(src, dst, act, lo, hi);
  markInPlace(y, dst);
  keepOrRound(rounded, knob.precision, y);
}

// --- Add --------------------------------------------------------------------

namespace {

/// The binary primitive dst = act(src0 <alg> src1), dst in src0's layout.
Prim binaryPrim(dnnl::algorithm alg, const dnnl::memory::desc& src0,
                const dnnl::memory::desc& src1, Act act, float lo, float hi) {
  dnnl::binary::desc desc(alg, src0, src1, src0);
  dnnl::post_ops ops;
  appendAct(ops, act, lo, hi);
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  dnnl::binary::primitive_desc pd(desc, attr, engine());
  Prim made{dnnl::binary(pd), pd.src_desc(0), {}, pd.dst_desc()};
  made.reference = isRefImpl(pd);
  return made;
}

/// True when act(0) is 0: the zeros of a blocked layout's padding stay.
bool keepsZero(Act act, float lo, float hi) {
  float v = 0.f;
  ref::act(&v, 1, act, lo, hi, &v);
  return v == 0.f;
}

/// Operands \p s0 and \p s1 as one flat array each (1-D, of every element
/// they store), when that is the same computation: one layout, dense, and
/// a padding that stays zero or that zeroChannelPadding() restores.
std::optional<dnnl::memory::desc> flatView(const dnnl::memory::desc& s0,
                                           const dnnl::memory::desc& s1,
                                           Act act, float lo, float hi) {
  if (s0 != s1 || s0.data.format_kind != dnnl_blocked || s0.data.offset0 != 0)
    return std::nullopt;
  int64_t count = 1;
  for (int i = 0; i < s0.data.ndims; ++i)
    count *= s0.data.padded_dims[i];
  const size_t bytes = dnnl::memory::data_type_size(s0.data_type());
  if (s0.get_size() != static_cast<size_t>(count) * bytes)
    return std::nullopt; // a strided view (a channel slice of a concat)
  if (hasChannelPadding(s0) && !keepsZero(act, lo, hi) &&
      !channelBlock(s0).has_value())
    return std::nullopt;
  return dnnl::memory::desc({count}, s0.data_type(), tag::a);
}

/// \p m's buffer described as \p flat.
dnnl::memory asFlat(const dnnl::memory& m, const dnnl::memory::desc& flat) {
  return dnnl::memory(flat, engine(), m.get_data_handle());
}

/// y = act(src0 <alg> src1) by oneDNN's binary primitive, in a's layout (y
/// may be a), then rounded to the knob's precision.
void runBinary(dnnl::algorithm alg, const Tensor* a, const dnnl::memory& src0,
               const dnnl::memory& src1, Act act, float lo, float hi,
               const KnobSpec& knob, Tensor* y) {
  // oneDNN 2.6's binary kernel with an eltwise post-op computes wrong
  // values on blocked layouts other than a full nChw16c: on aBcd4b and
  // nChw8c (a grouped convolution's output) about half of them, writing
  // past the buffer's end when the channels do not fill the last block.
  // Operands of one dense layout need no layout at all: they are combined
  // as flat arrays of the bytes they store, the padding included, which
  // stays zero when act(0) is 0 and is zeroed again otherwise.
  if (const std::optional<dnnl::memory::desc> flat =
          flatView(src0.get_desc(), src1.get_desc(), act, lo, hi)) {
    dnnl::memory dst = sameLayoutOutput(a, src0, y);
    const Prim& p = cachedPrim(
        fmt::format(FMT_COMPILE("binaryflat{}|{}|{}"), static_cast<int>(alg),
                    descKey(*flat), actKey(act, lo, hi)),
        [&] { return binaryPrim(alg, *flat, *flat, act, lo, hi); });
    p.prim.execute(stream(), {{DNNL_ARG_SRC_0, asFlat(src0, *flat)},
                              {DNNL_ARG_SRC_1, asFlat(src1, *flat)},
                              {DNNL_ARG_DST, asFlat(dst, *flat)}});
    stream().wait();
    if (hasChannelPadding(dst.get_desc()) && !keepsZero(act, lo, hi))
      zeroChannelPadding(dst);
    markInPlace(y, dst);
    roundResult(knob.precision, y);
    return;
  }
  const std::string key = fmt::format(
      FMT_COMPILE("binary{}|{}|{}|{}"), static_cast<int>(alg),
      descKey(src0.get_desc()), descKey(src1.get_desc()), actKey(act, lo, hi));
  const Prim& p = cachedPrim(key, [&] {
    return binaryPrim(alg, src0.get_desc(), src1.get_desc(), act, lo, hi);
  });
  dnnl::memory dst = sameLayoutOutput(a, src0, y);
  // oneDNN 2.6's binary kernel computes wrong values in place on a blocked
  // layout whose channels do not fill the last block (nChw8c with 19
  // channels: AVX2's layout after a convolution): there it writes a
  // scratch buffer, copied back.
  const dnnl::memory::desc desc0 = src0.get_desc();
  const bool padded =
      desc0.data.ndims > 1 && desc0.data.padded_dims[1] != desc0.data.dims[1];
  dnnl::memory out = dst;
  std::unique_ptr<PoolBuffer> scratch;
  if (padded && dst.get_data_handle() == src0.get_data_handle()) {
    scratch = std::make_unique<PoolBuffer>(dst.get_desc().get_size());
    out = dnnl::memory(dst.get_desc(), engine(), scratch->get());
  }
  p.prim.execute(
      stream(),
      {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, out}});
  stream().wait();
  if (scratch)
    std::memcpy(dst.get_data_handle(), scratch->get(),
                dst.get_desc().get_size());
  markInPlace(y, dst);
  roundResult(knob.precision, y);
}

/// b's host values as the second operand \p dims (N x C x 1 x 1, N 1 or
/// a's) of a binary op on a (whose source is \p src0), described in
/// src0's layout: such values are the same bytes in NCHW, NHWC and, when C
/// fills whole blocks, nChw16c or nChw8c. Operands in one layout select
/// oneDNN's vectorised kernel; mixed ones its reference kernel (about 100
/// times slower: the SE gates of EfficientNet after int8 convolutions, whose
/// output is NHWC, took 87% of its time).
dnnl::memory spatialBroadcast(const Tensor* b, const dims& d, const Tensor* a,
                              const dnnl::memory& src0) {
  const dnnl::memory::desc s = src0.get_desc();
  const auto is = [&](tag t) {
    return s == dnnl::memory::desc(s.dims(), s.data_type(), t);
  };
  tag t = tag::nchw;
  if (s != nchwDesc(a)) {
    if (is(tag::nhwc))
      t = tag::nhwc;
    else if (d[1] % 16 == 0 && is(tag::nChw16c))
      t = tag::nChw16c;
    else if (d[1] % 8 == 0 && is(tag::nChw8c))
      t = tag::nChw8c;
  }
  return dnnl::memory({d, dt::f32, t}, engine(),
                      const_cast<float*>(hostData(b)));
}

/// A gate loop's product v stored as T: as it is (float), or quantized
/// at 1 / \p inv (s8, u8) as oneDNN's scaled reorder would: rounded to
/// nearest even, saturated.
template <typename T> inline T storeAs(float v, float inv) {
  if constexpr (std::is_same_v<T, float>) {
    (void)inv;
    return v;
  } else {
    constexpr float lo = std::is_signed_v<T> ? -128.f : 0.f;
    constexpr float hi = std::is_signed_v<T> ? 127.f : 255.f;
    return static_cast<T>(std::nearbyint(std::clamp(v * inv, lo, hi)));
  }
}

/// The rows of a gate loop (gateLoop) in one layout: \p B channels a
/// block (1: NCHW or NHWC, by \p nhwc), \p s the source's strides, y
/// of T in the same layout.
template <typename T>
void gateRows(const float* x, T* y, const dnnl_dims_t& s, int64_t N, int64_t C,
              int64_t Cp, int64_t HW, int64_t B, bool nhwc, const Dims4& gd,
              const float* g, float inv) {
  // Gate value of image n, channel c (0 for the padding channels).
  auto gate = [&](int64_t n, int64_t c) {
    return c >= C ? 0.f
                  : g[(gd[0] == 1 ? 0 : n) * gd[1] + (gd[1] == 1 ? 0 : c)];
  };
  if (B > 1) {
    // nChw<B>c: per block of B channels, HW rows of B lanes.
    const int64_t blocks = Cp / B;
#pragma omp parallel for schedule(static)
    for (int64_t nb = 0; nb < N * blocks; ++nb) {
      const int64_t n = nb / blocks, cb = nb % blocks;
      float lane[64];
      for (int64_t l = 0; l < B; ++l)
        lane[l] = gate(n, cb * B + l);
      const int64_t base = n * s[0] + cb * s[1];
      if (B == 16) {
        for (int64_t p = 0; p < HW; ++p)
#pragma omp simd
          for (int64_t l = 0; l < 16; ++l)
            y[base + p * 16 + l] =
                storeAs<T>(x[base + p * 16 + l] * lane[l], inv);
      } else {
        for (int64_t p = 0; p < HW; ++p)
          for (int64_t l = 0; l < B; ++l)
            y[base + p * B + l] =
                storeAs<T>(x[base + p * B + l] * lane[l], inv);
      }
    }
    return;
  }
  if (!nhwc) {
    // NCHW: a row of HW values per (image, channel).
#pragma omp parallel for schedule(static)
    for (int64_t nc = 0; nc < N * C; ++nc) {
      const float v = gate(nc / C, nc % C);
      const int64_t base = (nc / C) * s[0] + (nc % C) * HW;
#pragma omp simd
      for (int64_t p = 0; p < HW; ++p)
        y[base + p] = storeAs<T>(x[base + p] * v, inv);
    }
    return;
  }
  // NHWC: a row of C values per pixel.
#pragma omp parallel for schedule(static)
  for (int64_t np = 0; np < N * HW; ++np) {
    const int64_t n = np / HW;
    const float* gn = g + (gd[0] == 1 ? 0 : n) * gd[1];
    const int64_t base = n * s[0] + (np % HW) * C;
    if (gd[1] == 1) {
#pragma omp simd
      for (int64_t c = 0; c < C; ++c)
        y[base + c] = storeAs<T>(x[base + c] * gn[0], inv);
    } else {
#pragma omp simd
      for (int64_t c = 0; c < C; ++c)
        y[base + c] = storeAs<T>(x[base + c] * gn[c], inv);
    }
  }
}

/// The layout of an fp32 source a gate loop runs on: channel blocks of
/// B (> 1), NCHW or NHWC (B 1); nullopt for any other.
struct GateLayout {
  int64_t B = 1;
  bool nhwc = false;
};
std::optional<GateLayout> gateLayout(const dnnl::memory::desc& d) {
  const dnnl_memory_desc_t& m = d.data;
  if (m.format_kind != dnnl_blocked || m.ndims != 4 ||
      m.data_type != dnnl_f32 || m.offset0 != 0 ||
      m.padded_dims[0] != m.dims[0] || m.padded_dims[2] != m.dims[2] ||
      m.padded_dims[3] != m.dims[3])
    return std::nullopt;
  const dnnl_blocking_desc_t& b = m.format_desc.blocking;
  if (b.inner_nblks > 1 || (b.inner_nblks == 1 && b.inner_idxs[0] != 1))
    return std::nullopt;
  const int64_t C = m.dims[1], HW = m.dims[2] * m.dims[3];
  const int64_t B = b.inner_nblks == 1 ? b.inner_blks[0] : 1;
  const dnnl_dims_t& s = b.strides;
  if (B > 1 && B <= 64 && s[3] == B && s[2] == m.dims[3] * B && s[1] == HW * B)
    return GateLayout{B, false};
  if (B == 1 && s[3] == 1 && s[2] == m.dims[3] && s[1] == HW)
    return GateLayout{1, false};
  if (B == 1 && s[1] == 1 && s[3] == C && s[2] == m.dims[3] * C)
    return GateLayout{1, true};
  return std::nullopt;
}

/// y = a * g with g (\p gd: N or 1 x C or 1 x 1 x 1, host values) broadcast
/// over a's spatial extent, in one pass over a in its layout (NCHW, NHWC,
/// or channel blocks: a squeeze-and-excitation gate; oneDNN 2.6's binary
/// kernel takes 8x as long on this broadcast). \p dst has a's layout
/// (gateLayout()) in f32 (and may be a), or in s8 or u8: the product
/// quantized at scale 1 / \p inv.
void gateLoop(const dnnl::memory& src, const GateLayout& L, const Dims4& gd,
              const float* g, const dnnl::memory& dst, float inv) {
  const dnnl_memory_desc_t& m = src.get_desc().data;
  const auto* x = static_cast<const float*>(src.get_data_handle());
  void* y = dst.get_data_handle();
  const int64_t N = m.dims[0], C = m.dims[1];
  const int64_t HW = m.dims[2] * m.dims[3], Cp = m.padded_dims[1];
  const dnnl_dims_t& s = m.format_desc.blocking.strides;
  switch (dst.get_desc().data_type()) {
  case dt::s8:
    gateRows(x, static_cast<int8_t*>(y), s, N, C, Cp, HW, L.B, L.nhwc, gd, g,
             inv);
    break;
  case dt::u8:
    gateRows(x, static_cast<uint8_t*>(y), s, N, C, Cp, HW, L.B, L.nhwc, gd, g,
             inv);
    break;
  default:
    gateRows(x, static_cast<float*>(y), s, N, C, Cp, HW, L.B, L.nhwc, gd, g,
             inv);
  }
}

/// y = act(a <alg> b) (y may be a), b broadcast against a (each dim a's or
/// 1, not all a's), on plain NCHW values (a's viewed there if they are
/// held in another layout; mixed layouts would take oneDNN's reference
/// kernel). oneDNN's vectorised kernel broadcasts a second operand of one
/// value per channel, not one of 1 x C x 1 x W or 1 x C x H x 1: the
/// operands are described with their runs of dims merged, each run one
/// that b has (a's extents) or not (1), a run b has at dim 1 (YOLO's
/// anchors 1 x 2 x 1 x L against N x 2 x 1 x L: 1 x 2L against N x 2L).
void broadcastBinary(dnnl::algorithm alg, const Tensor* a, const Tensor* b,
                     Act act, float lo, float hi, const KnobSpec& knob,
                     Tensor* y) {
  const Dims4 ad = dims4(a), bd = dims4(b);
  dims av, bv;
  bool lastHeld = false;
  for (size_t d = 0; d < 4; ++d) {
    if (ad[d] == 1)
      continue;
    const bool held = bd[d] != 1;
    if (!av.empty() && held == lastHeld) {
      av.back() *= ad[d];
      bv.back() *= bd[d];
    } else {
      av.push_back(ad[d]);
      bv.push_back(bd[d]);
      lastHeld = held;
    }
  }
  if (av.size() < 2 || bv[0] != 1) {
    av.insert(av.begin(), 1);
    bv.insert(bv.begin(), 1);
  }
  auto plain = [](const dims& d) {
    dims strides(d.size(), 1);
    for (size_t i = d.size() - 1; i > 0; --i)
      strides[i - 1] = strides[i] * d[i];
    return dnnl::memory::desc(d, dt::f32, strides);
  };
  const dnnl::memory::desc d0 = plain(av), d1 = plain(bv);
  dnnl::memory src0 = currentMemory(a);
  if (src0.get_desc() != nchwDesc(a))
    src0 = dnnl::memory(nchwDesc(a), engine(), const_cast<float*>(hostData(a)));
  const dnnl::memory dst = sameLayoutOutput(a, src0, y);
  const Prim& p = cachedPrim(
      fmt::format(FMT_COMPILE("binarybc{}|{}|{}|{}"), static_cast<int>(alg),
                  descKey(d0), descKey(d1), actKey(act, lo, hi)),
      [&] { return binaryPrim(alg, d0, d1, act, lo, hi); });
  p.prim.execute(
      stream(),
      {{DNNL_ARG_SRC_0, dnnl::memory(d0, engine(), src0.get_data_handle())},
       {DNNL_ARG_SRC_1,
        dnnl::memory(d1, engine(), const_cast<float*>(hostData(b)))},
       {DNNL_ARG_DST, dnnl::memory(d0, engine(), dst.get_data_handle())}});
  stream().wait();
  markInPlace(y, dst);
  roundResult(knob.precision, y);
}

} // namespace

void runAdd(const Tensor* a, const Tensor* b, Act act, float lo, float hi,
            const KnobSpec& knob, Tensor* y) {
  applyThreads();
  const Dims4 ad = dims4(a), bd = dims4(b);
  const AddForm form = addForm(ad, bd);
  HPVM_ASSERT(numElems(y) == numElems(a) && form != AddForm::None,
              fmt::format("add shapes wrong: a {}, b {}, y {}", dimsStr(a),
                          dimsStr(b), dimsStr(y)));
  HPVM_ASSERT(b != y || a == y, "add output must not alias b alone");
  dnnl::memory src0 = currentMemory(a);
  // The second operand: per-channel 1xCx1x1 from the host, the same
  // layout as a (reordered if it differs), or a broadcast on plain NCHW.
  dnnl::memory src1;
  std::unique_ptr<PoolBuffer> hold;
  if (form == AddForm::PerChannel) {
    src1 = spatialBroadcast(b, {1, ad[1], 1, 1}, a, src0);
  } else if (form == AddForm::Broadcast) {
    broadcastBinary(dnnl::algorithm::binary_add, a, b, act, lo, hi, knob, y);
    return;
  } else if (bd == ad) {
    src1 = memoryAs(b, src0.get_desc(), hold);
  } else {
    // Same element count, other dims: b's NCHW values viewed as a's dims.
    dnnl::memory view(nchwDesc(a), engine(), const_cast<float*>(hostData(b)));
    hold = std::make_unique<PoolBuffer>(src0.get_desc().get_size());
    src1 = dnnl::memory(src0.get_desc(), engine(), hold->get());
    reorder(view, src1);
  }
  runBinary(dnnl::algorithm::binary_add, a, src0, src1, act, lo, hi, knob, y);
}

void runMultiply(const Tensor* a, const Tensor* b, Act act, float lo, float hi,
                 const KnobSpec& knob, Tensor* y, float quantizeOut,
                 bool quantizeS8) {
  applyThreads();
  const Dims4 ad = dims4(a), bd = dims4(b);
  HPVM_ASSERT(numElems(y) == numElems(a) && b != y && broadcastsTo(bd, ad),
              fmt::format("multiply shapes wrong: a {}, b {}, y {}", dimsStr(a),
                          dimsStr(b), dimsStr(y)));
  dnnl::memory src0 = currentMemory(a);
  dnnl::memory src1;
  std::unique_ptr<PoolBuffer> hold;
  if (bd == ad) {
    src1 = memoryAs(b, src0.get_desc(), hold);
  } else if (bd[2] != 1 || bd[3] != 1) {
    // Any other broadcast: both operands plain NCHW.
    broadcastBinary(dnnl::algorithm::binary_mul, a, b, act, lo, hi, knob, y);
    return;
  } else {
    const std::optional<GateLayout> gl = gateLayout(src0.get_desc());
    if (act == Act::None && gl && quantizeOut > 0.f && y != a) {
      // Quantized for the int8 layers reading it, in a's layout.
      dnnl::memory::desc q = src0.get_desc();
      q.data.data_type = quantizeS8 ? dnnl_s8 : dnnl_u8;
      gateLoop(src0, *gl, bd, hostData(b), outputMemory(y, q),
               1.f / quantizeOut);
      implOf(y).memScale = quantizeOut;
      return;
    }
    if (act == Act::None && gl) {
      dnnl::memory dst = sameLayoutOutput(a, src0, y);
      gateLoop(src0, *gl, bd, hostData(b), dst, 1.f);
      markInPlace(y, dst);
      roundResult(knob.precision, y);
      return;
    }
    src1 = spatialBroadcast(b, {bd[0], bd[1], 1, 1}, a, src0);
  }
  runBinary(dnnl::algorithm::binary_mul, a, src0, src1, act, lo, hi, knob, y);
}

void runArith(Arith op, const Tensor* a, const Tensor* b, const KnobSpec& knob,
              Tensor* y) {
  applyThreads();
  const Dims4 ad = dims4(a), bd = dims4(b);
  for (size_t i = 0; i < 4; ++i)
    HPVM_ASSERT(bd[i] == ad[i] || bd[i] == 1,
                fmt::format("arithmetic shapes wrong: a {}, b {}", dimsStr(a),
                            dimsStr(b)));
  HPVM_ASSERT(
      numElems(y) == numElems(a) && b != y,
      fmt::format("arithmetic output {} for a {}", dimsStr(y), dimsStr(a)));
  const dnnl::algorithm alg = op == Arith::Sub   ? dnnl::algorithm::binary_sub
                              : op == Arith::Div ? dnnl::algorithm::binary_div
                              : op == Arith::Max ? dnnl::algorithm::binary_max
                                                 : dnnl::algorithm::binary_min;
  dnnl::memory src0 = currentMemory(a), src1;
  std::unique_ptr<PoolBuffer> hold;
  if (bd != ad) {
    broadcastBinary(alg, a, b, Act::None, 0.f, 0.f, knob, y);
    return;
  }
  src1 = memoryAs(b, src0.get_desc(), hold);
  runBinary(alg, a, src0, src1, Act::None, 0.f, 0.f, knob, y);
}

void runPower(const Tensor* x, float exponent, const KnobSpec& knob,
              Tensor* y) {
  applyThreads();
  HPVM_ASSERT(numElems(y) == numElems(x),
              fmt::format("power output {} differs from input {}", dimsStr(y),
                          dimsStr(x)));
  dnnl::memory src = currentMemory(x);
  dnnl::memory dst = sameLayoutOutput(x, src, y);
  const bool root = exponent == 0.5f;
  const Prim& p = cachedPrim(
      fmt::format(FMT_COMPILE("pow|{}|{}"), descKey(src.get_desc()), exponent),
      [&] {
        // eltwise_pow: alpha * x ^ beta; sqrt its own (exact) algorithm.
        dnnl::eltwise_forward::desc desc(
            dnnl::prop_kind::forward_inference,
            root ? dnnl::algorithm::eltwise_sqrt : dnnl::algorithm::eltwise_pow,
            src.get_desc(), 1.f, root ? 0.f : exponent);
        dnnl::eltwise_forward::primitive_desc pd(desc, engine());
        return Prim{
            dnnl::eltwise_forward(pd), src.get_desc(), {}, src.get_desc()};
      });
  p.prim.execute(stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  stream().wait();
  // (The padding of a blocked layout: 0 ^ e is 0 for e > 0; otherwise the
  // padding is zeroed again.)
  if (hasChannelPadding(dst.get_desc()) && !(exponent > 0.f) &&
      channelBlock(dst.get_desc()))
    zeroChannelPadding(dst);
  markInPlace(y, dst);
  roundResult(knob.precision, y);
}

} // namespace hpvm::rt
