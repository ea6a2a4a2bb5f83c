// TokenOrder.h - the pass that puts sequences of tokens batch first
// (B x T x D) before the token stages keep them channel-first.
#ifndef TORCH2HPVM_FRONTEND_PASSES_TOKENORDER_H
#define TORCH2HPVM_FRONTEND_PASSES_TOKENORDER_H

#include "ir/Graph.h"

namespace hpvm::fe {

/// Rewrites the token orders torch.onnx writes into the batch-first form
/// makeTokensChannelFirst() takes:
/// - Transposes merged by the exporter: a (2, 0, 1) of B x D x T (tokens
///   made by `transpose(1, 2)` and made sequence-first at once) becomes
///   (0, 2, 1) then (1, 0, 2); another Transpose of a value that has a
///   (0, 2, 1) reader reads that reader's output (the perms composed).
/// - Sequence-first tokens, T x B x D (`x.permute(1, 0, 2)` before an
///   nn.TransformerEncoder or nn.MultiheadAttention of batch_first=False):
///   from the Transpose (1, 0, 2) that makes them, every op that works per
///   token (as worksPerPixel() says) on them, or on them and other T x B x
///   D values, computes B x T x D instead; other readers read them through
///   a Transpose (1, 0, 2) (nn.MultiheadAttention's core then has the
///   Transposes of its batch_first form around it), and other T x B x D
///   inputs of those ops are read through one. A Transpose (1, 0, 2) back
///   is removed, a mean over axis 0 and a Gather along it are taken along
///   axis 1.
void makeTokensBatchFirst(Graph& g);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_PASSES_TOKENORDER_H
