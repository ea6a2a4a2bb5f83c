// Dense.cpp - runDense: the inner product (fully connected layer) on
// oneDNN with fused post-ops; int8 knobs go to the int8 engine.
#include "base/Errors.h"
#include "kernels/DerivedWeights.h"
#include "kernels/Int8.h"
#include "kernels/Numerics.h"
#include "kernels/PostOps.h"
#include "kernels/Primitives.h"
#include "kernels/TensorImpl.h"

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

namespace hpvm::rt {
using namespace kern;

void runDense(const Tensor* x, const Tensor* w, const PostOps& post,
              const KnobSpec& knob, Tensor* y) {
  applyThreads();
  HPVM_ASSERT(x != y && post.residual != y,
              "dense output must not alias its input or residual");
  Dims4 xd = dims4(x), wd = dims4(w), yd = dims4(y);
  const int64_t M = xd[0], K = xd[1] * xd[2] * xd[3], N = wd[3];
  HPVM_ASSERT(wd[0] == 1 && wd[1] == 1 && wd[2] == K && yd[0] == M &&
                  yd[1] == N && yd[2] * yd[3] == 1,
              fmt::format("dense shapes wrong: x {}, w {}, y {}", dimsStr(x),
                          dimsStr(w), dimsStr(y)));
  if (isInt8(knob.precision)) {
    denseInt8(x, w, post, knob, y);
    return;
  }
  Numerics nm = numericsOf(knob);
  if (knob.variant != Variant::Exact && knob.rate > 1)
    nm = numericsOf(KnobSpec{knob.id, Variant::Exact, knob.precision, 1, 0});
  const dt inType = nm.nativeBf16 ? dt::bf16 : dt::f32;

  // The inner product takes x as 4-D in its current layout (no reorder of
  // a blocked activation); the weights K x N are (o=N, i=C, h, w) in the
  // physical order i,h,w,o (tag ihwo).
  dims src4{xd[0], xd[1], xd[2], xd[3]};
  dnnl::memory::desc wPlain({N, xd[1], xd[2], xd[3]}, dt::f32, tag::ihwo);
  dnnl::memory::desc wAny({N, xd[1], xd[2], xd[3]}, inType, tag::any);
  dnnl::memory::desc biasDesc({N}, dt::f32, tag::x);
  dnnl::memory::desc dstDesc({M, N}, dt::f32, tag::nc);
  dnnl::memory::desc srcWant =
      inType == dt::f32 && nm.roundOperands == Precision::FP32
          ? currentMemory(x).get_desc()
          : dnnl::memory::desc(src4, inType, tag::any);

  auto make = [&](const dnnl::memory::desc& srcDesc) {
    dnnl::inner_product_forward::desc desc(dnnl::prop_kind::forward_inference,
                                           srcDesc, wAny, biasDesc, dstDesc);
    dnnl::inner_product_forward::primitive_desc pd(
        desc, postOpsAttr(post, ResidualAs::Sum), engine());
    ResidualAs how = ResidualAs::Sum;
    if (post.residual && isRefImpl(pd)) {
      // Only the reference kernel fuses the sum here: add it separately.
      how = ResidualAs::Split;
      pd = dnnl::inner_product_forward::primitive_desc(
          desc, postOpsAttr(post, how), engine());
    }
    return Prim{dnnl::inner_product_forward(pd), pd.src_desc(),
                pd.weights_desc(), pd.dst_desc(), how};
  };
  std::string key = fmt::format("ip|{}|{}|{}|{}", descKey(srcWant), N,
                                static_cast<int>(inType), postKey(post));
  const Prim* p = nullptr;
  try {
    p = &cachedPrim(key, [&] { return make(srcWant); });
  } catch (const dnnl::error&) {
    // No implementation takes this blocked source: let oneDNN choose.
    srcWant = dnnl::memory::desc(src4, inType, tag::any);
    key = fmt::format("ip|{}|{}|{}|{}", descKey(srcWant), N,
                      static_cast<int>(inType), postKey(post));
    p = &cachedPrim(key, [&] { return make(srcWant); });
  }

  const auto& wts =
      derivedWeights(w, post, wPlain, p->weights, N, K, 1, N, nm.roundOperands);
  std::vector<float> scratch;
  std::unique_ptr<PoolBuffer> srcHold;
  dnnl::memory src = sourceFor(x, p->src, nm.roundOperands, scratch, srcHold);
  // The M x N result is written straight into y's NCHW host buffer.
  allocHost(y);
  dnnl::memory dst(dstDesc, engine(), y->impl->host);
  executeLayer(*p, post,
               {{DNNL_ARG_SRC, src},
                {DNNL_ARG_WEIGHTS, wts.weights},
                {DNNL_ARG_BIAS, wts.bias},
                {DNNL_ARG_DST, dst}});
  markHostWritten(y);
  if (post.residual && p->residual == ResidualAs::Split)
    runAdd(y, post.residual, post.act2, post.act2Lo, post.act2Hi, KnobSpec{},
           y);
  roundResult(nm.roundOutput, y);
}

} // namespace hpvm::rt
