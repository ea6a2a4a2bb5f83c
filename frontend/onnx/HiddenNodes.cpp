// HiddenNodes.cpp - refused nodes moved to a private domain and back.
#include "onnx/HiddenNodes.h"

namespace hpvm::fe {

namespace {

/// No model imports it: the exporter's own.
constexpr const char* kHiddenDomain = "ai.torch2hpvm.hidden";
constexpr const char* kHiddenOp = "Hidden";

} // namespace

HiddenNodes::HiddenNodes(onnx::ModelProto& model, const std::vector<bool>& hide)
    : model_(model) {
  onnx::GraphProto& g = *model.mutable_graph();
  for (int i = 0; i < g.node_size() && size_t(i) < hide.size(); ++i)
    if (hide[size_t(i)]) {
      hidden_.push_back({i, g.node(i).domain(), g.node(i).op_type()});
      g.mutable_node(i)->set_domain(kHiddenDomain);
      g.mutable_node(i)->set_op_type(kHiddenOp);
    }
  if (hidden_.empty())
    return;
  onnx::OperatorSetIdProto* import = model.add_opset_import();
  import->set_domain(kHiddenDomain);
  import->set_version(1);
}

HiddenNodes::~HiddenNodes() {
  if (hidden_.empty())
    return;
  onnx::GraphProto& g = *model_.mutable_graph();
  for (const Hidden& h : hidden_) {
    g.mutable_node(h.node)->set_domain(h.domain);
    g.mutable_node(h.node)->set_op_type(h.opType);
  }
  model_.mutable_opset_import()->RemoveLast();
}

} // namespace hpvm::fe
