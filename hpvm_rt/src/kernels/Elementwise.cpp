// Elementwise.cpp - element-wise layers on oneDNN: activations (eltwise)
// and the binary add and multiply with broadcasting.
#include "kernels/Elementwise.h"

#include "base/Errors.h"
#include "kernels/Numerics.h"
#include "kernels/Primitives.h"
#include "kernels/TensorImpl.h"

#include <fmt/format.h>

#include <cstring>
#include <memory>

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

void appendAct(dnnl::post_ops& ops, Act a, float lo, float hi) {
  const EltwiseSteps steps = eltwiseSteps(a, lo, hi);
  for (int i = 0; i < steps.count; ++i)
    ops.append_eltwise(1.f, steps.step[i].alg, steps.step[i].alpha,
                       steps.step[i].beta);
}

std::string actKey(Act a, float lo, float hi) {
  return fmt::format("a{}:{}:{}", static_cast<int>(a), lo, hi);
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
    const std::string key = fmt::format("elt|{}|{}|{}", descKey(src.get_desc()),
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

/// y = act(src0 <alg> src1) by oneDNN's binary primitive, in a's layout (y
/// may be a), then rounded to the knob's precision.
void runBinary(dnnl::algorithm alg, const Tensor* a, const dnnl::memory& src0,
               const dnnl::memory& src1, Act act, float lo, float hi,
               const KnobSpec& knob, Tensor* y) {
  const std::string key = fmt::format(
      "binary{}|{}|{}|{}", static_cast<int>(alg), descKey(src0.get_desc()),
      descKey(src1.get_desc()), actKey(act, lo, hi));
  const Prim& p = cachedPrim(key, [&] {
    dnnl::binary::desc desc(alg, src0.get_desc(), src1.get_desc(),
                            src0.get_desc());
    dnnl::post_ops ops;
    appendAct(ops, act, lo, hi);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    dnnl::binary::primitive_desc pd(desc, attr, engine());
    Prim made{dnnl::binary(pd), pd.src_desc(0), {}, pd.dst_desc()};
    made.reference = isRefImpl(pd);
    return made;
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

} // namespace

void runAdd(const Tensor* a, const Tensor* b, Act act, float lo, float hi,
            const KnobSpec& knob, Tensor* y) {
  applyThreads();
  Dims4 ad = dims4(a);
  const int64_t n = numElems(a), C = ad[1];
  const bool perChannel = numElems(b) != n;
  HPVM_ASSERT(numElems(y) == n && (!perChannel || numElems(b) == C),
              fmt::format("add shapes wrong: a {}, b {}, y {}", dimsStr(a),
                          dimsStr(b), dimsStr(y)));
  HPVM_ASSERT(b != y || a == y, "add output must not alias b alone");
  dnnl::memory src0 = currentMemory(a);
  // The second operand: per-channel 1xCx1x1 from the host, or the same
  // layout as a (reordered if it differs).
  dnnl::memory src1;
  if (perChannel) {
    src1 = spatialBroadcast(b, {1, C, 1, 1}, a, src0);
  } else if (dims4(b) == ad) {
    src1 = memoryAs(b, src0.get_desc());
  } else {
    // Same element count, other dims: b's NCHW values viewed as a's dims.
    dnnl::memory view(nchwDesc(a), engine(), const_cast<float*>(hostData(b)));
    src1 = dnnl::memory(src0.get_desc(), engine());
    reorder(view, src1);
  }
  runBinary(dnnl::algorithm::binary_add, a, src0, src1, act, lo, hi, knob, y);
}

void runMultiply(const Tensor* a, const Tensor* b, Act act, float lo, float hi,
                 const KnobSpec& knob, Tensor* y) {
  applyThreads();
  const Dims4 ad = dims4(a), bd = dims4(b);
  HPVM_ASSERT(numElems(y) == numElems(a) && b != y,
              fmt::format("multiply shapes wrong: a {}, b {}, y {}", dimsStr(a),
                          dimsStr(b), dimsStr(y)));
  dnnl::memory src0 = currentMemory(a);
  dnnl::memory src1;
  if (bd == ad) {
    src1 = memoryAs(b, src0.get_desc());
  } else {
    HPVM_ASSERT(bd[2] == 1 && bd[3] == 1,
                "multiply broadcasts only over 1 x 1 spatial extents");
    src1 = spatialBroadcast(b, {bd[0], bd[1], 1, 1}, a, src0);
  }
  runBinary(dnnl::algorithm::binary_mul, a, src0, src1, act, lo, hi, knob, y);
}

} // namespace hpvm::rt
