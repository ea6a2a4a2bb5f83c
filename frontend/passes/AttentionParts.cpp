// AttentionParts.cpp - see AttentionParts.h.
#include "passes/AttentionParts.h"

#include "onnx/OpAttrs.h"
#include "passes/ConstantTensors.h"
#include "passes/Matchers.h"

#include <algorithm>

namespace hpvm::fe {

/// Appends \p n to \p nodes if it is a \p k node whose output is not the
/// graph's; false otherwise (the matchers' step).
bool takeInto(const Graph& g, std::vector<Node*>& nodes, Node* n, OpKind k) {
  if (!n || n->kind != k || g.isOutput(n->output))
    return false;
  nodes.push_back(n);
  return true;
}

/// Attention's second half as torch.onnx writes it: Softmax of \p scores
/// over the last axis (\p lastAxis counted from the front, or -1), then
/// MatMul by \p values (read by nothing else); appends both to \p nodes.
Node* matchSoftmaxMix(const Graph& g, Value* scores, int64_t lastAxis,
                      Value* values, std::vector<Node*>& nodes) {
  Node* softmax = soleUser(scores);
  if (!takeInto(g, nodes, softmax, OpKind::OnnxSoftmax))
    return nullptr;
  const int64_t axis = OpAttrs(*softmax, g.source.opset).getInt("axis");
  if (axis != -1 && axis != lastAxis)
    return nullptr;
  Node* mix = soleUser(softmax->output);
  if (!takeInto(g, nodes, mix, OpKind::OnnxMatMul) ||
      mix->inputs[0] != softmax->output || mix->inputs[1] != values ||
      soleUser(values) != mix)
    return nullptr;
  return mix;
}

/// The ONNX origins of \p nodes[from, to).
std::vector<Origin> originsOf(const std::vector<Node*>& nodes, size_t from,
                              size_t to) {
  std::vector<Origin> o;
  for (size_t i = from; i < to; ++i)
    o.insert(o.end(), nodes[i]->origins.begin(), nodes[i]->origins.end());
  return o;
}

/// Erases matched \p nodes, users before producers.
void eraseMatched(Graph& g, std::vector<Node*> nodes) {
  std::sort(nodes.begin(), nodes.end(), [&](const Node* a, const Node* b) {
    return g.position(a) > g.position(b);
  });
  for (Node* d : nodes)
    g.eraseNode(d);
}

std::shared_ptr<TensorData> keyMajorScores(const TensorData& t, int64_t T,
                                           std::vector<int64_t> dims) {
  std::vector<float> src = t.toFloats(), dst(src.size());
  for (size_t b = 0; b < src.size(); b += size_t(T * T))
    for (int64_t q = 0; q < T; ++q)
      for (int64_t k = 0; k < T; ++k)
        dst[b + size_t(k * T + q)] = src[b + size_t(q * T + k)];
  return floatTensor(dst, std::move(dims));
}

} // namespace hpvm::fe
