// HiddenNodes.h - nodes the exporter refuses, hidden from the ONNX checker
// and shape inference for their duration, so that loading goes on to
// lowering and one refusal lists every problem.
#ifndef TORCH2HPVM_FRONTEND_ONNX_HIDDENNODES_H
#define TORCH2HPVM_FRONTEND_ONNX_HIDDENNODES_H

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace hpvm::fe {

/// While it lives, each node of \p model's graph marked in \p hide (an
/// operator ONNX has no schema for: a custom domain, a misspelt name; or
/// attributes its schema rejects; an experimental one) is a node of a
/// private domain the model imports, under a name of its own (the checker
/// warns of an experimental operator's name in any domain): the checker
/// skips it and shape inference leaves its outputs unknown. Its domain, its
/// operator and the model's imports are restored on destruction.
class HiddenNodes {
public:
  HiddenNodes(onnx::ModelProto& model, const std::vector<bool>& hide);
  ~HiddenNodes();
  HiddenNodes(const HiddenNodes&) = delete;
  HiddenNodes& operator=(const HiddenNodes&) = delete;

private:
  onnx::ModelProto& model_;
  struct Hidden {
    int node;
    std::string domain, opType;
  };
  std::vector<Hidden> hidden_;
};

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_ONNX_HIDDENNODES_H
