// ModelConfig.cpp - see ModelConfig.h.
#include "codegen/ModelConfig.h"

#include "codegen/OpsJson.h"
#include "config/Config.h" // hpvm_rt's configuration files
#include "ir/OpTable.h"
#include "passes/QuantizedOps.h"

#include <algorithm>
#include <cmath>

namespace hpvm::fe {

namespace {

/// True when the int8 knob's own weight quantization of \p n (hpvm_rt's
/// Int8.cpp: each output channel at its largest magnitude / 127) gives
/// back the model's integers: every weight a whole multiple of that scale
/// (ONNX Runtime's symmetric per-channel quantization always is; a model
/// whose channels do not reach 127 is not, and runs its fp32 emulation).
bool weightsOnInt8Grid(const Node* n) {
  const Value* w = n->inputs.size() > 1 ? n->inputs[1] : nullptr;
  if (w == nullptr || !w->isConstant() || w->shape.size() != 4)
    return false;
  const std::vector<float> v = w->constant->toFloats();
  // Conv filters: K x C/g x KH x KW; mul: 1 x 1 x rows x K (K columns).
  const bool columns = n->kind == OpKind::Mul;
  const int64_t K = columns ? w->shape[3] : w->shape[0];
  const int64_t perK = static_cast<int64_t>(v.size()) / K;
  auto at = [&](int64_t k, int64_t e) {
    return v[static_cast<size_t>(columns ? e * K + k : k * perK + e)];
  };
  for (int64_t k = 0; k < K; ++k) {
    float m = 0.f;
    for (int64_t e = 0; e < perK; ++e)
      m = std::max(m, std::fabs(at(k, e)));
    if (m == 0.f)
      continue;
    const float s = m / 127.f;
    for (int64_t e = 0; e < perK; ++e) {
      const float q = at(k, e) / s;
      if (std::fabs(q - std::nearbyint(q)) > 1e-3f)
        return false;
    }
  }
  return true;
}

} // namespace

std::string preQuantizedConfig(const ProgramLayout& layout) {
  namespace rt = hpvm::rt;
  const int int8 = rt::knobIdByName("int8");
  rt::Configuration conf;
  conf.name = "model_int8";
  bool any = false;
  for (const FusedNode& f : fuseLikeHpvm(layout)) {
    rt::NodeConfig line;
    line.name = std::to_string(f.firstId);
    line.gpu = false;
    for (int i : f.opIndices) {
      const Node* n = layout.nodes[static_cast<size_t>(i)].node;
      const rt::HpvmOp op = hpvmOpDesc(n->kind).op;
      rt::OpChoice c;
      c.op = op;
      if (i == f.opIndices.front() && rt::hasInt8Knob(op) &&
          !n->inputs.empty() && quantizeSource(n->inputs[0]) &&
          weightsOnInt8Grid(n)) {
        c.knobId = int8;
        any = true;
      }
      line.ops.push_back(c);
    }
    conf.nodes.push_back(std::move(line));
  }
  if (!any)
    return "";
  rt::ConfigFile file;
  file.configs.push_back(std::move(conf));
  return rt::formatConfigFile(file) + "\n";
}

} // namespace hpvm::fe
