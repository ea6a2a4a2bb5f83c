// ConvIm2col.cpp - exact bf16 convolutions of small outputs on AMX as
// im2col + inner product (ConvIm2col.h).
#include "kernels/ConvIm2col.h"

#include "approx/Isa.h"
#include "kernels/DerivedWeights.h"
#include "kernels/Numerics.h"
#include "kernels/PostOps.h"
#include "kernels/Primitives.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace hpvm::rt::kern {

namespace {

/// Writes the im2col matrix of NHWC bf16 input x (2-byte elements) into
/// col: row (n, oh, ow) holds, tap by tap (kh, kw), the tap's C channels,
/// zeros where the tap falls in the padding.
void im2colNhwc(const uint16_t* x, const Dims4& xd, const Dims4& wd,
                const Dims4& yd, const ConvArgs& a, uint16_t* col) {
  const int64_t N = xd[0], C = xd[1], H = xd[2], W = xd[3];
  const int64_t KH = wd[2], KW = wd[3], Ho = yd[2], Wo = yd[3];
  const int64_t rowLen = KH * KW * C;
  const size_t tapBytes = static_cast<size_t>(C) * sizeof(uint16_t);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < Ho; ++oh)
      for (int64_t ow = 0; ow < Wo; ++ow) {
        uint16_t* row = col + ((n * Ho + oh) * Wo + ow) * rowLen;
        for (int64_t kh = 0; kh < KH; ++kh) {
          const int64_t ih = oh * a.strideH - a.padH + kh;
          for (int64_t kw = 0; kw < KW; ++kw) {
            const int64_t iw = ow * a.strideW - a.padW + kw;
            uint16_t* to = row + (kh * KW + kw) * C;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W)
              std::memset(to, 0, tapBytes);
            else
              std::memcpy(to, x + ((n * H + ih) * W + iw) * C, tapBytes);
          }
        }
      }
}

} // namespace

bool convIm2colBf16Applies(const ConvArgs& a, const PostOps& post,
                           const KnobSpec& knob) {
  return knob.variant == Variant::Exact && knob.precision == Precision::BF16 &&
         numericsOf(knob).nativeBf16 &&
         approx::isaLevel() >= approx::IsaLevel::Amx && a.groups == 1 &&
         !a.dilated() && !post.residual;
}

const Prim* im2colPrim(const PostOps& post, const Dims4& xd, const Dims4& wd,
                       const Dims4& yd) {
  const int64_t K = wd[0], C = xd[1], KH = wd[2], KW = wd[3];
  const int64_t M = yd[0] * yd[2] * yd[3];
  const dt outType = post.bf16Out ? dt::bf16 : dt::f32;
  const std::string key =
      fmt::format(FMT_COMPILE("ip2col|{}x{}x{}x{}|{}|{}|{}"), M, C, KH, KW, K,
                  static_cast<int>(outType), postKey(post));
  const Prim& p = cachedPrim(key, [&] {
    // The im2col matrix M x (KH*KW*C), row by row: oneDNN's AMX inner
    // product takes 2-D sources only.
    dnnl::inner_product_forward::desc desc(
        dnnl::prop_kind::forward_inference,
        dnnl::memory::desc({M, KH * KW * C}, dt::bf16, tag::nc),
        dnnl::memory::desc({K, KH * KW * C}, dt::bf16, tag::any),
        dnnl::memory::desc({K}, dt::f32, tag::x),
        dnnl::memory::desc({M, K}, outType, tag::nc));
    dnnl::inner_product_forward::primitive_desc pd(
        desc, postOpsAttr(post, ResidualAs::Split), engine());
    Prim made{dnnl::inner_product_forward(pd), pd.src_desc(), pd.weights_desc(),
              pd.dst_desc(), ResidualAs::Split};
    made.reference = isRefImpl(pd);
    made.amx = std::strstr(pd.impl_info_str(), "amx") != nullptr;
    return made;
  });
  return p.amx ? &p : nullptr;
}

void runConvIm2colBf16(const Prim& p, const Tensor* x, const Tensor* w,
                       const ConvArgs& a, const PostOps& post, Tensor* y,
                       const Dims4& xd, const Dims4& wd, const Dims4& yd) {
  const int64_t K = wd[0], C = xd[1], KH = wd[2], KW = wd[3];
  const dnnl::memory::desc &colDesc = p.src, &dstDesc = p.dst;
  // The weights: folded and reordered to OHWI (K rows of KH*KW*C, as the
  // im2col rows), then into the inner product's layout, once per version.
  TensorImpl& wi = implOf(w);
  const std::string key = fmt::format(FMT_COMPILE("ip2col|{}|{}"),
                                      descKey(p.weights), foldKey(post));
  const TensorImpl::Derived* wts = findDerived(wi, key);
  if (!wts) {
    const TensorImpl::Derived& ohwi = derivedWeights(
        w, post, dnnl::memory::desc({K, C, KH, KW}, dt::f32, tag::oihw),
        dnnl::memory::desc({K, C, KH, KW}, dt::f32, tag::ohwi), K, C * KH * KW,
        C * KH * KW, 1, Precision::FP32);
    TensorImpl::Derived d;
    d.key = key;
    d.weights = weightMemory(p.weights, d);
    reorder(dnnl::memory({{K, KH * KW * C}, dt::f32, tag::ab}, engine(),
                         ohwi.weights.get_data_handle()),
            d.weights);
    d.bias = ohwi.bias;
    wts = &storeDerived(wi, std::move(d), &ohwi);
  }
  // The source as bf16 NHWC (as the previous bf16 layer stored it, or
  // converted once), then its im2col matrix.
  std::vector<float> scratch;
  std::unique_ptr<PoolBuffer> srcHold;
  const dnnl::memory src = sourceFor(
      x, dnnl::memory::desc({xd[0], C, xd[2], xd[3]}, dt::bf16, tag::nhwc),
      Precision::FP32, scratch, srcHold);
  PoolBuffer col(colDesc.get_size());
  im2colNhwc(static_cast<const uint16_t*>(src.get_data_handle()), xd, wd, yd, a,
             static_cast<uint16_t*>(col.get()));
  // The M x K result is y in NHWC.
  const dnnl::memory out =
      outputMemory(y, dnnl::memory::desc({yd[0], K, yd[2], yd[3]},
                                         dstDesc.data_type(), tag::nhwc));
  executeLayer(
      p, post,
      {{DNNL_ARG_SRC, dnnl::memory(colDesc, engine(), col.get())},
       {DNNL_ARG_WEIGHTS, wts->weights},
       {DNNL_ARG_BIAS, wts->bias},
       {DNNL_ARG_DST, dnnl::memory(dstDesc, engine(), out.get_data_handle())}});
}

} // namespace hpvm::rt::kern
