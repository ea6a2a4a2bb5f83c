// TokenStages.h - the pass that keeps sequences of tokens channel-first.
#ifndef TORCH2HPVM_FRONTEND_PASSES_TOKENSTAGES_H
#define TORCH2HPVM_FRONTEND_PASSES_TOKENSTAGES_H

#include "ir/Graph.h"

namespace hpvm::fe {

/// Keeps sequences of tokens B x T x D channel-first, B x D x H x W (ViT's
/// B x D x T x 1), from where they are made to where they leave.
/// - Entries: a B x D x H x W activation reshaped to B x D x H*W and
///   transposed (ViT's with its class token and position embedding: one
///   class_token; others: nothing), or only reshaped (flipped tokens, B x D
///   x T: a token_transpose); a 3-D input read as tokens (channels_first).
///   Entries of images of one size that the stage's nodes read together
///   are one stage (a non-local block's queries, keys and values).
/// - Inside: ops working per token on the features, rewritten as
///   makeChannelFirst does (layer_norm, 1 x 1 Conv, constants D x 1 x 1);
///   self-attention as torch.onnx writes nn.MultiheadAttention (1 x 1
///   Convs and attention); multi-head attention written out (attention on
///   the projections as they are, three joined by a Concat); Transposes
///   of the last two axes
///   (token_transpose) and MatMuls of two token values (token_matmul).
/// - Exits: the Gather of one token (select_token), the mean over the
///   tokens (pool_mean), the tokens viewed back as B x D x H x W (nothing,
///   or a token_transpose), graph outputs (channels_last).
void makeTokensChannelFirst(Graph& g);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_PASSES_TOKENSTAGES_H
