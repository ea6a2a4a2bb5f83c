// FuzzOnnx.cpp - libFuzzer target: the exporter's ONNX loader (protobuf
// parse, our checks, the ONNX checker, shape inference, pre-scan, IR build)
// and the passes and lowering after it (lowerToHpvm), on any bytes. A UserError
// is the expected answer to bad input; anything else (a crash, a sanitizer
// report, another exception) is a bug.
#include "LowerToHpvm.h"
#include "onnx/ModelLoader.h"
#include "support/Diagnostics.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hpvm::fe;
  // A folder that does not exist: external data never resolves to a file.
  const std::string path = "/nonexistent-fuzz-dir/model.onnx";
  LoadOptions opts;
  opts.maxBytes = uint64_t(64) << 20; // keep declared tensors small
  try {
    std::unique_ptr<Graph> g = loadModelBytes(
        std::string(reinterpret_cast<const char*>(data), size), path, opts);
    PipelineOptions passes;
    passes.maxBytes = opts.maxBytes;
    lowerToHpvm(*g, passes);
  } catch (const UserError&) {
  }
  return 0;
}
