// SplitOutputs.h - ONNX Split loaded as one Slice per output: the IR has
// one output per node, and every later stage (folding, the token and
// attention matchers, lowering to channel_slice or spatial_slice) already
// knows Slice.
#ifndef TORCH2HPVM_FRONTEND_ONNX_SPLITOUTPUTS_H
#define TORCH2HPVM_FRONTEND_ONNX_SPLITOUTPUTS_H

#include "ir/Graph.h"
#include "onnx/ModelInput.h"

#include <onnx/onnx_pb.h>

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace hpvm::fe {

/// Enters every output of Split \p node (at \p origin) in \p values and,
/// when its operands \p ins could be read (\p ok), adds a node for each
/// output that is read (\p used): a Slice of the input along \p axis as
/// long as ONNX's shape inference made that output (\p types: whether the
/// sizes come from the `split` attribute, the `split` input or an even
/// split, they are the outputs' lengths), or, where a length before it is
/// unknown, a Split node of its own, which lowering refuses with the
/// reason.
void addSplitOutputs(Graph& g, const onnx::NodeProto& node,
                     const Origin& origin, const std::vector<Value*>& ins,
                     bool ok, int64_t axis, int64_t opset,
                     const std::unordered_map<std::string, TypeInfo>& types,
                     const std::unordered_set<std::string>& used,
                     std::unordered_map<std::string, Value*>& values);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_ONNX_SPLITOUTPUTS_H
