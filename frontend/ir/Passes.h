// Passes.h - the frontend's graph passes: simplification, lowering to HPVM
// tensor ops, verification and printing.
#ifndef TORCH2HPVM_FRONTEND_IR_PASSES_H
#define TORCH2HPVM_FRONTEND_IR_PASSES_H

#include "ir/Graph.h"

#include <functional>
#include <string>

namespace hpvm::fe {

/// Options of lowerToHpvm().
struct PipelineOptions {
  /// Called after every pass with its name (for --dump-ir); may be empty.
  std::function<void(const std::string& pass, const Graph&)> afterPass;
  /// Largest tensor (per image) a lowered node may produce (--max-size).
  uint64_t maxBytes = uint64_t(8) << 30;
};

/// Runs every simplification pass and the lowering, verify() after each one.
/// Afterwards the graph holds only HPVM kinds, in op numbering order. Throws
/// UserError listing every node that cannot be lowered, all at once.
void lowerToHpvm(Graph& g, const PipelineOptions& opts = {});

/// Checks the IR invariants: arity of HPVM nodes (Ops.def), 4-D shapes after
/// lowering, user/producer links, no dangling values, topological order.
/// A violation is a bug: it aborts through HPVM_ASSERT.
void verify(const Graph& g);

/// The IR as text, one line per node, e.g.
/// "%3 = Conv(%input: 1x1x28x28, %conv1.weight: 32x1x5x5) -> 1x32x28x28
/// [pads 2 2 strides 1 1]  # Conv_0".
std::string dumpIr(const Graph& g);

/// "1x32x28x28" ("?" for a symbolic dimension, "scalar" for rank 0).
std::string formatShape(const std::vector<int64_t>& shape);

/// A scalar operand as C source text: integers in decimal, reals in the
/// shortest form that reads back to the same double ("1e-05", "6", "0.001").
std::string formatScalar(const Scalar& s);

// The individual passes lowerToHpvm() runs, in order; exposed for tests.

/// Removes nodes that do not contribute to the graph output.
void eliminateDeadNodes(Graph& g);
/// Evaluates Constant nodes and shape computations (Shape, Gather,
/// Unsqueeze, Squeeze, Concat, Cast, Reshape, ConstantOfShape, Equal, Where,
/// Expand, Mod, Not, Range, ScatterND and arithmetic of constants) into
/// constants,
/// and resolves the target shape of Reshape nodes whose shape became known.
void foldConstants(Graph& g);
/// Removes Identity and inference-mode Dropout nodes.
void removeIdentities(Graph& g);
/// Folds zero-valued constant Pad nodes into the Conv or pool they feed,
/// where that computes the same result (see the comment of canFoldPad).
void foldPads(Graph& g);
/// Aliases Flatten/Reshape away where HPVM needs no code: flattening NCHW to
/// (N, C*H*W) right before Gemm/MatMul, or a reshape that keeps the 4-D
/// form (N, C, H, W) of its input.
void aliasReshapes(Graph& g);

/// Turns ShuffleNet's channel shuffle, Reshape (N, C, H, W) -> (N, g, C/g,
/// H, W), Transpose perm [0, 2, 1, 3, 4], Reshape back to (N, C, H, W),
/// into one channel_shuffle with g groups.
void fuseChannelShuffles(Graph& g);

/// Turns the LayerNorm over the last axis that the PyTorch exporter writes
/// before opset 17 (ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div,
/// then optionally Mul scale, Add bias) into one LayerNormalization.
void fuseLayerNorms(Graph& g);

/// Makes a vision transformer's tokens channel-first: from its patch
/// embedding (a B x D x H x W activation reshaped and transposed to
/// B x H*W x D, the constant class token concatenated before, the position
/// embedding added: one class_token) to the Gather of one token before the
/// head (select_token), tokens B x T x D become B x D x T x 1. Inside,
/// ops working per token on the features are rewritten as makeChannelFirst
/// does (layer_norm, 1 x 1 Conv, constants D x 1 x 1), and each self-
/// attention as torch.onnx writes nn.MultiheadAttention becomes a 1 x 1
/// Conv to queries, keys and values, attention, and a 1 x 1 Conv (ViT).
void makeTokensChannelFirst(Graph& g);

/// Turns the exact GELU the PyTorch exporter writes (x / sqrt(2), Erf,
/// + 1, times x, times 0.5) into one gelu (an HPVM op: ONNX has Gelu from
/// opset 20 only, beyond what torch2hpvm loads).
void fuseGelus(Graph& g);

/// Makes channel-last regions channel-first: between a Transpose of an
/// N x C x H x W activation to N x H x W x C (perm [0, 2, 3, 1]) and the
/// Transposes back ([0, 3, 1, 2]), where every op works per pixel on the
/// last axis (LayerNormalization, MatMul by a constant matrix - a Linear
/// layer, elementwise ops and constants over the channels), the ops are
/// rewritten for N x C x H x W (LayerNormalization over axis 1, a 1 x 1
/// Conv, constants C x 1 x 1) and the Transposes disappear (ConvNeXt).
void makeChannelFirst(Graph& g);
/// Turns every remaining ONNX-level node into HPVM ops (Conv and Gemm bias
/// become a separate Add). Throws UserError listing every node that cannot
/// be lowered.
void lowerNodes(Graph& g);

/// Checks what the generated program will compute with, node by node (one
/// UserError listing them all): every integer operand fits the intrinsic's
/// `int`, and every output takes at most \p maxBytes per image.
void checkOperandRanges(const Graph& g, uint64_t maxBytes);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_IR_PASSES_H
