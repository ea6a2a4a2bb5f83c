// AttentionParts.h - the steps the attention matchers share
// (AttentionMatchers.cpp: Swin's windows and nn.MultiheadAttention;
// HeadsAttention.cpp: attention written out by hand): taking a node into a
// match, the softmax-and-mix half, the origins of a match, erasing it, and
// scores read key-major.
#ifndef TORCH2HPVM_FRONTEND_PASSES_ATTENTIONPARTS_H
#define TORCH2HPVM_FRONTEND_PASSES_ATTENTIONPARTS_H

#include "ir/Graph.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace hpvm::fe {

/// Appends \p n to \p nodes if it is a \p k node whose output is not the
/// graph's; false otherwise (the matchers' step).
bool takeInto(const Graph& g, std::vector<Node*>& nodes, Node* n, OpKind k);

/// Attention's second half as torch.onnx writes it: Softmax of \p scores
/// over the last axis (\p lastAxis counted from the front, or -1), then
/// MatMul by \p values (read by nothing else); appends both to \p nodes.
Node* matchSoftmaxMix(const Graph& g, Value* scores, int64_t lastAxis,
                      Value* values, std::vector<Node*>& nodes);

/// The ONNX origins of \p nodes[from, to).
std::vector<Origin> originsOf(const std::vector<Node*>& nodes, size_t from,
                              size_t to);

/// Erases matched \p nodes, users before producers.
void eraseMatched(Graph& g, std::vector<Node*> nodes);

/// \p t, matrices of T x T scores (query-major: element [q][k]) one after
/// another, with each matrix transposed to key-major ([k][q], what
/// window_attention reads), as a tensor of \p dims.
std::shared_ptr<TensorData> keyMajorScores(const TensorData& t, int64_t T,
                                           std::vector<int64_t> dims);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_PASSES_ATTENTIONPARTS_H
