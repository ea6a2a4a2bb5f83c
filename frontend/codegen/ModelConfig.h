// ModelConfig.h - the configuration a pre-quantized model runs by default:
// its quantized convolutions and dense layers in int8 on its own grids.
#ifndef TORCH2HPVM_FRONTEND_CODEGEN_MODELCONFIG_H
#define TORCH2HPVM_FRONTEND_CODEGEN_MODELCONFIG_H

#include "codegen/ProgramLayout.h"

#include <string>

namespace hpvm::fe {

/// The text of tuner_confs.txt for a pre-quantized model: one
/// configuration, "model_int8", with the int8 knob (311) on every
/// convolution and mul that computes the model's integer arithmetic with
/// it: its input quantized by the model (a quantize op, through max
/// pooling: hpvm_rt takes the knob's input scale from it, no calibration
/// needed), its weights on the knob's own per-channel grid. Exact fp32
/// everywhere else. "" when no node qualifies.
std::string preQuantizedConfig(const ProgramLayout& layout);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_CODEGEN_MODELCONFIG_H
