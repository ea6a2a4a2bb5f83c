// Fusions.h - the passes that turn an exporter's node chain for one operator
// into that operator.
#ifndef TORCH2HPVM_FRONTEND_PASSES_FUSIONS_H
#define TORCH2HPVM_FRONTEND_PASSES_FUSIONS_H

#include "ir/Graph.h"

namespace hpvm::fe {

/// Turns ShuffleNet's channel shuffle, Reshape (N, C, H, W) -> (N, g, C/g,
/// H, W), Transpose perm [0, 2, 1, 3, 4], Reshape back to (N, C, H, W),
/// into one channel_shuffle with g groups.
void fuseChannelShuffles(Graph& g);

/// Turns the LayerNorm over the last axis that the PyTorch exporter writes
/// before opset 17 (ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div,
/// then optionally Mul scale, Add bias) into one LayerNormalization.
void fuseLayerNorms(Graph& g);

/// Turns the exact GELU the PyTorch exporter writes (x / sqrt(2), Erf,
/// + 1, times x, times 0.5) into one gelu (an HPVM op: ONNX has Gelu from
/// opset 20 only, beyond what torch2hpvm loads).
void fuseGelus(Graph& g);

/// Turns the SiLU the PyTorch exporter writes (Sigmoid(x), times x) on a
/// 4-D activation into one silu (an HPVM op: x * sigmoid(x), which the
/// runtime fuses into the convolution before it as oneDNN's swish).
void fuseSilus(Graph& g);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_PASSES_FUSIONS_H
