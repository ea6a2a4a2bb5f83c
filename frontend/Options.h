// Options.h - torch2hpvm-export's command line: one Options struct with
// documented defaults, parsed by CLI11 (which also generates --help).
#ifndef TORCH2HPVM_FRONTEND_OPTIONS_H
#define TORCH2HPVM_FRONTEND_OPTIONS_H

#include "codegen/HpvmCodegen.h"
#include "toolchain/Toolchain.h"

#include "support/InputFile.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hpvm::fe {

/// Everything torch2hpvm-export can be told.
struct Options {
  /// MODEL: the .onnx (binary) or .onnxtxt (text) model to export.
  std::string model;
  /// --tune / --test: HPVM bin inputs (float32 N x C x H x W).
  std::string tuneInput, testInput;
  /// --tune-labels / --test-labels: int32 labels; default: the input's name
  /// with "input" replaced by "labels" (HPVM's naming).
  std::string tuneLabels, testLabels;
  /// -o: output directory; default ./<model stem>_hpvm.
  std::string outDir;
  /// --batch-size: default batch of the program; 0 = the whole set (HPVM).
  int64_t batchSize = 0;
  /// --config: approximation configuration baked in as the default.
  std::string configFile;
  /// --config-at-run: a configuration file the program reads when it runs
  /// (HPVM's config_file: it need not exist at export).
  std::string configAtRun;
  /// --target: hpvm_tensor (default), hpvm_tensor_inspect or tensor.
  Target target = Target::HpvmTensor;
  /// --opset: convert the model to this opset first; 0 keeps its own.
  int64_t opset = 0;
  /// --max-size: the largest model file and tensor accepted, in bytes.
  uint64_t maxBytes = kDefaultMaxInputBytes;
  /// --no-build: generate only.
  bool noBuild = false;
  /// --no-labels: the sets have none (no X_labels.bin is looked for).
  bool noLabels = false;
  /// --force: regenerate over the user's edits (keeping a backup of each
  /// edited file) instead of merging them.
  bool force = false;
  /// --check: say what a regeneration would change; write nothing.
  bool check = false;
  /// --template-dir: templates to use; default: the installed ones.
  std::string templateDir;
  /// --dump-ir: print the IR after every pass to stdout.
  bool dumpIr = false;
  /// --toolchain: clang (CMake + clang++, default) or hpvm (hpvm-clang).
  Toolchain toolchain = Toolchain::Clang;
  /// --cxx / --cmake: tools to build with; default: found on PATH.
  std::string cxx, cmake;
  /// -v: echo every external command before running it.
  bool verbose = false;
  /// --input-shape [NAME:]DxDxDxD: the input's dims where the model leaves
  /// them symbolic (tvmc's --input-shapes convention); NAME empty: the
  /// model's one input.
  std::string inputShapeName;
  std::vector<int64_t> inputShape;
  /// --list-ops: print the operator table ("rst" or "json") and exit.
  std::string listOps;
  /// Set when --help or --version was asked: print this and exit 0.
  std::string exitText;
  /// The command line as given (for banners and the manifest).
  std::vector<std::string> commandLine;
};

/// Parses \p args (args[0] is the program name). Throws UserError (exit 1)
/// with a one-line reason for any invalid or missing option.
Options parseOptions(const std::vector<std::string>& args);

/// The default output directory for \p modelPath: "<stem>_hpvm".
std::string defaultOutDir(const std::string& modelPath);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_OPTIONS_H
