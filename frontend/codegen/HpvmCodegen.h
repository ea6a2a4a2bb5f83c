// HpvmCodegen.h - builds the render contexts of the program templates
// (hpvm_c.cpp.in, tensor_c.cpp.in, CMakeLists.txt.in) from a ProgramLayout
// and renders them.
#ifndef TORCH2HPVM_FRONTEND_CODEGEN_HPVMCODEGEN_H
#define TORCH2HPVM_FRONTEND_CODEGEN_HPVMCODEGEN_H

#include "codegen/ProgramLayout.h"
#include "codegen/TemplateRenderer.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hpvm::fe {

/// What kind of program is generated (--target).
enum class Target {
  HpvmTensor,        ///< HPVM-C dataflow program (default).
  HpvmTensorInspect, ///< Same, running HPVM's tuner FIFO protocol.
  Tensor,            ///< Direct tensor runtime calls, no dataflow graph.
};

/// "hpvm_tensor", "hpvm_tensor_inspect", "tensor".
const char* targetName(Target t);
/// The target named \p name, or nullopt.
std::optional<Target> parseTarget(std::string_view name);

/// Everything about the program that does not come from the model graph.
/// Nothing here depends on where or how the tool runs (no directories, no
/// command line: those go to manifest.json), so that the same model gives
/// the same bytes everywhere and a regeneration's merge base is stable.
struct CodegenOptions {
  Target target = Target::HpvmTensor;
  std::string toolVersion;   ///< torch2hpvm version for the banner.
  std::string modelFile;     ///< Model file name, without its directory.
  std::string modelSha256;   ///< Hex digest of the model file.
  std::string producer;      ///< Model producer ("pytorch 1.13.1").
  int64_t opset = 0;         ///< Default-domain opset.
  std::string modelName;     ///< Model file stem (ModelInfo.name).
  std::string binaryName;    ///< Executable / CMake target (C identifier).
  int64_t tuneCount = 0;     ///< Images in the tune set.
  int64_t testCount = 0;     ///< Images in the test set.
  int64_t batchSize = 0;     ///< Default batch size, 0 = whole set.
  std::string defaultConfig; ///< Config file relative to modelDir, or "".
  std::string templateDir;   ///< Directory holding the templates.
};

/// The program template file of \p t ("hpvm_c.cpp.in" or "tensor_c.cpp.in").
const char* programTemplate(Target t);

/// The render context of the program template (documented in
/// templates/README.rst).
TemplateData programContext(const ProgramLayout& layout,
                            const CodegenOptions& opts);
/// The render context of CMakeLists.txt.in.
TemplateData cmakeContext(const CodegenOptions& opts);

/// Renders the program source (written as hpvm_c.cpp).
std::string renderProgram(const ProgramLayout& layout,
                          const CodegenOptions& opts);
/// Renders the generated project's CMakeLists.txt.
std::string renderCMakeLists(const CodegenOptions& opts);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_CODEGEN_HPVMCODEGEN_H
