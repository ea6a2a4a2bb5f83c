// DepthwiseConv.h - depthwise convolutions (one filter per channel) on
// activations in 16-channel blocks, fp32 or bf16, with AVX-512: oneDNN's
// depthwise kernels are slow on the small maps of mobile nets (at 16-64
// channels its bf16 NHWC kernel runs at half its fp32 one), and a depthwise
// layer has no reduction for bf16 dot products or AMX tiles to speed up.
//
// Numerics: every product and sum in fp32, the taps summed in (kh, kw)
// order onto the bias. Under bf16 the input (where stored in fp32) and the
// filter are rounded to bf16 first (nearest even), so that the products
// are those of bf16 operands, exact in fp32, as in oneDNN's bf16 kernels;
// a bf16 output is the fp32 result rounded to nearest even.
#ifndef HPVM_RT_APPROX_DEPTHWISECONV_H
#define HPVM_RT_APPROX_DEPTHWISECONV_H

#include <cstdint>

namespace hpvm::rt::approx {

/// A depthwise convolution: C channels, each its own KH x KW filter.
struct DepthwiseConv {
  int64_t n = 0, c = 0, h = 0, w = 0; ///< Input N x C x H x W.
  int64_t kh = 0, kw = 0;
  int64_t padH = 0, padW = 0, strideH = 1, strideW = 1;
  int64_t ho() const { return (h + 2 * padH - kh) / strideH + 1; }
  int64_t wo() const { return (w + 2 * padW - kw) / strideW + 1; }
};

/// An activation tensor as depthwiseConv reads or writes it: C in blocks of
/// 16 (nChw16c, or NHWC with C a multiple of 16), fp32 or bf16 values.
struct ChannelBlocks {
  void* data = nullptr;
  bool bf16 = false;
  bool nhwc = false;
};

/// The activation after the bias, computed in registers.
enum class DwAct : uint8_t { None, Relu, Clip, LeakyRelu, HardSwish };

struct DwEpilogue {
  DwAct act = DwAct::None;
  float lo = 0, hi = 0; ///< Clip's bounds; LeakyRelu's slope in `lo`.
};

/// True where depthwiseConv runs: AVX-512 (haveAvx512()), C a multiple of
/// 16, a window that fits the padded input, positive strides.
bool depthwiseApplies(const DepthwiseConv& d);

/// Floats of the packed filter: C/16 blocks of KH x KW x 16.
int64_t packedDepthwiseSize(const DepthwiseConv& d);

/// Packs an fp32 C x 1 x KH x KW filter for depthwiseConv, rounded to bf16
/// (nearest even) with \p bf16.
void packDepthwiseFilter(const DepthwiseConv& d, const float* filter, bool bf16,
                         float* packed);

/// y = act(conv(x, filter) + bias) over the whole batch (OpenMP). With
/// \p roundInput, fp32 input values are rounded to bf16 as they are read.
void depthwiseConv(const DepthwiseConv& d, const ChannelBlocks& x,
                   const float* packed, const float* bias, bool roundInput,
                   const DwEpilogue& epi, const ChannelBlocks& y);

} // namespace hpvm::rt::approx

#endif // HPVM_RT_APPROX_DEPTHWISECONV_H
