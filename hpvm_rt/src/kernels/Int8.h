// Int8.h - the int8 engine: a layer's input quantized per tensor (from the
// calibrated range or the batch's own), its weights per output channel,
// and oneDNN's int8 convolution and inner product.
#ifndef HPVM_RT_KERNELS_INT8_H
#define HPVM_RT_KERNELS_INT8_H

#include "kernels/Primitives.h"
#include "kernels/TensorImpl.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>

namespace hpvm::rt::kern {

/// The quantization of an int8 layer's input (base/KnobSpec.h's Int8Quant):
/// from the calibrated range (INT8) or from this batch's own range
/// (INT8DYN).
Int8Quant inputQuant(const KnobSpec& knob, const Tensor* x);

/// x quantized into layout \p want (u8 or s8): q = saturate(round(x /
/// scale)), in one reorder from x's current layout into \p buf. When the
/// previous int8 layer already stored x in \p want's type with this scale,
/// its values are used as they are (reordered only if the layout differs).
dnnl::memory quantizedSource(const Tensor* x, const dnnl::memory::desc& want,
                             float scale, const PoolBuffer& buf);

/// How int8 weights are coded for oneDNN. With VNNI (or AMX) 8 bits,
/// -127..127. Below it oneDNN multiplies u8 by s8 with vpmaddubsw, whose
/// pair sums saturate at 16 bits: weights get 7 bits, -63..63 (the
/// largest pair sum 2 * 255 * 63 fits); its convolutions of s8 sources
/// also halve the weights (rounding odd ones), so for them the 7-bit values
/// are stored doubled (even, exact after halving) with half the scale.
struct Int8Code {
  float qmax = 127.f;
  bool doubled = false;
};
Int8Code int8Code(dt srcType, bool convolution);

/// w quantized per output channel as it is (no bias or batch norm folded
/// in: the perforated int8 convolution runs its post-ops in its output
/// pass, in fp32, like the other approximate convolutions).
const TensorImpl::Derived& int8Unfolded(const Tensor* w, int64_t groups,
                                        Int8Code code);

/// w quantized per output channel (int8Unfolded) and dequantized to fp32:
/// the filter the fp32 engines compute int8 knobs with where the int8
/// engines do not apply. Cached on w.
const float* dequantizedWeights(const Tensor* w, int64_t groups);

/// Conv y = post(x * w) in int8: x quantized per tensor, w per output
/// channel, 32-bit accumulation rescaled by the output scales (fixed when
/// the primitive is created: one primitive per layer and input scale),
/// the fp32 post-ops (activation, residual) fused after it, an fp32
/// result.
void convInt8(const Tensor* x, const Tensor* w, const ConvArgs& args,
              const PostOps& post, const KnobSpec& knob, Tensor* y,
              const Dims4& xd, const Dims4& wd, const Dims4& yd);

/// Dense y = post(x * w) in int8 (see convInt8; the inner product takes its
/// output scales at run time): x is M x K viewed 4-D, w is K x N, y an
/// fp32 M x N written to y's host buffer.
void denseInt8(const Tensor* x, const Tensor* w, const PostOps& post,
               const KnobSpec& knob, Tensor* y);

} // namespace hpvm::rt::kern

#endif // HPVM_RT_KERNELS_INT8_H
