// LayoutRegions.h - the passes that make channel-last regions and a vision
// transformer's tokens channel-first.
#ifndef TORCH2HPVM_FRONTEND_PASSES_LAYOUTREGIONS_H
#define TORCH2HPVM_FRONTEND_PASSES_LAYOUTREGIONS_H

#include "ir/Graph.h"

namespace hpvm::fe {

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

/// Makes channel-last regions channel-first: between a Transpose of an
/// N x C x H x W activation to N x H x W x C (perm [0, 2, 3, 1]) and the
/// Transposes back ([0, 3, 1, 2]), where every op works per pixel on the
/// last axis (LayerNormalization, MatMul by a constant matrix - a Linear
/// layer, elementwise ops and constants over the channels), the ops are
/// rewritten for N x C x H x W (LayerNormalization over axis 1, a 1 x 1
/// Conv, constants C x 1 x 1) and the Transposes disappear (ConvNeXt).
void makeChannelFirst(Graph& g);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_PASSES_LAYOUTREGIONS_H
