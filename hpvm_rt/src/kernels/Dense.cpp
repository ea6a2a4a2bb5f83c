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

namespace {

/// True when \p d, an f32 N x C x 1 x 1 layout, holds element (n, c) at
/// n * C + c: NCHW, NHWC, or channel blocks that C fills (nChw16c after a
/// global pooling). Such a source is a plain N x C matrix as it is.
bool isPlainRows(const dnnl::memory::desc& d, int64_t N, int64_t C) {
  const dnnl_memory_desc_t& m = d.data;
  if (m.format_kind != dnnl_blocked || m.ndims != 4 ||
      m.data_type != dnnl_f32 || m.offset0 != 0 || m.dims[2] != 1 ||
      m.dims[3] != 1 || m.padded_dims[1] != C)
    return false;
  const dnnl_blocking_desc_t& b = m.format_desc.blocking;
  if (b.inner_nblks > 1 || (b.inner_nblks == 1 && b.inner_idxs[0] != 1))
    return false;
  const int64_t block = b.inner_nblks == 1 ? b.inner_blks[0] : 1;
  return (N == 1 || b.strides[0] == C) && (C == block || b.strides[1] == block);
}

} // namespace

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
  // physical order i,h,w,o (tag ihwo). An fp32 x that is already a plain
  // M x K matrix in memory (a pooled N x C x 1 x 1) is read as one: on a
  // 4-D blocked source oneDNN falls back to its slow gemm-based kernel,
  // on a 2-D one it runs its fast ones at any batch.
  const bool exactF32 =
      inType == dt::f32 && nm.roundOperands == Precision::FP32;
  const bool plain2d =
      exactF32 && isPlainRows(currentMemory(x).get_desc(), M, K);
  dims src4{xd[0], xd[1], xd[2], xd[3]};
  dnnl::memory::desc wPlain =
      plain2d
          ? dnnl::memory::desc({N, K}, dt::f32, tag::io)
          : dnnl::memory::desc({N, xd[1], xd[2], xd[3]}, dt::f32, tag::ihwo);
  dnnl::memory::desc wAny =
      plain2d ? dnnl::memory::desc({N, K}, inType, tag::any)
              : dnnl::memory::desc({N, xd[1], xd[2], xd[3]}, inType, tag::any);
  dnnl::memory::desc biasDesc({N}, dt::f32, tag::x);
  dnnl::memory::desc dstDesc({M, N}, dt::f32, tag::nc);
  dnnl::memory::desc srcWant =
      plain2d    ? dnnl::memory::desc({M, K}, dt::f32, tag::nc)
      : exactF32 ? currentMemory(x).get_desc()
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
  auto keyOf = [&](const dnnl::memory::desc& src) {
    std::string key = "ip";
    appendKey(key, descKey(src), N, inType, postKey(post));
    return key;
  };
  const Prim* p = nullptr;
  try {
    p = &cachedPrim(keyOf(srcWant), [&] { return make(srcWant); });
  } catch (const dnnl::error&) {
    // No implementation takes this blocked source: let oneDNN choose.
    srcWant = dnnl::memory::desc(src4, inType, tag::any);
    p = &cachedPrim(keyOf(srcWant), [&] { return make(srcWant); });
  }

  const auto& wts =
      derivedWeights(w, post, wPlain, p->weights, N, K, 1, N, nm.roundOperands);
  std::vector<float> scratch;
  std::unique_ptr<PoolBuffer> srcHold;
  dnnl::memory src =
      plain2d
          ? dnnl::memory(p->src, engine(), currentMemory(x).get_data_handle())
          : sourceFor(x, p->src, nm.roundOperands, scratch, srcHold);
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
