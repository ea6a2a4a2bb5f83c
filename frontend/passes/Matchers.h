// Matchers.h - the small node matchers and rewriting steps the passes
// share: a snapshot of the node list, sole users, scalar and Transpose
// tests, replacing a chain of nodes by one.
#ifndef TORCH2HPVM_FRONTEND_PASSES_MATCHERS_H
#define TORCH2HPVM_FRONTEND_PASSES_MATCHERS_H

#include "ir/Graph.h"

#include <cstdint>
#include <vector>

namespace hpvm::fe {

/// Snapshot of the node list, so passes may erase while iterating.
std::vector<Node*> nodeList(const Graph& g);

/// The only reader of \p v, or null.
Node* soleUser(const Value* v);

/// The value of scalar constant \p v, or NaN.
double scalarValue(const Value* v);

/// The input of binary node \p n other than \p v (null if \p n does not
/// read \p v or reads it twice).
Value* otherInput(const Node* n, const Value* v);

/// Replaces the chain ending in \p last by a new node \p kind reading
/// \p inputs, placed where \p last was; erases \p chain (last first).
Node* replaceChain(Graph& g, OpKind kind, std::vector<Value*> inputs,
                   const std::vector<Node*>& chain);

/// The permutation of Transpose \p n.
std::vector<int64_t> permOf(const Node* n, int64_t opset);

/// \p n is a Transpose by \p perm reading \p v.
bool isTranspose(const Node* n, const Value* v, std::vector<int64_t> perm,
                 int64_t opset);

/// \p v is a float constant of \p n elements, the last dim \p last.
bool isConstantOf(const Value* v, int64_t n, int64_t last);

/// \p u is a ReduceMean of \p v alone over its axis \p axis only (given
/// as it or as counted from the end), the axis dropped (keepdims 0).
bool isMeanOver(const Node* u, const Value* v, int64_t axis, int64_t opset);

/// Axis \p a (negative counts from the end) of N x H x W x C in
/// N x C x H x W; an \p a that is no axis of a 4-D value is returned as is.
int64_t channelFirstAxis(int64_t a);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_PASSES_MATCHERS_H
