// ConvDepthwise.cpp - depthwise convolutions that read their input where it
// is stored (ConvDepthwise.h).
#include "kernels/ConvDepthwise.h"

#include "approx/DepthwiseConv.h"
#include "approx/Isa.h"
#include "kernels/DerivedWeights.h"
#include "kernels/Numerics.h"
#include "kernels/Primitives.h"

#include <optional>
#include <string>
#include <vector>

namespace hpvm::rt::kern {

namespace {

approx::DepthwiseConv dwShape(const ConvArgs& a, const Dims4& xd,
                              const Dims4& wd) {
  return {xd[0], xd[1],  xd[2],  xd[3],     wd[2],
          wd[3], a.padH, a.padW, a.strideH, a.strideW};
}

std::optional<approx::DwEpilogue> epilogueOf(const PostOps& post) {
  switch (post.act) {
  case Act::None:
    return approx::DwEpilogue{approx::DwAct::None, 0, 0};
  case Act::Relu:
    return approx::DwEpilogue{approx::DwAct::Relu, 0, 0};
  case Act::Clip:
    return approx::DwEpilogue{approx::DwAct::Clip, post.actLo, post.actHi};
  case Act::LeakyRelu:
    return approx::DwEpilogue{approx::DwAct::LeakyRelu, post.actLo, 0};
  case Act::HardSwish:
    return approx::DwEpilogue{approx::DwAct::HardSwish, 0, 0};
  default:
    return std::nullopt;
  }
}

/// The forms the kernel reads: fp32 or bf16, nChw16c or NHWC, of x's dims.
std::optional<approx::ChannelBlocks> readable(const dnnl::memory& m,
                                              const Dims4& xd) {
  const dnnl::memory::dims d{xd[0], xd[1], xd[2], xd[3]};
  const dnnl::memory::desc have = m.get_desc();
  for (const dt type : {dt::f32, dt::bf16})
    for (const tag layout : {tag::nChw16c, tag::nhwc})
      if (have == dnnl::memory::desc(d, type, layout))
        return approx::ChannelBlocks{m.get_data_handle(), type == dt::bf16,
                                     layout == tag::nhwc};
  return std::nullopt;
}

/// The form oneDNN's kernel for \p knob reads (exact-blocked, exact-amx);
/// none where it rounds a copy anyway (emulated bf16).
std::optional<approx::ChannelBlocks> onednnForm(const KnobSpec& knob) {
  if (knob.precision == Precision::FP32)
    return approx::ChannelBlocks{nullptr, false, false};
  if (!numericsOf(knob).nativeBf16)
    return std::nullopt;
  return approx::ChannelBlocks{nullptr, true,
                               approx::isaLevel() >= approx::IsaLevel::Amx};
}

} // namespace

std::optional<approx::ChannelBlocks>
convDepthwiseInput(const Tensor* x, const ConvArgs& a, const PostOps& post,
                   const KnobSpec& knob, const Dims4& xd, const Dims4& wd) {
  if (a.groups != xd[1] || wd[0] != xd[1] || wd[1] != 1 || post.residual ||
      a.dilated() ||
      (knob.precision != Precision::FP32 &&
       knob.precision != Precision::BF16) ||
      !epilogueOf(post) || !approx::depthwiseApplies(dwShape(a, xd, wd)))
    return std::nullopt;
  const TensorImpl& impl = implOf(const_cast<Tensor*>(x));
  if (!impl.memValid || impl.memScale != 1.f)
    return std::nullopt;
  const std::optional<approx::ChannelBlocks> have = readable(impl.mem, xd);
  const std::optional<approx::ChannelBlocks> want = onednnForm(knob);
  if (have && want && have->bf16 == want->bf16 && have->nhwc == want->nhwc)
    return std::nullopt;
  return have;
}

void runConvDepthwise(const approx::ChannelBlocks& in, const Tensor* w,
                      const ConvArgs& a, const PostOps& post,
                      const KnobSpec& knob, Tensor* y, const Dims4& xd,
                      const Dims4& wd, const Dims4& yd) {
  const approx::DepthwiseConv d = dwShape(a, xd, wd);
  const bool bf16 = knob.precision == Precision::BF16;
  const TensorImpl::Derived& filter = packedFilter(
      w, post, bf16 ? "dw-packed-bf16" : "dw-packed", d.c, d.kh * d.kw, dt::f32,
      approx::packedDepthwiseSize(d), [&](const float* folded, void* packed) {
        approx::packDepthwiseFilter(d, folded, bf16,
                                    static_cast<float*>(packed));
      });
  // The output as oneDNN's kernel for the knob writes it.
  const std::optional<approx::ChannelBlocks> form = onednnForm(knob);
  const bool nhwc = form && form->nhwc;
  const bool bf16Out = bf16 && post.bf16Out && numericsOf(knob).nativeBf16;
  const dnnl::memory out = outputMemory(y, {{yd[0], yd[1], yd[2], yd[3]},
                                            bf16Out ? dt::bf16 : dt::f32,
                                            nhwc ? tag::nhwc : tag::nChw16c});
  approx::depthwiseConv(
      d, in, static_cast<const float*>(filter.weights.get_data_handle()),
      static_cast<const float*>(filter.bias.get_data_handle()),
      bf16 && !in.bf16, *epilogueOf(post),
      approx::ChannelBlocks{out.get_data_handle(), bf16Out, nhwc});
}

} // namespace hpvm::rt::kern
