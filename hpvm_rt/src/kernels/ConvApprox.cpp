// ConvApprox.cpp - perforated and sampled convolutions as layers
// (ConvApprox.h): on the activations' blocked layout or on NCHW host data.
#include "kernels/ConvApprox.h"

#include "approx/Approx.h"
#include "approx/ConvGeometry.h"
#include "base/Errors.h"
#include "kernels/DerivedWeights.h"
#include "kernels/Elementwise.h"
#include "kernels/HostPostOps.h"
#include "kernels/Int8.h"
#include "kernels/Numerics.h"
#include "kernels/Primitives.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

namespace hpvm::rt::kern {

namespace {

/// The blocked engine's post-ops when the activation is a tanh or sigmoid:
/// bias and batch norm on each row (head), then oneDNN's vectorised
/// activation (as in the exact convolution) over each chunk of finished
/// images while it is in cache, then residual, act2 and rounding (tail).
class BlockedEltwisePostOps final : public approx::BlockedEpilogue {
public:
  BlockedEltwisePostOps(const PostOps& post, int64_t N, int64_t K, int64_t Ho,
                        int64_t Wo, Precision roundOutput)
      : head_(post, N, K, Ho * Wo, roundOutput, HostPostOps::Part::Head,
              /*blocked=*/true),
        tail_(post, N, K, Ho * Wo, roundOutput, HostPostOps::Part::Tail,
              /*blocked=*/true),
        act_(post.act), k_(K), ho_(Ho), wo_(Wo) {}

  void setBlockedResidual(const float* r) { tail_.setBlockedResidual(r); }

  void applyRow(int64_t n, int64_t cb, int64_t h, float* v,
                int64_t wo) const override {
    head_.applyRow(n, cb, h, v, wo);
  }
  bool wantsImages() const override { return true; }
  void applyImages(float* y, int64_t n0, int64_t count) const override {
    const int64_t len = count * k_ * ho_ * wo_;
    dnnl::memory all({{len}, dt::f32, tag::x}, engine(), y);
    eltwise(all, all, act_, 0.f, 0.f);
    if (tail_.empty())
      return;
    const int64_t rows = count * (k_ / 16) * ho_;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r)
      tail_.applyRow(n0 + r / ((k_ / 16) * ho_), (r / ho_) % (k_ / 16), r % ho_,
                     y + r * wo_ * 16, wo_);
  }

private:
  HostPostOps head_, tail_;
  Act act_;
  int64_t k_, ho_, wo_;
};

} // namespace

std::optional<approx::BlockedConv>
blockedShape(const Tensor* x, const Tensor* w, const ConvArgs& a,
             const PostOps& post, const KnobSpec& knob, const Dims4& xd,
             const Dims4& wd, const Dims4& yd) {
  if (yd[1] % 16 != 0 || (post.residual && dims4(post.residual) != yd))
    return std::nullopt;
  approx::BlockedConv bc;
  bc.n = xd[0];
  bc.c = xd[1];
  bc.h = xd[2];
  bc.w = xd[3];
  bc.k = wd[0];
  bc.kh = wd[2];
  bc.kw = wd[3];
  bc.args = a;
  bc.knob = knob;
  // bf16 perforation and sampling run natively where the CPU has bf16 dot
  // products; fp16 (and bf16 elsewhere) rounds fp32 operands.
  bc.bf16 = knob.precision == Precision::BF16 && numericsOf(knob).nativeBf16;
  if (knob.precision == Precision::INT8) {
    // (int8 sampling needs C in blocks of 16 and no groups: skip the
    // filter's quantization where it cannot apply.)
    if (knob.variant == Variant::Samp && (a.groups != 1 || xd[1] % 16 != 0))
      return std::nullopt;
    const Int8Quant aq = inputQuant(knob, x);
    bc.int8Type = aq.u8 ? dt::u8 : dt::s8;
    // (perforation runs convolutions, sampling a matmul)
    const Int8Code code = int8Code(bc.int8Type, knob.variant != Variant::Samp);
    for (float s : int8Unfolded(w, a.groups, code).scales)
      bc.int8.outScales.push_back(aq.scale * s);
  }
  return bc;
}

void convApproxBlocked(const Tensor* x, const Tensor* w, const ConvArgs& a,
                       const PostOps& post, const KnobSpec& knob, Tensor* y,
                       const Dims4& xd, const Dims4& wd, const Dims4& yd) {
  std::optional<approx::BlockedConv> shape =
      blockedShape(x, w, a, post, knob, xd, wd, yd);
  HPVM_ASSERT(shape.has_value(), "blocked approximate conv does not apply");
  approx::BlockedConv& bc = *shape;
  const int64_t N = yd[0], K = yd[1], HW = yd[2] * yd[3];
  const dnnl::memory::desc yDesc({N, K, yd[2], yd[3]}, dt::f32, tag::nChw16c);
  const Precision outRound =
      knob.precision == Precision::FP16 ? Precision::FP16 : Precision::FP32;
  // The post-ops: in the output pass, except a tanh or sigmoid (see
  // BlockedEltwisePostOps).
  std::optional<HostPostOps> epi;
  std::optional<BlockedEltwisePostOps> eltwiseEpi;
  if (isTranscendental(post.act))
    eltwiseEpi.emplace(post, N, K, yd[2], yd[3], outRound);
  else
    epi.emplace(post, N, K, HW, outRound, HostPostOps::Part::All,
                /*blocked=*/true);
  dnnl::memory residual;
  std::unique_ptr<PoolBuffer> residualHold;
  // A bf16 input (a bf16 chain) is read as it is: the engine converts it
  // to its layout, without a trip through fp32.
  const bool bf16Stored =
      bc.bf16 &&
      storedInType(x, dnnl::memory::desc({xd[0], xd[1], xd[2], xd[3]}, dt::bf16,
                                         tag::nhwc));
  bc.x = bf16Stored ? storedMemory(x) : currentMemory(x);
  const bool int8 = knob.precision == Precision::INT8;
  bc.weights = knob.precision == Precision::FP32 || bc.bf16 || int8
                   ? hostData(w)
                   : roundedWeights(w, knob.precision);
  dnnl::memory int8Filter;            // keeps bc.int8.weights alive
  std::unique_ptr<PoolBuffer> int8In; // holds the quantized input
  if (int8) {
    // The input quantized once, into the NHWC the engines read int8 from.
    const Int8Quant aq = inputQuant(knob, x);
    const dnnl::memory::desc xq({xd[0], xd[1], xd[2], xd[3]}, bc.int8Type,
                                tag::nhwc);
    int8In = std::make_unique<PoolBuffer>(xq.get_size());
    bc.x = quantizedSource(x, xq, aq.scale, *int8In);
    int8Filter =
        int8Unfolded(w, a.groups,
                     int8Code(bc.int8Type, knob.variant != Variant::Samp))
            .weights;
    bc.int8.weights = static_cast<const int8_t*>(int8Filter.get_data_handle());
  }
  if (knob.precision != Precision::FP32 && !bc.bf16 && !int8 &&
      !alreadyRounded(x, knob.precision))
    bc.roundInput = [&](float* p, int64_t n) { roundTo(knob.precision, p, n); };
  bc.output = [&] {
    if (post.residual) {
      residual = memoryAs(post.residual, yDesc, residualHold);
      const float* r = static_cast<const float*>(residual.get_data_handle());
      if (eltwiseEpi)
        eltwiseEpi->setBlockedResidual(r);
      else
        epi->setBlockedResidual(r);
    }
    return static_cast<float*>(outputMemory(y, yDesc).get_data_handle());
  };
  if (eltwiseEpi)
    bc.epilogue = &*eltwiseEpi;
  else if (!epi->empty())
    bc.epilogue = &*epi;
  if (knob.variant == Variant::Samp)
    approx::convSampledBlocked(bc);
  else
    approx::convPerforatedBlocked(bc);
  if (outRound != Precision::FP32)
    implOf(y).roundedTo = outRound;
}

void convApprox(const Tensor* x, const Tensor* w, const ConvArgs& a,
                const PostOps& post, const KnobSpec& knob, Tensor* y,
                const Dims4& xd, const Dims4& wd, const Dims4& yd) {
  const float* xp = hostData(x);
  const float* wp = hostData(w);
  static thread_local std::vector<float> xq;
  if (knob.precision == Precision::INT8) {
    // int8 where the blocked engine does not apply: the same quantized
    // operands, dequantized, through the fp32 engine (32-bit sums become
    // fp32 sums of exact products).
    const Int8Quant aq = inputQuant(knob, x);
    const float lo = aq.u8 ? 0.f : -128.f, hi = aq.u8 ? 255.f : 127.f;
    const float inv = 1.f / aq.scale; // as oneDNN's quantizing reorder
    xq.resize(static_cast<size_t>(numElems(x)));
    float* xqp = xq.data(); // (thread_local: this thread's buffer)
    const int64_t n = numElems(x);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
      xqp[i] = std::clamp(std::nearbyint(xp[i] * inv), lo, hi) * aq.scale;
    xp = xq.data();
    wp = dequantizedWeights(w, a.groups);
  } else if (knob.precision != Precision::FP32) {
    // Reduced precision: the operands are rounded first (unless they
    // already are), the input into a buffer kept across calls (no
    // allocation and page faults per call), the weights once per version
    // of w.
    if (!alreadyRounded(x, knob.precision)) {
      static thread_local std::vector<float> xs;
      xs.resize(static_cast<size_t>(numElems(x)));
      roundCopy(knob.precision, xp, xs.data(), numElems(x));
      xp = xs.data();
    }
    wp = roundedWeights(w, knob.precision);
  }
  // The post-ops run inside the approximate convolution's output pass;
  // FP16 variants round the result there too. A tanh or sigmoid (scalar
  // std::tanh / std::exp would cost more than the convolution) runs
  // afterwards as oneDNN's vectorised eltwise over the whole output, as in
  // the exact convolution, and the steps after it in one more pass.
  const int64_t N = yd[0], K = yd[1], HW = yd[2] * yd[3];
  const Precision outRound =
      knob.precision == Precision::FP16 ? Precision::FP16 : Precision::FP32;
  const bool eltwiseAfter = isTranscendental(post.act);
  using Part = HostPostOps::Part;
  const HostPostOps epi(post, N, K, HW, outRound,
                        eltwiseAfter ? Part::Head : Part::All);
  const approx::Epilogue* ep = epi.empty() ? nullptr : &epi;
  allocHost(y);
  float* yp = y->impl->host;
  if (knob.variant == Variant::Samp)
    approx::convSampled(xp, xd[0], xd[1], xd[2], xd[3], wp, wd[0], wd[2], wd[3],
                        a, knob, yp, ep);
  else
    approx::convPerforated(xp, xd[0], xd[1], xd[2], xd[3], wp, wd[0], wd[2],
                           wd[3], a, knob, yp, ep);
  if (eltwiseAfter) {
    dnnl::memory all({{N * K * HW}, dt::f32, tag::x}, engine(), yp);
    eltwise(all, all, post.act, 0.f, 0.f);
    const HostPostOps tail(post, N, K, HW, outRound, Part::Tail);
    if (!tail.empty()) {
#pragma omp parallel for schedule(static)
      for (int64_t plane = 0; plane < N * K; ++plane)
        tail.apply(plane / K, plane % K, 0, yp + plane * HW, HW);
    }
  }
  markHostWritten(y);
  implOf(y).roundedTo = outRound;
}

} // namespace hpvm::rt::kern
