// CodegenGoldenTest.cpp - rendered programs against golden files in
// test_frontend/golden/ (scripts/update_golden.sh rewrites them), their
// determinism, and that each compiles with -Wall -Werror against hpvm_rt.
#include "../TestSample.h"
#include "CodegenTestGraphs.h"
#include "LowerToHpvm.h"
#include "codegen/HpvmCodegen.h"
#include "codegen/ProgramLayout.h"
#include "onnx/ModelLoader.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

using namespace hpvm::fe;
using namespace hpvm::fe::testing;

namespace {

/// Renders \p g for \p target and checks golden \p name and syntax.
void checkProgram(const Graph& g, Target target, const std::string& name,
                  CodegenOptions opts) {
  ProgramLayout layout = layoutProgram(g, opts.modelFile);
  opts.target = target;
  std::string first = renderProgram(layout, opts);
  // Deterministic: a second layout and render give the same bytes.
  CHECK(renderProgram(layoutProgram(g, opts.modelFile), opts) == first);
  std::string diff = checkGolden(name, first);
  CHECK_MESSAGE(diff.empty(), diff);
  std::string errors = syntaxCheck(first, name);
  CHECK_MESSAGE(errors.empty(), errors);
}

} // namespace

TEST_CASE("Codegen: tiny net, hpvm_tensor target, matches its golden") {
  checkProgram(*makeTinyNet(), Target::HpvmTensor, "tiny_hpvm_tensor.cpp",
               testCodegenOptions());
}

TEST_CASE("Codegen: tiny net, tensor target, matches its golden") {
  checkProgram(*makeTinyNet(), Target::Tensor, "tiny_tensor.cpp",
               testCodegenOptions());
}

TEST_CASE("Codegen: residual net, inspect target, matches its golden") {
  CodegenOptions opts = testCodegenOptions();
  opts.modelFile = "residual.onnx";
  opts.modelName = "residual";
  opts.binaryName = "residual";
  opts.defaultConfig = "tuner_confs.txt";
  opts.batchSize = 16;
  checkProgram(*makeResidualNet(), Target::HpvmTensorInspect,
               "residual_hpvm_tensor_inspect.cpp", opts);
}

TEST_CASE("Codegen: generated CMakeLists.txt matches its golden") {
  std::string text = renderCMakeLists(testCodegenOptions());
  std::string diff = checkGolden("tiny_CMakeLists.txt", text);
  CHECK_MESSAGE(diff.empty(), diff);
}

TEST_CASE("Codegen: layout numbers ops, orders weights by first use") {
  auto g = makeResidualNet();
  ProgramLayout layout = layoutProgram(*g, "residual.onnx");
  REQUIRE(layout.nodes.size() == 9);
  CHECK(layout.inputIdent == "x");
  std::vector<std::string> weights;
  for (const WeightLayout& w : layout.weights)
    weights.push_back(w.ident + "@" + std::to_string(w.rootPair));
  CHECK(weights == std::vector<std::string>{"w1@1", "b1@2", "w2@3", "b2@4",
                                            "bn_gamma@5", "bn_beta@6",
                                            "bn_mean@7", "bn_var@8"});
  CHECK(layout.nodes[5].jsonName == "add_5");
  CHECK(layout.nodes[5].operands[0].producerNode == 4);
  CHECK(layout.nodes[5].operands[1].producerNode == 2);
  CHECK(layout.nodes[6].scalars == std::vector<std::string>{"1e-05"});
  CHECK(layout.nodes[7].scalars == std::vector<std::string>{"0.0", "6.0"});
  CHECK(layout.nodes[0].origin == "ONNX node '#0' (Conv, #0)");
  CHECK(layout.numClasses == 2);
}

TEST_CASE("Codegen: scalar literals read back exactly") {
  CHECK(scalarLiteral(Scalar::integer(-3)) == "-3");
  CHECK(scalarLiteral(Scalar::real(0.001)) == "0.001");
  CHECK(scalarLiteral(Scalar::real(1e-05)) == "1e-05");
  CHECK(scalarLiteral(Scalar::real(6)) == "6.0");
  CHECK(scalarLiteral(Scalar::real(1e300)) == "1e+300");
  CHECK(scalarLiteral(Scalar::real(0.1f)) == "0.10000000149011612");
}

TEST_CASE("Codegen: a graph that cannot become a program is rejected") {
  auto g = makeTinyNet();
  g->input->shape = {1, 8, 8};
  CHECK_THROWS_WITH_AS(layoutProgram(*g, "m.onnx"),
                       "m.onnx: the model input must be 4-D (N, C, H, W) or "
                       "2-D (N, K), got 1x8x8",
                       UserError);
  g->input->shape = {1, -1, 8, 8};
  CHECK_THROWS_WITH_AS(layoutProgram(*g, "m.onnx"),
                       "m.onnx: the model input has a symbolic or empty "
                       "dimension 1 (1x?x8x8); only the batch dimension may "
                       "be symbolic",
                       UserError);
}

TEST_CASE("Codegen: every fixture model renders to compiling programs") {
  std::string dir = scratchDir("fixtures");
  std::vector<std::string> sources;
  std::vector<std::string> models;
  for (const auto& e : std::filesystem::directory_iterator(
           std::string(HPVM_SOURCE_DIR) + "/test_frontend/models"))
    if (e.path().extension() == ".onnxtxt")
      models.push_back(e.path().string());
  models.push_back(std::string(HPVM_SOURCE_DIR) +
                   "/test_frontend/models/codegen/lenet_small.onnxtxt");
  std::sort(models.begin(), models.end());
  REQUIRE(models.size() > 1);
  for (const std::string& model : models) {
    INFO("model " << model);
    std::unique_ptr<Graph> g = loadModel(model, {});
    lowerToHpvm(*g);
    ProgramLayout layout = layoutProgram(*g, model);
    for (Target target : {Target::HpvmTensor, Target::Tensor}) {
      CodegenOptions opts = testCodegenOptions(target);
      opts.modelFile = model;
      std::string src = dir + "/" +
                        std::filesystem::path(model).stem().string() + "_" +
                        targetName(target) + ".cpp";
      writeFile(src, renderProgram(layout, opts));
      sources.push_back(src);
    }
  }
  // One compiler run checks them all (in the Release tests: the sanitizer
  // build checks the rendering, the compiler is not ours to sanitize), the
  // templates' own #include lines parsed once into a precompiled header
  // (4x faster: those headers are most of each program's text).
  if (hpvm::test::kSampled)
    return;
  const std::vector<std::string> flags = {"-std=c++17", "-Wall", "-Werror",
                                          "-I" + std::string(HPVM_SOURCE_DIR) +
                                              "/hpvm_rt/include"};
  std::string includes;
  for (const char* name : {"hpvm_c.cpp.in", "tensor_c.cpp.in"}) {
    std::istringstream lines(
        readFile(std::string(HPVM_SOURCE_DIR) + "/templates/" + name));
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("#include", 0) == 0 &&
          includes.find(line + "\n") == std::string::npos)
        includes += line + "\n";
  }
  REQUIRE(!includes.empty());
  writeFile(dir + "/includes.h", includes);
  std::vector<std::string> pch = {findExecutable("clang++"), "-x",
                                  "c++-header"};
  pch.insert(pch.end(), flags.begin(), flags.end());
  pch.insert(pch.end(), {dir + "/includes.h", "-o", dir + "/includes.h.pch"});
  std::vector<std::string> argv = {findExecutable("clang++"), "-fsyntax-only",
                                   "-include-pch", dir + "/includes.h.pch"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), sources.begin(), sources.end());
  std::string errors;
  try {
    runLogged(pch, "", dir + "/pch.log", nullptr);
    runLogged(argv, "", dir + "/log", nullptr);
  } catch (const UserError& e) {
    errors = e.what();
  }
  CHECK_MESSAGE(errors.empty(), errors);
}
