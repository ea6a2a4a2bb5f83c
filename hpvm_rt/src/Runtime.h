// Runtime.h - the contract inside hpvm_rt between the executor (graph
// capture, tracing, fusion, execution; src/graph/) and the driver side
// (configurations, run loop, profiling; src/config/, src/RunModel.cpp).
#ifndef HPVM_RT_RUNTIME_H
#define HPVM_RT_RUNTIME_H

#include "kernels/Kernels.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hpvm::rt {

// --- The operator/knob table, expanded from Ops.def ------------------------

/// HPVM tensor op kinds, one per HPVM_OP row, in table order.
enum class HpvmOp : uint8_t {
#define HPVM_OP(Kind, ...) Kind,
#include "hpvm_rt/Ops.def"
};
constexpr int kNumHpvmOps = 0
#define HPVM_OP(...) +1
#include "hpvm_rt/Ops.def"
    ;

/// Facts of one HPVM_OP row.
struct OpInfo {
  HpvmOp op;
  const char* kindName; ///< "Conv"
  const char* confName; ///< "conv"
  const char* jsonType; ///< "convolution"
  const char* intrinsic;
  const char* rtCall; ///< Direct-call format string (Ops.def RtCall).
  /// The row's facts shared with the exporter (operand counts, knobs,
  /// FLOP formula, fusion role, activation, in place).
  const OpFacts* facts;
};
const OpInfo& opInfo(HpvmOp op);
/// Looks an op up by its configuration-file token; nullptr if unknown.
const OpInfo* opByConfName(std::string_view name);

/// Facts of one HPVM_KNOB row.
struct KnobInfo {
  int id;
  const char* confName;
  KnobSpec spec;
  double speedup;
  KnobApplies applies;
};
/// Every knob row, in table order.
const std::vector<KnobInfo>& allKnobs();
/// Looks a knob up by id; nullptr if unknown.
const KnobInfo* knobById(int id);
/// True if \p knob may be applied to \p op.
bool knobAppliesTo(const KnobInfo& knob, HpvmOp op);

// --- Configurations (grammar: driver/config/Config.h) ----------------------

/// One op of a configuration line with its knob.
struct OpChoice {
  HpvmOp op;
  int knobId = 11;
  int line = 0, column = 0; ///< Of the op token, for messages.
};

/// One configuration line: a fused HPVM node.
struct NodeConfig {
  std::string name; ///< First token (string key, HPVM's ordinal).
  int key = 0;      ///< 1 + ops on earlier lines (integer key).
  bool gpu = true;  ///< Device token: gpu (run on CPU, same knobs) / cpu.
  std::vector<OpChoice> ops;
  int line = 0;
};

/// One +++++ ... ----- block.
struct Configuration {
  std::string name;
  double speedup = 1, energy = 1, accuracy = 0, accuracyLoss = 0;
  std::vector<NodeConfig> nodes;
  int line = 0; ///< Line of the header.
};

/// A whole configuration file.
struct ConfigFile {
  std::string path;
  double baselineTime = 0;
  std::vector<Configuration> configs;
};

// --- What the executor knows about the program -----------------------------

/// One HPVM fused node of the launched program (HPVM's FuseHPVMTensorNodes
/// rules, reference section 7.1), in execution order.
struct FusedNodeInfo {
  int ordinal = 0;   ///< 1-based position (HPVM's string id).
  int firstOpId = 0; ///< Node id of the first op (integer key); 0 if
                     ///< the program sets no node ids.
  std::vector<HpvmOp> ops;
  std::vector<std::string> leafNames; ///< Node functions, for messages.
};

/// One executed tensor op of the last launch, for profiles and call logs.
struct OpRecord {
  int opId = 0;         ///< __hpvm__node_id of the op's leaf (0 if none).
  int fusedOrdinal = 0; ///< FusedNodeInfo::ordinal it belongs to.
  HpvmOp op;
  KnobSpec knob;
  std::vector<std::vector<int64_t>> inputShapes;
  std::vector<int64_t> outputShape;
  double flops = 0;
  double startSeconds = 0; ///< Since the launch started.
  double seconds = 0;      ///< Wall time; fused ops share their group's time,
                           ///< split in proportion to FLOPs.
};

/// The line of configuration \p conf (read from \p path) that configures
/// each of \p nodes, found by node id (\p byId: the program sets node ids)
/// or else by ordinal, and checked: every node marked \p configurable has a
/// line listing its ops, each knob applies to its op, and every line
/// configures a node. nullptr for the nodes not configurable. Throws
/// UserError ("path:line:col: ..."). The executor applies it at a launch;
/// the exporter checks --config with it.
std::vector<const NodeConfig*>
matchConfiguration(const Configuration& conf, const std::string& path,
                   const std::vector<FusedNodeInfo>& nodes,
                   const std::vector<char>& configurable, bool byId);

/// Applies \p config (nullptr: exact FP32 everywhere) to the following
/// launches. The executor checks it against the program at the next launch
/// and throws UserError naming the line and the fused node on mismatch.
void setActiveConfiguration(const Configuration* config,
                            const std::string& path);
/// The fused nodes of the most recently launched program (empty before the
/// first launch).
const std::vector<FusedNodeInfo>& programNodes();
/// Turns per-op timing records on or off (off: no timing overhead).
void setRecording(bool on);
/// Records of the most recent launch (when recording is on).
const std::vector<OpRecord>& lastLaunchRecords();

// --- int8 calibration --------------------------------------------------------

/// The measured input range of one fused node whose first op is a conv,
/// group_conv or mul: what its int8 knob quantizes with.
struct Int8Range {
  int ordinal = 0; ///< FusedNodeInfo::ordinal.
  HpvmOp op = HpvmOp::Conv;
  float lo = 0.f, hi = 0.f;
  int line = 0; ///< Line in the calibration file.
};

/// An int8 calibration (driver/Calibration.h reads, measures and writes
/// them).
struct Int8Calibration {
  std::string path; ///< For messages.
  std::string model, method;
  int64_t images = 0;
  std::vector<Int8Range> nodes;
};

/// Uses \p cal (nullptr: none) for the INT8 knobs of the following
/// launches; a configuration using one on a node the calibration lacks is
/// a UserError at the next launch.
void setActiveInt8Calibration(const Int8Calibration* cal);
/// The calibration in use (nullptr: none).
const Int8Calibration* activeInt8Calibration();

/// Called with the fp32 NCHW input of every conv, group_conv and mul that
/// starts a fused node, before it runs (calibration measurements).
using InputObserver = void (*)(void* context, int ordinal, HpvmOp op,
                               const float* data, int64_t n);
/// Installs (or, with nullptr, removes) the input observer.
void setInputObserver(InputObserver observer, void* context);

/// HPVM's top-1 prediction (computeAccuracy3): the first index of the
/// largest of the \p classes scores in \p row.
inline int64_t top1(const float* row, int64_t classes) {
  int64_t best = 0;
  for (int64_t c = 1; c < classes; ++c)
    if (row[best] < row[c])
      best = c;
  return best;
}

} // namespace hpvm::rt

#endif // HPVM_RT_RUNTIME_H
