// CliTest.cpp - torch2hpvm-export end to end (without the build step): the
// output layout, determinism, the output directory's transactions, and the
// exact messages and exit codes of the tool.
#include "CodegenTestGraphs.h"
#include "Diagnostics.h"
#include "Pipeline.h"
#include "build/Toolchain.h"
#include "codegen/OutputFiles.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>
#include <sstream>
#include <sys/wait.h>

using namespace hpvm::fe;
using namespace hpvm::fe::testing;
namespace fs = std::filesystem;

namespace {

const std::string ModelDir =
    std::string(HPVM_SOURCE_DIR) + "/test_frontend/models/codegen/";

/// A scratch directory with HPVM datasets for the 1x8x8, 10-class fixtures.
std::string makeDatasets(const std::string& name) {
  std::string dir = scratchDir(name);
  auto writeSet = [&](const std::string& prefix, int n) {
    std::string images(static_cast<size_t>(n) * 64 * 4, '\0');
    for (size_t i = 0; i < images.size(); i += 4) {
      float v = static_cast<float>(i % 97) / 97.0f;
      std::memcpy(&images[i], &v, 4);
    }
    writeFile(dir + "/" + prefix + "_input.bin", images);
    std::string labels(static_cast<size_t>(n) * 4, '\0');
    for (int i = 0; i < n; ++i)
      labels[static_cast<size_t>(i) * 4] = static_cast<char>(i % 10);
    writeFile(dir + "/" + prefix + "_labels.bin", labels);
  };
  writeSet("tune", 6);
  writeSet("test", 5);
  return dir;
}

Options exportOptions(const std::string& data, const std::string& model,
                      const std::string& out) {
  Options o;
  o.model = ModelDir + model;
  o.tuneInput = data + "/tune_input.bin";
  o.testInput = data + "/test_input.bin";
  o.outDir = out;
  o.noBuild = true;
  o.commandLine = {"torch2hpvm-export", model, "--no-build"};
  return o;
}

/// Every file under \p dir (relative path -> bytes).
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file())
      files[fs::relative(e.path(), dir).string()] = readFile(e.path().string());
  return files;
}

/// Names in \p dir.
std::vector<std::string> listDir(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string exportError(const Options& o, int expectedCode = ExitUserError) {
  try {
    runExport(o, {});
  } catch (const UserError& e) {
    CHECK(e.exitCode() == expectedCode);
    return e.what();
  }
  return "(no error)";
}

/// Replaces every \p from in \p text by \p to.
std::string replaceAll(std::string text, const std::string& from,
                       const std::string& to) {
  for (size_t p = 0; (p = text.find(from, p)) != std::string::npos;
       p += to.size())
    text.replace(p, from.size(), to);
  return text;
}

} // namespace

TEST_CASE("Cli: export writes HPVM's layout and our files") {
  std::string data = makeDatasets("cli-layout");
  std::string out = data + "/out";
  ExportResult r =
      runExport(exportOptions(data, "lenet_small.onnxtxt", out), {});
  CHECK(r.outDir == out);
  CHECK(r.binary == "");
  CHECK(listDir(out) == std::vector<std::string>{
                            "CMakeLists.txt", "hpvm_c.cpp", "manifest.json",
                            "ops.json", "test_input.bin", "test_labels.bin",
                            "tune_input.bin", "tune_labels.bin", "weights"});
  CHECK(listDir(out + "/weights") ==
        std::vector<std::string>{"conv1_bias.bin", "conv1_weight.bin",
                                 "fc_bias.bin", "fc_weight.bin"});
  CHECK(fs::file_size(out + "/weights/conv1_weight.bin") == 4 * 9 * 4);
  CHECK(fs::file_size(out + "/weights/fc_weight.bin") == 64 * 10 * 4);
  CHECK(readFile(out + "/tune_labels.bin") ==
        readFile(data + "/tune_labels.bin"));
  // No temporary directory is left next to the output.
  CHECK(listDir(data) ==
        std::vector<std::string>{"out", "test_input.bin", "test_labels.bin",
                                 "tune_input.bin", "tune_labels.bin"});

  // The program names no directory; the model's digest is masked.
  std::string src = readFile(out + "/hpvm_c.cpp");
  CHECK(src.find(data) == std::string::npos);
  CHECK(src.find(HPVM_SOURCE_DIR) == std::string::npos);
  src =
      replaceAll(src, sha256File(ModelDir + "lenet_small.onnxtxt"), "@SHA256@");
  std::string diff = checkGolden("lenet_small_hpvm_c.cpp", src);
  CHECK_MESSAGE(diff.empty(), diff);

  nlohmann::json m = nlohmann::json::parse(readFile(out + "/manifest.json"));
  CHECK(m["target"] == "hpvm_tensor");
  CHECK(m["input_shape"] == nlohmann::json({1, 8, 8}));
  CHECK(m["classes"] == 10);
  CHECK(m["datasets"]["tune"]["images"] == 6);
  CHECK(m["datasets"]["test"]["images"] == 5);
  CHECK(m["model"]["opset"] == 13);
  CHECK(m["model"]["sha256"] == sha256File(ModelDir + "lenet_small.onnxtxt"));
  bool sawWeight = false;
  for (const auto& f : m["files"])
    if (f["path"] == "weights/conv1_weight.bin") {
      sawWeight = true;
      CHECK(f["size"] == 144);
      CHECK(f["sha256"] == sha256File(out + "/weights/conv1_weight.bin"));
      CHECK(f["tensor"] == "conv1.weight");
      CHECK(f["shape"] == nlohmann::json({4, 1, 3, 3}));
    }
  CHECK(sawWeight);
  nlohmann::json ops = nlohmann::json::parse(readFile(out + "/ops.json"));
  CHECK(ops["fused_nodes"][0]["ops"] ==
        nlohmann::json({"convolution_0", "add_1", "relu_2", "maxpool_3"}));
}

TEST_CASE("Cli: the same inputs give byte-identical files") {
  std::string data = makeDatasets("cli-determinism");
  Options o = exportOptions(data, "lenet_small.onnxtxt", data + "/out");
  o.configFile = data + "/conf.txt";
  writeFile(o.configFile, "0.0\n+++++\nconf1 1 1 100 0\n-----\n");
  runExport(o, {});
  auto first = snapshot(data + "/out");
  o.force = true;
  runExport(o, {});
  CHECK(snapshot(data + "/out") == first);
  CHECK(first.at("tuner_confs.txt") == readFile(o.configFile));
  CHECK(first.at("hpvm_c.cpp").find("/*defaultConfig=*/\"tuner_confs.txt\"") !=
        std::string::npos);
}

TEST_CASE("Cli: an existing output directory is refused without --force") {
  std::string data = makeDatasets("cli-exists");
  std::string out = data + "/out";
  Options o = exportOptions(data, "lenet_small.onnxtxt", out);
  runExport(o, {});
  writeFile(out + "/mine.txt", "keep");
  CHECK(exportError(o) == "output directory '" + out +
                              "' already exists (use --force to replace it)");
  CHECK(readFile(out + "/mine.txt") == "keep");
  o.force = true;
  runExport(o, {});
  CHECK_FALSE(fs::exists(out + "/mine.txt"));
  CHECK(fs::exists(out + "/hpvm_c.cpp"));
  // --force never replaces a directory that is not an export.
  std::string other = data + "/other";
  fs::create_directories(other);
  writeFile(other + "/notes.txt", "mine");
  o.outDir = other;
  CHECK(exportError(o) ==
        "refusing to replace '" + other +
            "': it is not empty and holds no manifest.json of "
            "torch2hpvm-export (remove it yourself if you mean it)");
  CHECK(readFile(other + "/notes.txt") == "mine");
  writeFile(data + "/file", "x");
  o.outDir = data + "/file";
  CHECK(exportError(o) ==
        "output path '" + data + "/file' exists and is not a directory");
}

TEST_CASE("Cli: generated files do not depend on where the tool runs") {
  std::string data = makeDatasets("cli-where");
  // The same model in two places, exported from two working directories
  // into two output directories (one given relative), with two command
  // lines.
  for (const char* d : {"/m1", "/x/y/m2", "/cwd1", "/x/cwd2"})
    fs::create_directories(data + d);
  std::string model = readFile(ModelDir + "lenet_small.onnxtxt");
  writeFile(data + "/m1/lenet_small.onnxtxt", model);
  writeFile(data + "/x/y/m2/lenet_small.onnxtxt", model);
  std::string cwd = fs::current_path().string();
  Options a = exportOptions(data, "lenet_small.onnxtxt", "out1");
  a.model = "../m1/lenet_small.onnxtxt";
  a.tuneInput = "../tune_input.bin";
  a.commandLine = {"torch2hpvm-export", a.model, "-o", "out1"};
  Options b =
      exportOptions(data, "lenet_small.onnxtxt", data + "/x/y/deeper/out2");
  b.model = data + "/x/y/m2/lenet_small.onnxtxt";
  fs::current_path(data + "/cwd1");
  runExport(a, {});
  fs::current_path(data + "/x/cwd2");
  runExport(b, {});
  fs::current_path(cwd);
  auto one = snapshot(data + "/cwd1/out1");
  auto two = snapshot(data + "/x/y/deeper/out2");
  // Only manifest.json says where and how.
  CHECK(one.at("manifest.json") != two.at("manifest.json"));
  one.erase("manifest.json");
  two.erase("manifest.json");
  CHECK(one.size() == 11); // 4 weights, 4 datasets, 3 sources
  CHECK(one == two);
  for (const auto& [path, bytes] : one) {
    INFO(path);
    CHECK(bytes.find(data) == std::string::npos);
    CHECK(bytes.find("cwd") == std::string::npos);
    CHECK(bytes.find("torch2hpvm-export lenet") == std::string::npos);
  }
}

TEST_CASE("Cli: a rejected model or dataset writes nothing") {
  std::string data = makeDatasets("cli-nothing");
  std::string out = data + "/out";
  Options o = exportOptions(data, "unsupported.onnxtxt", out);
  std::string error = exportError(o);
  CHECK(error.find("unsupported") != std::string::npos);
  CHECK(error.find("LeakyRelu") != std::string::npos);
  CHECK(error.find("Softsign") != std::string::npos);
  CHECK_FALSE(fs::exists(out));

  o = exportOptions(data, "lenet_small.onnxtxt", out);
  o.testLabels = data + "/tune_labels.bin";
  CHECK(exportError(o) ==
        "test labels '" + data +
            "/tune_labels.bin': expected 20 bytes (5 int32 labels for the 5 "
            "images of '" +
            data + "/test_input.bin'), got 24 bytes");
  CHECK_FALSE(fs::exists(out));

  o = exportOptions(data, "lenet_small.onnxtxt", out);
  o.configFile = data + "/missing.txt";
  CHECK(exportError(o) == "cannot read --config '" + data + "/missing.txt'");
  o = exportOptions(data, "lenet_small.onnxtxt", out);
  o.templateDir = data + "/no-templates";
  CHECK(exportError(o) ==
        "template directory '" + data + "/no-templates' does not exist");
  CHECK(listDir(data) ==
        std::vector<std::string>{"test_input.bin", "test_labels.bin",
                                 "tune_input.bin", "tune_labels.bin"});
}

TEST_CASE("Cli: hostile model names export to a harmless program") {
  std::string data = makeDatasets("cli-evil");
  std::string out = data + "/out";
  runExport(exportOptions(data, "evil_names.onnxtxt", out), {});
  std::string src = readFile(out + "/hpvm_c.cpp");
  CHECK(src.find("x\"); system") == std::string::npos);
  std::string errors = syntaxCheck(src, "cli-evil");
  CHECK_MESSAGE(errors.empty(), errors);
  // Weight files are named by the sanitizer, inside weights/.
  CHECK(listDir(out + "/weights") ==
        std::vector<std::string>{"conv_bias_define.bin", "int_v.bin",
                                 "root_2.bin", "var_0_node_2.bin"});
}

TEST_CASE("Cli: the tool prints errors with its name and exit codes") {
  std::string tool =
      std::string(HPVM_BINARY_DIR) + "/frontend/torch2hpvm-export";
  REQUIRE_MESSAGE(fs::exists(tool), tool << " is not built (build the "
                                            "torch2hpvm-export target)");
  std::string dir = scratchDir("cli-tool");
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), tool);
    std::string log = dir + "/log";
    fs::remove(log);
    int code = 0;
    try {
      runLogged(args, dir, log, nullptr);
    } catch (const UserError&) {
      code = -1;
    }
    std::string text = readFile(log);
    text = text.substr(text.find('\n') + 1); // drop the "$ command" line
    return std::make_pair(code, text);
  };
  auto [code, text] = run({"--target", "x", "m", "--tune", "a", "--test", "b"});
  CHECK(code == -1);
  CHECK(text == "torch2hpvm-export: error: --target must be hpvm_tensor, "
                "hpvm_tensor_inspect or tensor, got 'x'\n");
  auto [okCode, version] = run({"--version"});
  CHECK(okCode == 0);
  CHECK(version.find("torch2hpvm-export ") == 0);
}

TEST_CASE("Cli: --dump-ir prints the IR after every pass") {
  std::string data = makeDatasets("cli-dump");
  Options o = exportOptions(data, "lenet_small.onnxtxt", data + "/out");
  o.dumpIr = true;
  std::ostringstream ir;
  PipelineStreams streams;
  streams.ir = &ir;
  runExport(o, streams);
  std::string text = ir.str();
  CHECK(text.find("; IR as loaded\n") == 0);
  CHECK(text.find("; IR after ") != std::string::npos);
  // The last dump holds only HPVM kinds.
  std::string last = text.substr(text.rfind("; IR after "));
  CHECK(last.find("Onnx") == std::string::npos);
  CHECK(last.find("Conv(") != std::string::npos);
}

TEST_CASE("Cli: --template-dir renders the user's templates") {
  std::string data = makeDatasets("cli-templates");
  std::string tpl = data + "/tpl";
  fs::copy(std::string(HPVM_SOURCE_DIR) + "/templates", tpl);
  writeFile(tpl + "/hpvm_c.cpp.in",
            "// custom {{numOps}} ops\n" + readFile(tpl + "/hpvm_c.cpp.in"));
  Options o = exportOptions(data, "lenet_small.onnxtxt", data + "/out");
  o.templateDir = tpl;
  runExport(o, {});
  CHECK(readFile(data + "/out/hpvm_c.cpp").find("// custom 7 ops\n") == 0);
  writeFile(tpl + "/hpvm_c.cpp.in", "{{numOpz}}\n");
  o.force = true;
  CHECK(exportError(o) == tpl + "/hpvm_c.cpp.in:1: unknown variable 'numOpz'");
}

TEST_CASE("Cli: a failed build is exit code 2 and leaves no output") {
  std::string data = makeDatasets("cli-buildfail");
  std::string out = data + "/out";
  Options o = exportOptions(data, "lenet_small.onnxtxt", out);
  o.noBuild = false;
  o.cxx = "/bin/false"; // a compiler that fails every compile
  std::string error = exportError(o, ExitToolchainError);
  CHECK(error.find("build command failed (exit status 1):\n  ") == 0);
  CHECK(error.find("-DCMAKE_CXX_COMPILER=/bin/false") != std::string::npos);
  CHECK(error.find("\nlast lines of ") != std::string::npos);
  CHECK(error.find("nothing was written to '" + out + "')") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("Cli: --toolchain hpvm refuses hpvm_rt extensions, naming the "
          "node and the intrinsic HPVM lacks; clang exports them") {
  std::string data = makeDatasets("cli-extension");
  std::string out = data + "/out";
  Options o = exportOptions(data, "../Sigmoid.onnxtxt", out);
  o.toolchain = Toolchain::Hpvm;
  CHECK(exportError(o) ==
        o.model + ": node 'sigmoid' (Sigmoid, #0): HPVM has no "
                  "__hpvm_rt__tensor_sigmoid (sigmoid is an hpvm_rt extension; "
                  "--toolchain clang builds it)");
  CHECK_FALSE(fs::exists(out));
  // With clang the same model gets past the check (to the datasets, which
  // are not this model's).
  o.toolchain = Toolchain::Clang;
  CHECK(exportError(o).find("HPVM has no") == std::string::npos);
}
