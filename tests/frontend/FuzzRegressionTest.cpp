// FuzzRegressionTest.cpp - every input the fuzz_onnx campaign found a crash
// with (tests/fuzz/regressions/fuzz_onnx) now loads and lowers, under the
// fuzz target's own limits, to a UserError naming what is wrong.
#include "LowerToHpvm.h"
#include "onnx/ModelLoader.h"
#include "support/Diagnostics.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>

using namespace hpvm::fe;

namespace {

/// Each finding (file name) and a part of the refusal it now gets.
/// (A finding may have several lines to check.)
const std::multimap<std::string, std::string> kFindings = {
    // A segfault inside ONNX's ConvTranspose shape inference (a9260c8).
    {"convtranspose-weight-rank.onnx",
     "initializer 'w' has 32 values; its shape needs 2"},
    // An element count overflowing int64 in a Reshape (e3f6f54).
    {"size-overflow.onnx",
     "node '/Reshape' (Reshape, #8): its output 1x2x1073741823x511x536870911 "
     "takes more bytes than 2^63 per image"},
    // The GELU fusion reading inputs of an unsupported producer (97903f2).
    {"erf-producer-without-inputs.onnx", "operator Drv is not supported"},
    // A per-channel constant for a channel count no tensor can have
    // (34603b0): std::length_error.
    // A product of two dimensions in the token-stage pass, overflowing.
    // (Its operator names hold bytes that are not UTF-8: escaped.)
    {"token-entry-size-overflow.onnx",
     "node '/Reshape' (Reshape, #8): its output 1x3x3x2x9223372036854775807 "
     "takes more bytes than 2^63 per image"},
    {"token-entry-size-overflow.onnx",
     "node '/whole/Gemm' (\\xb0emm, #53): operator \\xb0emm is not "
     "supported"},
    // A Resize scale of 2.9e25: its output size, converted to int64.
    {"resize-scale-overflow.onnx",
     "node 'across_bottom' (Resize, #1): scale 2.901448484269716e+25 makes "
     "the output's height 2.6113036358427444e+26 (more than 2^40)"},
    // A float shape constant of 1.3e36, converted to int64.
    {"float-shape-overflow.onnx",
     "node 'dropout' (Squeeze, #0): Squeeze computes on run-time values"},
    // An int64 Mul folded when compiling overflowed (now wraps, as ONNX
    // runtimes compute it).
    {"int-fold-overflow.onnx",
     "node 'expand' (Expand, #4): Expand computes on run-time values"},
    // A LayerNorm over a symbolic last axis: a scale of size_t(-1) ones
    // (std::length_error).
    {"layernorm-symbolic-axis.onnx",
     "node 'dwconv' (Conv, #0): kernel_shape [3, 67] does not match the "
     "weight shape 2x2x3x3"},
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
    const auto [first, last] =
        kFindings.equal_range(entry.path().filename().string());
    REQUIRE_MESSAGE(first != last,
                    "a finding with no expected refusal in kFindings");
    INFO("refusal: " << message);
    CHECK(message.rfind("model.onnx: ", 0) == 0);
    for (auto it = first; it != last; ++it)
      CHECK(message.find(it->second) != std::string::npos);
    seen += static_cast<int>(std::distance(first, last));
  }
  CHECK(seen == static_cast<int>(kFindings.size()));
}
