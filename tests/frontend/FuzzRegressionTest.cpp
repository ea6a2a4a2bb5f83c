// FuzzRegressionTest.cpp - every input the fuzz_onnx campaign found a crash
// with (tests/fuzz/regressions/fuzz_onnx) now loads and lowers, under the
// fuzz target's own limits, to a UserError naming what is wrong.
#include "LowerToHpvm.h"
#include "onnx/ModelLoader.h"
#include "support/Diagnostics.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

using namespace hpvm::fe;

namespace {

/// Each finding (file name) and a line of the refusal it now gets.
const std::map<std::string, std::string> kFindings = {
    // A segfault inside ONNX's ConvTranspose shape inference (a9260c8).
    {"convtranspose-weight-rank.onnx",
     "initializer 'w' has 32 values; its shape needs 2"},
    // An element count overflowing int64 in a Reshape (e3f6f54).
    {"size-overflow.onnx",
     "input '/Reshape_output_0' has shape 1x2x1073741823x511x536870911; "
     "only 4-D"},
    // The GELU fusion reading inputs of an unsupported producer (97903f2).
    {"erf-producer-without-inputs.onnx", "operator Drv is not supported"},
    // A per-channel constant for a channel count no tensor can have
    // (34603b0): std::length_error.
    {"constant-channel-count.onnx",
     "kernel_shape [61, 3] does not match the weight shape 2x2x3x3"},
};

} // namespace

TEST_CASE("Frontend: the fuzz_onnx findings end in a clear refusal") {
  const std::filesystem::path dir = std::filesystem::path(HPVM_SOURCE_DIR) /
                                    "tests/fuzz/regressions/fuzz_onnx";
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    INFO("finding " << entry.path().filename().string());
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    LoadOptions opts;
    opts.maxBytes = uint64_t(64) << 20; // as tests/fuzz/FuzzOnnx.cpp
    std::string message;
    try {
      std::unique_ptr<Graph> g =
          loadModelBytes(bytes.str(), "model.onnx", opts);
      PipelineOptions passes;
      passes.maxBytes = opts.maxBytes;
      lowerToHpvm(*g, passes);
    } catch (const UserError& e) {
      message = e.what();
    }
    const auto expected = kFindings.find(entry.path().filename().string());
    REQUIRE_MESSAGE(expected != kFindings.end(),
                    "a finding with no expected refusal in kFindings");
    INFO("refusal: " << message);
    CHECK(message.rfind("model.onnx: ", 0) == 0);
    CHECK(message.find(expected->second) != std::string::npos);
    ++seen;
  }
  CHECK(seen == static_cast<int>(kFindings.size()));
}
