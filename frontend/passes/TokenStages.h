// TokenStages.h - the pass that keeps sequences of tokens channel-first.
#ifndef TORCH2HPVM_FRONTEND_PASSES_TOKENSTAGES_H
#define TORCH2HPVM_FRONTEND_PASSES_TOKENSTAGES_H

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

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_PASSES_TOKENSTAGES_H
