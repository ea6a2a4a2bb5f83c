// KnobResolution.cpp - applies the active configuration to a plan: matches
// its lines to the fused nodes (section 4.4) and gives INT8 knobs their
// calibrated input ranges.
#include "core/KnobResolution.h"

#include "approx/Isa.h"
#include "base/Errors.h"
#include "hpvm.h"

#include <cstdio>

namespace hpvm::rt {

namespace {

/// The range an int8 knob on op \p opIndex quantizes its input with when
/// a pre-quantized model puts that input on a grid: the quantize op it
/// reads (through max pooling, which picks one of its values). A grid of
/// 256 steps from 0 (zero point at the minimum), or of -128 .. 127 steps
/// (uint8 with zero point 128, int8 with 0), is the int8 knob's own at
/// the model's scale: [0, 255 * scale] or [-127, 127] * scale (-128
/// saturates to itself); any other, its range. False when the input is
/// not quantized by the model.
bool modelRange(const Plan& p, int opIndex, float& lo, float& hi) {
  int32_t code = p.ops[size_t(opIndex)].in[0];
  while (code >= 0 && (p.ops[size_t(code)].op == HpvmOp::MaxPool ||
                       p.ops[size_t(code)].op == HpvmOp::MaxPoolPads))
    code = p.ops[size_t(code)].in[0];
  if (code < 0 || p.ops[size_t(code)].op != HpvmOp::Quantize)
    return false;
  const double* s = p.ops[size_t(code)].scalars;
  const double scale = s[0], below = s[1] - s[2], above = s[3] - s[1];
  lo = static_cast<float>(-below * scale);
  hi = static_cast<float>(above * scale);
  if (below == 128 && above == 127)
    lo = -hi;
  return true;
}

/// Gives an INT8 knob on fused node \p node the input range the active
/// calibration \p cal measured for it; \p where locates the knob for
/// errors.
void calibrate(KnobSpec& spec, const FusedNodeInfo& node, HpvmOp op,
               const std::string& where, const Int8Calibration* cal) {
  auto need = [&] {
    return where + "knob " + std::to_string(spec.id) + " (" +
           knobById(spec.id)->confName + ") on " + opInfo(op).confName +
           " of fused node " + std::to_string(node.ordinal) + " needs";
  };
  if (!cal)
    throw UserError(need() + " an int8 calibration: pass --calibration FILE "
                             "(written by the program's calibrate mode), "
                             "or use int8_dyn (312)");
  for (const Int8Range& e : cal->nodes)
    if (e.ordinal == node.ordinal) {
      if (e.op != op)
        throw UserError(cal->path + ":" + std::to_string(e.line) + ": node " +
                        std::to_string(e.ordinal) + " is " +
                        opInfo(e.op).confName + " in the calibration but " +
                        opInfo(op).confName +
                        " in the program: the calibration is of another "
                        "program");
      spec.hasRange = true;
      spec.inLo = e.lo;
      spec.inHi = e.hi;
      return;
    }
  throw UserError(need() + " a range that calibration '" + cal->path +
                  "' lacks (it has " + std::to_string(cal->nodes.size()) +
                  " nodes): the calibration is of another program");
}

} // namespace

/// Resolves the knob of every op from the active configuration, checking
/// that it describes this program's fused nodes.
std::vector<KnobSpec> resolveKnobs(const Plan& p, const Configuration* conf,
                                   const std::string& configPath,
                                   const Int8Calibration* cal,
                                   const std::string& rootName) {
  std::vector<KnobSpec> knobs(p.ops.size(), exactKnob());
  if (!conf)
    return knobs;
  // As in HPVM, only hpvm::TENSOR_TARGET nodes are configured; others
  // (HPVM's cudnn target) run exact FP32.
  std::vector<char> configurable(p.fused.size(), 0);
  bool any = false;
  for (size_t f = 0; f < p.fused.size(); ++f)
    any |= configurable[f] =
        p.leaves[p.ops[p.fusedOps[f][0]].leaf].hint == hpvm::TENSOR_TARGET;
  if (!any) {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "hpvm_rt: note: %s has no hpvm::TENSOR_TARGET nodes "
                 "(HPVM's cudnn target); configuration '%s' is not applied, "
                 "every op runs exact FP32\n",
                 rootName.c_str(), conf->name.c_str());
    return knobs;
  }
  const std::vector<const NodeConfig*> lines = matchConfiguration(
      *conf, configPath, p.fused, configurable, p.programSetsIds);
  for (size_t f = 0; f < p.fused.size(); ++f) {
    if (!lines[f])
      continue;
    const FusedNodeInfo& node = p.fused[f];
    for (size_t k = 0; k < node.ops.size(); ++k) {
      const OpChoice& c = lines[f]->ops[k];
      KnobSpec& spec = knobs[p.fusedOps[f][k]] = knobById(c.knobId)->spec;
      // The input grid of a pre-quantized model is its own, whatever a
      // calibration measured. Below VNNI int8 weights have 7 bits (README,
      // "CPU support"), not the model's 8: there the layer runs in fp32 on
      // the model's dequantized weights, which computes its integers
      // exactly.
      if (spec.precision == Precision::INT8 && k == 0 &&
          modelRange(p, p.fusedOps[f][k], spec.inLo, spec.inHi)) {
        spec.hasRange = true;
        if (!approx::int8Vnni())
          spec = exactKnob();
      } else if (spec.precision == Precision::INT8)
        calibrate(spec, node, node.ops[k],
                  configPath + ":" + std::to_string(c.line) + ":" +
                      std::to_string(c.column) + ": ",
                  cal);
    }
  }
  return knobs;
}

} // namespace hpvm::rt
