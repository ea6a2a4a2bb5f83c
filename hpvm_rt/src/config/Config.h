// Config.h - HPVM approximation-configuration files: parser, selection and
// writer over ConfigFile / Configuration / NodeConfig (config/Configuration.h).
//
// Grammar (HPVM's tuner_confs.txt, reference section 4.1), as EBNF. Tokens
// are separated by spaces or tabs; a line ends at "\n" (a "\r" before it is
// dropped); the file may or may not end with a newline.
//
//   file        = baseline NL block { NL block } [ NL ] ;
//   baseline    = number ;                   (* baseline time in ms *)
//   block       = "+++++" NL header NL node-line NL { node-line NL }
//                 "-----" ;
//   header      = name number number number number ;
//                 (* name, predicted speedup, energy, accuracy,
//                    accuracy loss *)
//   node-line   = node-id device op-knob { op-knob } ;
//   node-id     = positive integer ;         (* the fused node's ordinal *)
//   device      = "gpu" | "cpu" ;
//   op-knob     = op knob-name integer ;
//   op          = a configuration op name of Ops.def ("conv", "add", ...) ;
//   knob-name   = a configuration knob name of Ops.def ("fp32", "perf", ...);
//
// Semantics: each op takes exactly one knob. For the exact-precision knob
// names (fp32, fp16, bf16) the integer is ignored, as HPVM does (its files
// contain "fp32 1" and "fp16 11"); the knob is the name's row. For every
// other name the integer is the knob id and must be a row of that name. A
// knob must apply to its op (Ops.def Applies). HPVM's red_samp and
// swing_level knobs are rejected with the reason. A line's integer key is 1
// plus the number of ops on the earlier lines of its block. Node ids are
// unique within a block; no line is empty; nothing follows the last token a
// rule expects.
#ifndef HPVM_RT_CONFIG_CONFIG_H
#define HPVM_RT_CONFIG_CONFIG_H

#include "config/Configuration.h"

#include <string>
#include <string_view>

namespace hpvm::rt {

/// Largest configuration file read (HPVM's own tuners write well under
/// 1 MiB; a longer one is refused before it is read).
constexpr uint64_t kMaxConfigFileBytes = uint64_t(64) << 20;

/// Reads and parses the configuration file at \p path. Throws UserError
/// ("path:line:col: message") on any syntax or table error, or if the file
/// cannot be read.
ConfigFile parseConfigFile(const std::string& path);

/// Parses configuration text; \p path is used in messages and stored in the
/// result. Throws UserError.
ConfigFile parseConfigText(std::string_view text, const std::string& path);

/// Finds a configuration by name, or, if \p selector is a non-negative
/// integer that names no configuration, by its 0-based position in the file.
/// Throws UserError ("path: no configuration ...") listing the names when
/// none matches.
const Configuration& selectConfiguration(const ConfigFile& file,
                                         std::string_view selector);

/// The configuration of \p file that --qos-loss \p limit selects: the one
/// with the largest recorded speedup whose recorded loss is at most
/// \p limit, or nullptr (exact FP32) if none is.
const Configuration* selectByLoss(const ConfigFile& file, double limit);

/// The name of a knob id as configuration files spell it ("perf_fp16").
std::string knobConfName(int knobId);

/// Writes \p file in HPVM's format (re-parsable; numbers in shortest
/// round-trip form; no newline after the last "-----", as predtuner).
std::string formatConfigFile(const ConfigFile& file);

} // namespace hpvm::rt

#endif // HPVM_RT_CONFIG_CONFIG_H
