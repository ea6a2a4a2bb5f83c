// OptionsTest.cpp - torch2hpvm-export's option parsing: defaults, every
// documented option, and the exact message of every option error.
#include "Options.h"
#include "Version.h"
#include "support/Diagnostics.h"

#include <doctest/doctest.h>

using namespace hpvm::fe;

namespace {

Options parse(std::vector<std::string> args) {
  args.insert(args.begin(), "torch2hpvm-export");
  return parseOptions(args);
}

std::string errorOf(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const UserError& e) {
    CHECK(e.exitCode() == ExitUserError);
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST_CASE("Options: defaults") {
  Options o = parse({"m.onnx", "--tune", "a_input.bin", "--test", "b.bin"});
  CHECK(o.model == "m.onnx");
  CHECK(o.tuneInput == "a_input.bin");
  CHECK(o.testInput == "b.bin");
  CHECK(o.outDir == "");
  CHECK(o.batchSize == 0);
  CHECK(o.target == Target::HpvmTensor);
  CHECK(o.toolchain == Toolchain::Clang);
  CHECK(o.opset == 0);
  CHECK_FALSE(o.noBuild);
  CHECK_FALSE(o.force);
  CHECK_FALSE(o.check);
  CHECK_FALSE(o.verbose);
  CHECK_FALSE(o.dumpIr);
  CHECK(o.commandLine.size() == 6);
  CHECK(defaultOutDir("dir/lenet.onnx") == "lenet_hpvm");
  CHECK(defaultOutDir("resnet.v1.onnxtxt") == "resnet.v1_hpvm");
}

TEST_CASE("Options: every option is parsed") {
  Options o = parse({"m.onnx",      "--tune",
                     "t",           "--test",
                     "u",           "-o",
                     "out",         "--tune-labels",
                     "tl",          "--test-labels",
                     "ul",          "--batch-size",
                     "64",          "--config",
                     "c.txt",       "--target",
                     "tensor",      "--opset",
                     "11",          "--no-build",
                     "--force",     "--template-dir",
                     "tpl",         "--dump-ir",
                     "--toolchain", "clang",
                     "--cxx",       "/usr/bin/clang++",
                     "--cmake",     "/usr/bin/cmake",
                     "-v",          "--check"});
  CHECK(o.outDir == "out");
  CHECK(o.tuneLabels == "tl");
  CHECK(o.testLabels == "ul");
  CHECK(o.batchSize == 64);
  CHECK(o.configFile == "c.txt");
  CHECK(o.target == Target::Tensor);
  CHECK(o.opset == 11);
  CHECK(o.noBuild);
  CHECK(o.force);
  CHECK(o.check);
  CHECK(o.templateDir == "tpl");
  CHECK(o.dumpIr);
  CHECK(o.cxx == "/usr/bin/clang++");
  CHECK(o.cmake == "/usr/bin/cmake");
  CHECK(o.verbose);
  CHECK(parse({"m", "--tune", "t", "--test", "u", "--target",
               "hpvm_tensor_inspect"})
            .target == Target::HpvmTensorInspect);
}

TEST_CASE("Options: --help, --version and --list-ops need no model") {
  Options help = parse({"--help"});
  CHECK(help.exitText.find("--batch-size N") != std::string::npos);
  CHECK(help.exitText.find("--list-ops FMT") != std::string::npos);
  CHECK(help.exitText.find("Usage: torch2hpvm-export") != std::string::npos);
  CHECK(parse({"--version"}).exitText ==
        "torch2hpvm-export " + std::string(TORCH2HPVM_VERSION) + "\n");
  CHECK(parse({"--list-ops", "json"}).listOps == "json");
}

TEST_CASE("Options: every option error is exact") {
  CHECK(errorOf({}) == "no MODEL given (the .onnx or .onnxtxt file to "
                       "export; see --help)");
  CHECK(errorOf({"m.onnx", "--test", "u"}) ==
        "--tune FILE is required (the tune set's input, e.g. "
        "tune_input.bin)");
  CHECK(errorOf({"m.onnx", "--tune", "t"}) ==
        "--test FILE is required (the test set's input, e.g. "
        "test_input.bin)");
  CHECK(errorOf({"m", "--tune", "t", "--test", "u", "--batch-size", "0"}) ==
        "--batch-size must be a positive number of images, got '0'");
  CHECK(errorOf({"m", "--tune", "t", "--test", "u", "--batch-size", "12x"}) ==
        "--batch-size must be a positive number of images, got '12x'");
  CHECK(errorOf({"m", "--tune", "t", "--test", "u", "--opset", "-3"}) ==
        "--opset must be a positive ONNX opset version, got '-3'");
  CHECK(errorOf({"m", "--tune", "t", "--test", "u", "--target", "gpu"}) ==
        "--target must be hpvm_tensor, hpvm_tensor_inspect or tensor, got "
        "'gpu'");
  CHECK(errorOf({"m", "--tune", "t", "--test", "u", "--toolchain", "gcc"}) ==
        "--toolchain must be clang or hpvm, got 'gcc'");
  CHECK(errorOf({"--list-ops", "md"}) ==
        "--list-ops must be rst or json, got 'md'");
  CHECK(errorOf({"m", "--tune", "t", "--test", "u", "--toolchain", "hpvm"}) ==
        "--toolchain hpvm needs --config FILE (hpvm-clang bakes a "
        "configuration file into the program)");
  CHECK(errorOf({"m", "--tune", "t", "--test", "u", "--toolchain", "hpvm",
                 "--config", "c", "--target", "tensor"}) ==
        "--toolchain hpvm builds HPVM-C programs; the tensor target has no "
        "dataflow graph (use --toolchain clang)");
  CHECK(errorOf({"m", "--tune", "t", "--test", "u", "--no-labels",
                 "--test-labels", "l"}) ==
        "--no-labels contradicts --test-labels: give one or the other");
  CHECK(errorOf({"m", "--tune", "t", "--test", "u", "--no-labels",
                 "--tune-labels", "l"}) ==
        "--no-labels contradicts --tune-labels: give one or the other");
  CHECK(errorOf({"m", "--tune", "t", "--test", "u", "--bogus"}) ==
        "The following argument was not expected: --bogus (see --help)");
  CHECK(errorOf({"m", "--tune"}) ==
        "--tune: 1 required FILE missing (see --help)");
}
