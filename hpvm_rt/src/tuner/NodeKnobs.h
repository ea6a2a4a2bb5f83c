// NodeKnobs.h - the knob choices of one fused node: which knobs it may
// take, its configuration line for a knob, and which lines HPVM's own CPU
// runtime parses.
#ifndef HPVM_RT_TUNER_NODEKNOBS_H
#define HPVM_RT_TUNER_NODEKNOBS_H

#include "config/Configuration.h"
#include "config/Match.h"

#include <string>
#include <vector>

namespace hpvm::rt::tuner {

/// The program's fused node \p node as a configuration line with one knob
/// per op: \p knobId on the first op, and on the other ops the exact knob
/// of the same precision (fp16 next to fp16 knobs, else fp32).
NodeConfig nodeLine(const FusedNodeInfo& node, int knobId);

/// The knob ids that may be chosen for \p node (its first op's knobs, in
/// table order; the exact fp32 knob first); with \p hpvmCpu only those HPVM's
/// CPU runtime parses (fp32, perf, samp).
std::vector<int> nodeKnobs(const FusedNodeInfo& node, bool hpvmCpu = false);

/// True if HPVM's own runtime parses \p line as a `cpu` line: its CPU
/// parser knows only the knob names fp32, perf and samp (reference 4.1).
bool hpvmParsesCpuLine(const NodeConfig& line);

/// The knob names of \p lines that HPVM's own CPU runtime does not parse
/// ("bf16", "int8", "perf_int8" ...), each once, in name order.
std::vector<std::string>
hpvmUnparsedKnobs(const std::vector<NodeConfig>& lines);

} // namespace hpvm::rt::tuner

#endif // HPVM_RT_TUNER_NODEKNOBS_H
