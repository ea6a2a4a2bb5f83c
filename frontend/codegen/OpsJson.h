// OpsJson.h - HPVM's fusion groups and the tuner metadata (ops.json), both
// derived from the lowered graph and Ops.def, never hand-kept; and the
// operator table printed by --list-ops.
#ifndef TORCH2HPVM_FRONTEND_CODEGEN_OPSJSON_H
#define TORCH2HPVM_FRONTEND_CODEGEN_OPSJSON_H

#include "codegen/ProgramLayout.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace hpvm::fe {

/// One node after HPVM's FuseHPVMTensorNodes pass: consecutive ops fused
/// into one leaf.
struct FusedNode {
  int firstId = 0;            ///< Op id of the first op (its config key).
  std::vector<int> opIndices; ///< 0-based op indices, in order.
};

/// HPVM's fusion groups (reference 7.1): greedy from every conv / mul,
/// conv -> add -> (relu|tanh|clipped_relu) -> (pool_max|pool_mean),
/// conv -> add -> pool, conv -> add, mul -> add -> activation, mul -> add;
/// a node joins only when it is the unique user of the previous one and
/// has no other operand produced by a node. Every other op is alone.
std::vector<FusedNode> fuseLikeHpvm(const ProgramLayout& layout);

/// Paths ops.json records for the tuner (empty: omitted).
struct OpsJsonPaths {
  std::string configFile;     ///< hpvm_tensor with --config.
  std::string tuneLabelsPath; ///< hpvm_tensor_inspect.
  std::string confPath;       ///< hpvm_tensor_inspect.
  std::string fifoPathR;      ///< hpvm_tensor_inspect.
  std::string fifoPathW;      ///< hpvm_tensor_inspect.
};

/// ops.json (reference 8.4): op_cost (exact FLOPs), op_knobs, knobs, the
/// target's paths, and "fused_nodes". Keys keep op order.
nlohmann::ordered_json makeOpsJson(const ProgramLayout& layout,
                                   const OpsJsonPaths& paths);

/// The operator table (ONNX op, min opset, HPVM ops, intrinsics, config
/// names, knobs) as an RST list-table, as in README.rst.
std::string opsTableRst();
/// The same table as JSON: {"onnx_ops": [...], "hpvm_ops": [...],
/// "knobs": [...]}.
nlohmann::ordered_json opsTableJson();

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_CODEGEN_OPSJSON_H
