// Options.cpp - the CLI11 option table of torch2hpvm-export and checks.
#include "Options.h"

#include "Version.h"
#include "codegen/Sanitizer.h"
#include "support/Diagnostics.h"

#include <CLI/CLI.hpp>

#include <filesystem>

namespace hpvm::fe {

std::string defaultOutDir(const std::string& modelPath) {
  std::string stem = std::filesystem::path(modelPath).stem().string();
  // (A folder name has 255 bytes at most.)
  return boundedName(stem.empty() ? std::string("model") : stem, 250) + "_hpvm";
}

Options parseOptions(const std::vector<std::string>& args) {
  Options o;
  o.commandLine = args;
  CLI::App app{"torch2hpvm-export " TORCH2HPVM_VERSION
               " - turn an ONNX model into an HPVM-C program, with its "
               "weights, datasets, tuner metadata and a build of it against "
               "hpvm_rt.",
               "torch2hpvm-export"};
  app.set_version_flag("--version", "torch2hpvm-export " TORCH2HPVM_VERSION);
  app.get_formatter()->column_width(28);

  std::string target = "hpvm_tensor", toolchain = "clang";
  std::string batch;
  std::string opset;
  app.add_option("MODEL", o.model, "Model to export (.onnx, or .onnxtxt)")
      ->type_name("FILE");
  app.footer("Writes OUT/hpvm_c.cpp, OUT/weights/, the four dataset files, "
             "ops.json,\nmanifest.json, CMakeLists.txt and builds "
             "OUT/build/<model>.\nRe-running it on OUT regenerates: your "
             "edits are merged.\nExit status: 0 success, 1 bad model, "
             "options or datasets, 2 toolchain failure,\n3 regeneration "
             "conflict, 4 --check: files would change.");
  app.add_option("--tune", o.tuneInput,
                 "Tune set input (HPVM bin: float32 NCHW)")
      ->type_name("FILE");
  app.add_option("--test", o.testInput, "Test set input (HPVM bin)")
      ->type_name("FILE");
  app.add_option("-o,--output", o.outDir,
                 "Output directory [default: ./<model stem>_hpvm]")
      ->type_name("DIR");
  app.add_option("--tune-labels", o.tuneLabels,
                 "Tune labels (int32) [default: input name with 'input' -> "
                 "'labels']")
      ->type_name("FILE");
  app.add_option("--test-labels", o.testLabels,
                 "Test labels (int32) [default: as for --tune-labels]")
      ->type_name("FILE");
  app.add_option("--batch-size", batch,
                 "Default batch size of the program [default: whole set]")
      ->type_name("N");
  app.add_option("--config", o.configFile,
                 "Approximation configuration baked in as the default "
                 "(copied to tuner_confs.txt)")
      ->type_name("FILE");
  app.add_option("--config-at-run", o.configAtRun,
                 "Configuration file the program reads when it runs, as "
                 "HPVM's config_file (need not exist now; while it does "
                 "not, the program runs exact FP32 and says so)")
      ->type_name("FILE");
  app.add_option("--target", target,
                 "hpvm_tensor, hpvm_tensor_inspect or tensor "
                 "[default: hpvm_tensor]")
      ->type_name("T");
  app.add_option("--opset", opset, "Convert the model to this ONNX opset first")
      ->type_name("N");
  app.add_option("--max-size", o.maxBytes,
                 "Largest model file and largest tensor accepted, in bytes "
                 "(suffixes KB, MB, GB, TB: powers of 1024) [default: 8GB]")
      ->type_name("SIZE")
      ->transform(CLI::AsSizeValue(false));
  app.add_flag("--no-build", o.noBuild, "Generate only; do not build");
  app.add_flag("--no-labels", o.noLabels,
               "The sets have no labels (a model without classes): no "
               "X_labels.bin is looked for");
  app.add_flag("--force", o.force,
               "Regenerate over your edits instead of merging them (each "
               "edited file is kept as FILE.orig)");
  app.add_flag("--check", o.check,
               "Say which files a regeneration would change and which carry "
               "your edits; write nothing (exit 0: none would change, 3: "
               "conflict, 4: would change)");
  app.add_option("--template-dir", o.templateDir,
                 "Use the templates in DIR [default: the installed ones]")
      ->type_name("DIR");
  app.add_flag("--dump-ir", o.dumpIr, "Print the IR after every pass");
  app.add_option("--toolchain", toolchain,
                 "clang (CMake + clang++ against hpvm_rt) or hpvm "
                 "(hpvm-clang) [default: clang]")
      ->type_name("T");
  app.add_option("--cxx", o.cxx, "C++ compiler [default: clang++ on PATH]")
      ->type_name("PATH");
  app.add_option("--cmake", o.cmake, "CMake [default: cmake on PATH]")
      ->type_name("PATH");
  std::string inputShape;
  app.add_option("--input-shape", inputShape,
                 "The input's dims where the model leaves them symbolic, "
                 "batch first: [NAME:]1x3x320x320")
      ->type_name("SHAPE");
  app.add_flag("-v,--verbose", o.verbose,
               "Echo every external command before running it");
  app.add_option("--list-ops", o.listOps,
                 "Print the supported operator table (rst or json) and exit")
      ->type_name("FMT");

  std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    o.exitText = app.help();
    return o;
  } catch (const CLI::CallForVersion& e) {
    o.exitText = std::string(e.what()) + "\n";
    return o;
  } catch (const CLI::ParseError& e) {
    throw UserError(std::string(e.what()) + " (see --help)");
  }

  auto parseCount = [](const std::string& text, const std::string& option,
                       const std::string& what) {
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || text.empty() || v <= 0)
      throw UserError(option + " must be " + what + ", got '" + text + "'");
    return static_cast<int64_t>(v);
  };
  if (!inputShape.empty()) {
    const size_t colon = inputShape.rfind(':');
    o.inputShapeName =
        colon == std::string::npos ? "" : inputShape.substr(0, colon);
    const std::string dims =
        colon == std::string::npos ? inputShape : inputShape.substr(colon + 1);
    size_t at = 0;
    while (at <= dims.size()) {
      size_t x = dims.find('x', at);
      if (x == std::string::npos)
        x = dims.size();
      o.inputShape.push_back(
          parseCount(dims.substr(at, x - at), "--input-shape",
                     "[NAME:]DxDx... with positive dims (1x3x320x320)"));
      at = x + 1;
    }
  }
  if (!batch.empty())
    o.batchSize =
        parseCount(batch, "--batch-size", "a positive number of images");
  if (!opset.empty())
    o.opset = parseCount(opset, "--opset", "a positive ONNX opset version");
  if (auto t = parseTarget(target))
    o.target = *t;
  else
    throw UserError("--target must be hpvm_tensor, hpvm_tensor_inspect or "
                    "tensor, got '" +
                    target + "'");
  if (toolchain == "clang")
    o.toolchain = Toolchain::Clang;
  else if (toolchain == "hpvm")
    o.toolchain = Toolchain::Hpvm;
  else
    throw UserError("--toolchain must be clang or hpvm, got '" + toolchain +
                    "'");
  if (!o.listOps.empty()) {
    if (o.listOps != "rst" && o.listOps != "json")
      throw UserError("--list-ops must be rst or json, got '" + o.listOps +
                      "'");
    return o;
  }
  if (o.model.empty())
    throw UserError("no MODEL given (the .onnx or .onnxtxt file to export; "
                    "see --help)");
  if (o.tuneInput.empty())
    throw UserError("--tune FILE is required (the tune set's input, e.g. "
                    "tune_input.bin)");
  if (o.testInput.empty())
    throw UserError("--test FILE is required (the test set's input, e.g. "
                    "test_input.bin)");
  if (o.noLabels && (!o.tuneLabels.empty() || !o.testLabels.empty()))
    throw UserError(std::string("--no-labels contradicts --") +
                    (o.tuneLabels.empty() ? "test" : "tune") +
                    "-labels: give one or the other");
  if (!o.configFile.empty() && !o.configAtRun.empty())
    throw UserError("--config and --config-at-run exclude each other: give "
                    "one (--config copies the file now; --config-at-run "
                    "reads it when the program runs)");
  if (o.toolchain == Toolchain::Hpvm && o.configFile.empty() && !o.noBuild)
    throw UserError("--toolchain hpvm needs --config FILE (hpvm-clang bakes "
                    "a configuration file into the program)");
  if (o.toolchain == Toolchain::Hpvm && o.target == Target::Tensor &&
      !o.noBuild)
    throw UserError("--toolchain hpvm builds HPVM-C programs; the tensor "
                    "target has no dataflow graph (use --toolchain clang)");
  return o;
}

} // namespace hpvm::fe
