// ConvSampledExact.h - filter sampling (reference section 6.3) computed as
// the exact convolution of the sampled filter: the skipped elements zero,
// the kept ones multiplied by rate / (rate - 1), as HPVM multiplies them.
// The same products as the sampling engines (a zero adds nothing), summed
// in the exact kernel's order, at the exact kernel's speed: for the layers
// where the engines' reduced GEMM (SamplingBlocked.cpp, ConvSampling.cpp)
// runs slower than the exact convolution it approximates.
#ifndef HPVM_RT_KERNELS_CONVSAMPLEDEXACT_H
#define HPVM_RT_KERNELS_CONVSAMPLEDEXACT_H

#include "kernels/Kernels.h"
#include "kernels/TensorImpl.h"

#include <memory>

namespace hpvm::rt::kern {

/// True where filter sampling under \p knob is expected faster as the
/// exact convolution of the sampled filter (of dims \p wd) than on the
/// sampling engines, and computes the same products there: fp32 on narrow
/// filters or at rates 3 and 4, where the engines' gather and GEMM cost
/// more than the arithmetic they skip, and wherever the exact convolution
/// runs on oneDNN's Winograd kernels (winogradApplies()); bf16 at rate 2 (a
/// kept weight doubled rounds to bf16 as the doubled rounded weight the engines
/// use) wherever the CPU has native bf16 convolutions, which the engines' GEMM
/// does not match; fp16 wherever the exact fp16 convolution runs in half
/// arithmetic (ConvHalf.h: HPVM's fp16 numerics, as the fp16 knob there,
/// at 1.2-2.0x fp32 on VGG16's layers where the engines, fp32 arithmetic
/// rounded to half, ran 0.6-1.2x). (The variant also asks for
/// setPerforationPath()'s Auto, as perf-as-exact does: tests force the
/// engines with the others.)
bool sampledAsExact(const KnobSpec& knob, const ConvArgs& a,
                    const PostOps& post, const Dims4& xd, const Dims4& wd,
                    const Dims4& yd);

/// w (K x C x KH x KW) sampled under \p knob: the filter the exact
/// convolution computes filter sampling with. Derived once per version of
/// w and cached with its other derived weights.
std::shared_ptr<const Tensor> sampledFilter(const Tensor* w,
                                            const KnobSpec& knob);

} // namespace hpvm::rt::kern

#endif // HPVM_RT_KERNELS_CONVSAMPLEDEXACT_H
