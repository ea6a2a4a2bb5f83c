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

approx::HalfConv halfShape(const ConvArgs& a, const Dims4& xd,
                           const Dims4& wd) {
  return {xd[0], xd[1],  xd[2],  xd[3],     wd[0],    wd[2],
          wd[3], a.padH, a.padW, a.strideH, a.strideW};
}

/// w with post's bias and batch norm folded in, packed for convHalf, and
/// the folded bias rounded to half: derived once per version of the
/// tensors involved and cached on w.
const TensorImpl::Derived& packedHalfFilter(const Tensor* w,
                                            const PostOps& post,
                                            const approx::HalfConv& hc) {
  TensorImpl& impl = implOf(w);
  const std::string key = "half-packed|" + foldKey(post);
  if (const TensorImpl::Derived* found = findDerived(impl, key))
    return *found;
  const int64_t perK = hc.c * hc.kh * hc.kw;
  const float* wp = hostData(w);
  std::vector<float> wf(wp, wp + numElems(w)), bf;
  foldPostOps(post, hc.k, perK, perK, 1, wf, bf);
  roundTo(Precision::FP16, bf.data(), hc.k);
  TensorImpl::Derived d;
  d.key = key;
  d.weights = dnnl::memory(
      {{approx::packedHalfFilterSize(hc)}, dt::f16, tag::x}, engine());
  approx::packHalfFilter(hc, wf.data(),
                         static_cast<uint16_t*>(d.weights.get_data_handle()));
  d.bias = dnnl::memory({{hc.k}, dt::f32, tag::x}, engine());
  std::copy(bf.begin(), bf.end(),
            static_cast<float*>(d.bias.get_data_handle()));
  return storeDerived(impl, std::move(d));
}

} // namespace

bool convHalfApplies(const ConvArgs& a, const PostOps& post, const Dims4& xd,
                     const Dims4& wd, const Dims4& yd) {
  return approx::halfConvAvailable() && a.groups == 1 &&
         (!post.residual || dims4(post.residual) == yd) &&
         approx::halfConvApplies(halfShape(a, xd, wd));
}

void runConvHalf(const Tensor* x, const Tensor* w, const ConvArgs& a,
                 const PostOps& post, Tensor* y, const Dims4& xd,
                 const Dims4& wd, const Dims4& yd) {
  const approx::HalfConv hc = halfShape(a, xd, wd);
  const TensorImpl::Derived& filter = packedHalfFilter(w, post, hc);
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
  if (post.halfOut)
    io.yHalf = static_cast<uint16_t*>(
        outputMemory(y, {{yd[0], yd[1], yd[2], yd[3]}, dt::f16, tag::nhwc})
            .get_data_handle());
  else
    io.y = static_cast<float*>(outputMemory(y, yDesc).get_data_handle());
  approx::convHalf(hc, io, packed, bias, &epi);
  implOf(y).roundedTo = Precision::FP16;
}

} // namespace hpvm::rt::kern
