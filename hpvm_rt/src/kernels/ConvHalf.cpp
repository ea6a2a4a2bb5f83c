// ConvHalf.cpp - exact fp16 convolutions in half arithmetic (ConvHalf.h).
#include "kernels/ConvHalf.h"

#include "approx/HalfConv.h"
#include "kernels/DerivedWeights.h"
#include "kernels/HostPostOps.h"
#include "kernels/Numerics.h"

#include <memory>
#include <string>
#include <vector>

namespace hpvm::rt::kern {

namespace {

approx::HalfConv halfShape(const KnobSpec& knob, const ConvArgs& a,
                           const Dims4& xd, const Dims4& wd) {
  approx::HalfConv hc{xd[0], xd[1],  xd[2],  xd[3],     wd[0],    wd[2],
                      wd[3], a.padH, a.padW, a.strideH, a.strideW};
  if (knob.variant == Variant::PerfRow || knob.variant == Variant::PerfCol) {
    hc.perfRate = knob.rate;
    hc.perfOffset = knob.offset;
    hc.perfCols = knob.variant == Variant::PerfCol;
  }
  return hc;
}

} // namespace

bool convHalfApplies(const KnobSpec& knob, const ConvArgs& a,
                     const PostOps& post, const Dims4& xd, const Dims4& wd,
                     const Dims4& yd) {
  return knob.precision == Precision::FP16 &&
         (knob.variant == Variant::Exact || knob.variant == Variant::PerfRow ||
          knob.variant == Variant::PerfCol) &&
         approx::halfConvAvailable() && a.groups == 1 && !a.dilated() &&
         (!post.residual || dims4(post.residual) == yd) &&
         approx::halfConvApplies(halfShape(knob, a, xd, wd));
}

void runConvHalf(const Tensor* x, const Tensor* w, const ConvArgs& a,
                 const PostOps& post, const KnobSpec& knob, Tensor* y,
                 const Dims4& xd, const Dims4& wd, const Dims4& yd) {
  const approx::HalfConv hc = halfShape(knob, a, xd, wd);
  const TensorImpl::Derived& filter = packedFilter(
      w, post, "half-packed", hc.k, hc.c * hc.kh * hc.kw, dt::f16,
      approx::packedHalfFilterSize(hc),
      [&](const float* folded, void* packed) {
        approx::packHalfFilter(hc, folded, static_cast<uint16_t*>(packed));
      },
      Precision::FP16);
  const auto* packed =
      static_cast<const uint16_t*>(filter.weights.get_data_handle());
  const auto* bias = static_cast<const float*>(filter.bias.get_data_handle());
  std::unique_ptr<PoolBuffer> xHold, residualHold;
  approx::HalfConvIo io;
  // The input: NHWC half where an fp16 chain stored it so, else nChw16c.
  const dnnl::memory::desc xHalf({xd[0], xd[1], xd[2], xd[3]}, dt::f16,
                                 tag::nhwc);
  const dnnl::memory stored = storedMemory(x);
  const dnnl::memory xm = stored.get_desc() == xHalf
                              ? stored
                              : memoryAs(x, blocked16Desc(x), xHold);
  if (xm.get_desc() == xHalf)
    io.xHalf = static_cast<const uint16_t*>(xm.get_data_handle());
  else
    io.x = static_cast<const float*>(xm.get_data_handle());
  // The post-ops after the folded ones, in the output pass.
  PostOps rest = post;
  rest.bias = rest.bnGamma = rest.bnBeta = rest.bnMean = rest.bnVar = nullptr;
  HostPostOps epi(rest, yd[0], yd[1], yd[2] * yd[3], Precision::FP16,
                  HostPostOps::Part::All, /*blocked=*/true);
  const dnnl::memory::desc yDesc({yd[0], yd[1], yd[2], yd[3]}, dt::f32,
                                 tag::nChw16c);
  dnnl::memory residual;
  if (post.residual) {
    residual = memoryAs(post.residual, yDesc, residualHold);
    epi.setBlockedResidual(
        static_cast<const float*>(residual.get_data_handle()));
  }
  // The output: NHWC half for the fp16 convolutions reading it (an fp16
  // chain), else nChw16c.
  if (post.halfOut && hc.perfRate == 1)
    io.yHalf = static_cast<uint16_t*>(
        outputMemory(y, {{yd[0], yd[1], yd[2], yd[3]}, dt::f16, tag::nhwc})
            .get_data_handle());
  else
    io.y = static_cast<float*>(outputMemory(y, yDesc).get_data_handle());
  approx::convHalf(hc, io, packed, bias, &epi);
  implOf(y).roundedTo = Precision::FP16;
}

} // namespace hpvm::rt::kern
