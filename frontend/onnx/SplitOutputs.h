// SplitOutputs.h - ONNX Split loaded as one Slice per output: the IR has
// one output per node, and every later stage (folding, the token and
// attention matchers, lowering to channel_slice or spatial_slice) already
// knows Slice.
#ifndef TORCH2HPVM_FRONTEND_ONNX_SPLITOUTPUTS_H
#define TORCH2HPVM_FRONTEND_ONNX_SPLITOUTPUTS_H

#include "ir/Graph.h"
#include "onnx/ModelInput.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace hpvm::fe {

/// Enters every output of Split \p node (at \p origin, with attributes
/// \p attrs) in \p values and, when its operands \p ins could be read
/// (\p ok), adds a node for each output that is read (\p used): a Slice of
/// the input along the axis as long as ONNX's shape inference made that
/// output (\p types: whether the sizes come from the `split` attribute, the
/// `split` input or an even split, they are the outputs' lengths), or,
/// where a length before it is unknown, a Split node of its own (its axis,
/// sizes, kOutputIndex and kSplitOutputs), which constant folding turns
/// into a Slice once its sizes and input are known (sliceOfSplit).
void addSplitOutputs(Graph& g, const onnx::NodeProto& node,
                     const Origin& origin, const std::vector<Value*>& ins,
                     bool ok, const std::map<std::string, AttrValue>& attrs,
                     int64_t opset,
                     const std::unordered_map<std::string, TypeInfo>& types,
                     const std::unordered_set<std::string>& used,
                     std::unordered_map<std::string, Value*>& values);

/// Why Split node \p n (made by addSplitOutputs) cannot be placed along its
/// axis yet, or "" with its output's \p begin and \p length along
/// \p axis (>= 0): the sizes come from the `split` attribute (opset < 13),
/// a constant `split` input (13 on) or an even split of a known dim, and
/// must be as many as the outputs, none negative, summing to the dim where
/// it is known.
std::string splitPlacement(const Node& n, int64_t opset, int64_t& begin,
                           int64_t& length, int64_t& axis);

/// Turns Split node \p n into the Slice of its output where
/// splitPlacement() places it; returns whether it did.
bool sliceOfSplit(Graph& g, Node* n, int64_t opset);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_ONNX_SPLITOUTPUTS_H
