// FuzzConfig.cpp - libFuzzer target: HPVM's configuration file grammar
// (hpvm_rt's parser) on any bytes. UserError is the expected answer.
#include "base/Errors.h"
#include "config/Config.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    hpvm::rt::parseConfigText(
        std::string_view(reinterpret_cast<const char*>(data), size),
        "fuzz.txt");
  } catch (const hpvm::rt::UserError&) {
  }
  return 0;
}
