// FuzzConfigCalibration.cpp - libFuzzer target: a configuration file and an
// int8 calibration together, applied to a real program (the LeNet-shaped
// chain of tests/runtime/ChainGraph.h, eight ops in three fused nodes): both
// parsers, the op-count check, the match of each configuration to the fused
// nodes, the calibrated int8 knobs, and a launch under each configuration.
// Input: the configuration's text, then optionally "\n%%\n" and the
// calibration's text. UserError is the expected answer to bad input.
#include "../runtime/ChainGraph.h"
#include "base/Errors.h"
#include "config/Config.h"
#include "core/Launch.h"
#include "driver/Calibration.h"
#include "driver/Controller.h"

#include <tensor_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hpvm::rt;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t cut = in.find("\n%%\n");
  const std::string_view configText = in.substr(0, cut);
  constexpr int kChainOps = 8;
  constexpr size_t kMaxLaunches = 4;
  LaunchSettings settings;
  LaunchScope scope(settings);
  try {
    const ConfigFile file = parseConfigText(configText, "conf.txt");
    std::unique_ptr<Int8Calibration> calibration;
    if (cut != std::string_view::npos)
      calibration = std::make_unique<Int8Calibration>(
          parseCalibrationText(in.substr(cut + 4), "cal.txt"));
    settings.setCalibration(calibration.get());
    test::ChainGraph chain;
    for (size_t i = 0; i < file.configs.size() && i < kMaxLaunches; ++i) {
      try {
        checkOpCount(file.configs[i], file.path, kChainOps);
        settings.setConfiguration(&file.configs[i], file.path);
        chain.run();
      } catch (const UserError&) {
      }
    }
  } catch (const UserError&) {
  }
  // Frees every tensor and plan, as a program's end does (LeakSanitizer).
  llvm_hpvm_cleanupTensorRt();
  return 0;
}
