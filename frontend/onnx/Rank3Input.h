// Rank3Input.h - a 3-D model input (N x A x B: a spectrogram, a grayscale
// image without its channel axis, a sequence of feature vectors) held as
// the 4-D N x 1 x A x B it is in memory. The nodes reading it must reshape
// it (Unsqueeze, Reshape, Flatten, Squeeze of a unit axis): each becomes a
// Reshape of the 4-D input to its output shape, which the passes alias
// away (N x 1 x A x B), turn into channels_last (N x A x B x 1, the NHWC
// view of one channel) or keep before a dense layer (N x A*B).
#ifndef TORCH2HPVM_FRONTEND_ONNX_RANK3INPUT_H
#define TORCH2HPVM_FRONTEND_ONNX_RANK3INPUT_H

#include "ir/Graph.h"
#include "support/Diagnostics.h"

namespace hpvm::fe {

/// The 4-D shape a 3-D input \p shape (N x A x B) is held in: N x 1 x A x B.
std::vector<int64_t> heldShape(const std::vector<int64_t>& shape);

/// Rewrites the readers of \p asRead (the 3-D value the model's nodes read)
/// to read g.input (its 4-D form, heldShape()) through Reshapes; a reshape
/// to another shape goes to \p errors with the way forward. The readers
/// that read it as it is (a sequence of N x T x D tokens) keep reading
/// \p asRead, made a Reshape of g.input (isTokensOfRank3Input()): the
/// token pass takes it where they work per token, else lowering refuses it
/// with rank3InputRefusal().
void adoptRank3Input(Graph& g, Value* asRead, ErrorList& errors);

/// \p n is the Reshape of a 3-D input held in 4-D back to its 3-D shape
/// that adoptRank3Input() makes for the nodes reading it as it is.
bool isTokensOfRank3Input(const Graph& g, const Node& n);

/// Why \p n (isTokensOfRank3Input()) is left: told once per node reading
/// the input as it is (its origins).
std::string rank3InputRefusal(const Node& n);

/// The rule a sequence of N x T x D tokens is kept by, for messages: the
/// nodes on it "works per token (LayerNorm, ...) until a mean over the
/// tokens, the Gather of one or a graph output".
extern const char* const kPerTokenRule;

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_ONNX_RANK3INPUT_H
