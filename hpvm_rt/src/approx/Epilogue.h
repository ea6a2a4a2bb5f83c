// Epilogue.h - elementwise work (the layer's post-ops) that the approximate
// convolutions apply to their output while it is still in cache, instead
// of the caller making extra passes over the whole output.
#ifndef HPVM_RT_APPROX_EPILOGUE_H
#define HPVM_RT_APPROX_EPILOGUE_H

#include "base/KnobSpec.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <functional>
#include <vector>

namespace hpvm::rt::approx {

/// Elementwise work on final output values. The convolutions call apply()
/// exactly once for every output value, on contiguous runs of one NCHW
/// output plane, from several threads at once (apply must be thread safe).
class Epilogue {
public:
  virtual ~Epilogue() = default;
  /// Transforms v[0..len), the values at offsets off..off+len-1 of output
  /// plane (n, k), in place.
  virtual void apply(int64_t n, int64_t k, int64_t off, float* v,
                     int64_t len) const = 0;
};

/// convPerforated of Kernels.h, then `epi` on every output value (none if
/// null).
void convPerforated(const float* x, int64_t N, int64_t C, int64_t H, int64_t W,
                    const float* w, int64_t K, int64_t KH, int64_t KW,
                    const ConvArgs& a, const KnobSpec& knob, float* y,
                    const Epilogue* epi);

/// convSampled of Kernels.h, then `epi` on every output value (none if
/// null).
void convSampled(const float* x, int64_t N, int64_t C, int64_t H, int64_t W,
                 const float* w, int64_t K, int64_t KH, int64_t KW,
                 const ConvArgs& a, const KnobSpec& knob, float* y,
                 const Epilogue* epi);

/// Elementwise work on the rows of an nChw16c output (the blocked engine's
/// counterpart of Epilogue): applyRow() is called exactly once for every
/// output row (image n, channel block cb, row h), from several threads at
/// once; v holds wo x 16 values, channel cb * 16 + l of column x at
/// v[x * 16 + l].
class BlockedEpilogue {
public:
  virtual ~BlockedEpilogue() = default;
  virtual void applyRow(int64_t n, int64_t cb, int64_t h, float* v,
                        int64_t wo) const = 0;
  /// True when applyImages() has work: the engine then writes the rows
  /// through the cache and calls it on each chunk of finished images.
  virtual bool wantsImages() const { return false; }
  /// Work on whole finished images n0 .. n0 + count - 1, whose nChw16c
  /// values start at y (after applyRow() ran on all their rows).
  virtual void applyImages(float* /*y*/, int64_t /*n0*/,
                           int64_t /*count*/) const {}
};

/// An approximate convolution on the layer kernels' blocked activations.
struct BlockedConv {
  dnnl::memory x; ///< N x C x H x W in any layout (nChw16c: no reorder).
  int64_t n = 0, c = 0, h = 0, w = 0;
  const float* weights = nullptr; ///< K x C/groups x KH x KW, OIHW.
  int64_t k = 0, kh = 0, kw = 0;
  ConvArgs args;
  KnobSpec knob; ///< PerfRow or PerfCol (perforation), Samp (sampling).
  /// Rounds a copy of the input in place (fp16 knobs); none if empty.
  std::function<void(float*, int64_t)> roundInput;
  /// Native bf16 arithmetic: bf16 operands, fp32 sums and results; the
  /// input is converted once. roundInput must be empty.
  bool bf16 = false;
  /// int8, when `weights` is set: `x` holds the input quantized per
  /// tensor (u8 or s8, NHWC), `weights` the filter quantized
  /// per output channel (OIHW s8, from `BlockedConv::weights`, which
  /// identifies it in the filter cache); the 32-bit sums are rescaled to
  /// fp32 by outScales[k] = input scale * weight scale k.
  struct Int8 {
    const int8_t* weights = nullptr;
    std::vector<float> outScales;
  } int8;
  /// int8: the quantized input's type (u8 or s8), which `x` holds; undef
  /// for the other numerics. The *Applies() functions read this, the
  /// geometry, the knob, bf16 and int8.outScales, nothing else.
  dnnl::memory::data_type int8Type = dnnl::memory::data_type::undef;
  /// Returns the dense nChw16c N x K x Ho x Wo output buffer; called once,
  /// only when the convolution runs.
  std::function<float*()> output;
  const BlockedEpilogue* epilogue = nullptr; ///< Null: none.
};

/// True when convPerforatedBlocked computes bc: false for K not a multiple
/// of 16, grouped but not depthwise, tiny outputs, or no fast oneDNN
/// kernel (the caller then uses convPerforated on NCHW data).
bool perforatedBlockedApplies(const BlockedConv& bc);
/// Runs bc with oneDNN's blocked kernels, the kept rows or columns only.
/// Only where perforatedBlockedApplies(bc).
void convPerforatedBlocked(const BlockedConv& bc);

/// Filter sampling (bc.knob Samp) on blocked activations: a reduced im2col
/// gathered from the input and one GEMM per chunk of images, in fp32, in
/// bf16 (bc.bf16) or in int8 (bc.int8Type; bc.x then holds the input
/// quantized as NHWC). Only where sampledBlockedApplies(bc).
void convSampledBlocked(const BlockedConv& bc);
/// True when convSampledBlocked computes bc: false when grouped, C or K not
/// a multiple of 16, or, in fp32, where it is not the faster engine (large
/// outputs, see SamplingBlocked.cpp); the caller then uses convSampled on
/// NCHW data.
bool sampledBlockedApplies(const BlockedConv& bc);

} // namespace hpvm::rt::approx

#endif // HPVM_RT_APPROX_EPILOGUE_H
