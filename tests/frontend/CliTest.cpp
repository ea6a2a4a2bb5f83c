// CliTest.cpp - torch2hpvm-export end to end (without the build step): the
// output layout, determinism, the output directory's transactions, and the
// exact messages and exit codes of the tool.
#include "CodegenTestGraphs.h"
#include "Pipeline.h"
#include "codegen/OutputFiles.h"
#include "onnx/Sha256.h"
#include "support/Diagnostics.h"
#include "toolchain/Toolchain.h"

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

/// The node lines of an exact configuration of lenet_small.onnxtxt's fused
/// nodes (--config is checked against them at export).
const std::string LenetSmallConf =
    "1 cpu conv fp32 11 add fp32 1 relu fp32 1 pool_max fp32 1\n"
    "2 cpu mul fp32 11 add fp32 1\n"
    "3 cpu softmax fp32 1\n";

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
  CHECK(listDir(out) ==
        std::vector<std::string>{".torch2hpvm", "CMakeLists.txt", "hpvm_c.cpp",
                                 "manifest.json", "ops.json", "test_input.bin",
                                 "test_labels.bin", "tune_input.bin",
                                 "tune_labels.bin", "weights"});
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
  writeFile(o.configFile,
            "0.0\n+++++\nconf1 1 1 100 0\n" + LenetSmallConf + "-----\n");
  runExport(o, {});
  auto first = snapshot(data + "/out");
  o.force = true;
  runExport(o, {});
  CHECK(snapshot(data + "/out") == first);
  CHECK(first.at("tuner_confs.txt") == readFile(o.configFile));
  CHECK(first.at("hpvm_c.cpp").find("/*defaultConfig=*/\"tuner_confs.txt\"") !=
        std::string::npos);
}

TEST_CASE("Cli: an export directory is regenerated in place, other "
          "directories are refused") {
  std::string data = makeDatasets("cli-exists");
  std::string out = data + "/out";
  Options o = exportOptions(data, "lenet_small.onnxtxt", out);
  runExport(o, {});
  // The user's own files survive a regeneration; the previous build does
  // not (it was built from the previous generation).
  writeFile(out + "/mine.txt", "keep");
  fs::create_directories(out + "/notes/deep");
  writeFile(out + "/notes/deep/n.txt", "deep");
  fs::create_directories(out + "/build");
  writeFile(out + "/build/lenet_small", "old program");
  writeFile(out + "/build.log", "old log");
  o.commandLine.push_back("--again");
  std::ostringstream report;
  PipelineStreams streams;
  streams.report = &report;
  runExport(o, streams);
  CHECK(report.str() ==
        "torch2hpvm-export: regenerated '" + out + "': 0 files changed\n");
  CHECK(readFile(out + "/mine.txt") == "keep");
  CHECK(readFile(out + "/notes/deep/n.txt") == "deep");
  CHECK_FALSE(fs::exists(out + "/build"));
  CHECK_FALSE(fs::exists(out + "/build.log"));
  CHECK(listDir(out + "/.torch2hpvm/base") ==
        std::vector<std::string>{"CMakeLists.txt", "hpvm_c.cpp", "ops.json"});
  // A directory that is not an export is never written into.
  std::string other = data + "/other";
  fs::create_directories(other);
  writeFile(other + "/notes.txt", "mine");
  o.outDir = other;
  for (bool force : {false, true}) {
    o.force = force;
    CHECK(exportError(o) ==
          "refusing to write into '" + other +
              "': it is not empty and holds no manifest.json of "
              "torch2hpvm-export (choose another -o, or remove it yourself "
              "if you mean it)");
  }
  CHECK(listDir(other) == std::vector<std::string>{"notes.txt"});
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
  CHECK(one.size() == 14); // 4 weights, 4 datasets, 3 generated, 3 bases
  CHECK(one == two);
  for (const auto& file : one) {
    const std::string& bytes = file.second;
    INFO(file.first); // (not a structured binding: INFO captures it)
    CHECK(bytes.find(data) == std::string::npos);
    CHECK(bytes.find("cwd") == std::string::npos);
    CHECK(bytes.find("torch2hpvm-export lenet") == std::string::npos);
  }
}

namespace {

/// An export of a copy of lenet_small whose Relu node can be changed, and
/// the user's edits to its output.
struct RegenFixture {
  std::string data, model, out;
  Options opts;
  std::ostringstream report;
  PipelineStreams streams;

  explicit RegenFixture(const std::string& name)
      : data(makeDatasets(name)), model(data + "/model/lenet_small.onnxtxt"),
        out(data + "/out"),
        opts(exportOptions(data, "lenet_small.onnxtxt", out)) {
    fs::create_directories(data + "/model");
    writeFile(model, readFile(ModelDir + "lenet_small.onnxtxt"));
    opts.model = model;
    streams.report = &report;
    runExport(opts, {});
  }

  /// Changes node 'Relu_1' into \p op (another node than the conv's).
  void changeActivation(const std::string& op) {
    std::string text = readFile(model);
    size_t at = text.find("name: \"Relu_1\"\n    op_type: \"");
    REQUIRE(at != std::string::npos);
    at = text.find("op_type: \"", at) + 10;
    text.replace(at, text.find('"', at) - at, op);
    writeFile(model, text);
  }

  /// What a fresh export of the model as it is now writes as \p file.
  std::string freshExport(const std::string& file) {
    Options o = opts;
    o.outDir = data + "/fresh";
    fs::remove_all(o.outDir);
    runExport(o, {});
    return readFile(o.outDir + "/" + file);
  }

  /// Runs the export, returning "" or its error (checking its exit code).
  std::string regenerate(int expectedCode = ExitOk) {
    report.str("");
    try {
      runExport(opts, streams);
    } catch (const UserError& e) {
      CHECK(e.exitCode() == expectedCode);
      return e.what();
    }
    CHECK(expectedCode == ExitOk);
    return "";
  }

  /// --check's report and exit status; checks that nothing was written.
  std::pair<std::string, int> check() {
    auto before = snapshot(out);
    auto siblings = listDir(data);
    Options o = opts;
    o.check = true;
    ExportResult r = runExport(o, {});
    CHECK(snapshot(out) == before);
    CHECK(listDir(data) == siblings);
    return {r.checkReport, r.status};
  }
};

/// \p text with the only occurrence of \p from replaced by \p to.
std::string edit(std::string text, const std::string& from,
                 const std::string& to) {
  size_t at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, from);
  CHECK(text.find(from, at + 1) == std::string::npos);
  return text.replace(at, from.size(), to);
}

const std::string ConvCall =
    "  void *r = __hpvm__tensor_convolution(t1, t2, 1, 1, 1, 1);\n";
const std::string MyConvCall =
    "  // Mine: stride 2.\n"
    "  void *r = __hpvm__tensor_convolution(t1, t2, 1, 1, 2, 2);\n";

/// The user's edits: the conv node's call arguments and a comment.
std::string myEdits(const std::string& generated) {
  return edit(generated, ConvCall, MyConvCall);
}

std::vector<std::string> manifestConflicts(const std::string& out) {
  nlohmann::json m = nlohmann::json::parse(readFile(out + "/manifest.json"));
  return m["conflicts"].get<std::vector<std::string>>();
}

} // namespace

TEST_CASE("Regeneration: an edit survives a model change that touches "
          "another node") {
  RegenFixture t("regen-merge");
  std::string src = t.out + "/hpvm_c.cpp";
  writeFile(src, myEdits(readFile(src)));
  t.changeActivation("Tanh");

  auto [text, status] = t.check();
  CHECK(text == "update   CMakeLists.txt\n"
                "merge    hpvm_c.cpp (edited; merges cleanly)\n"
                "update   ops.json\n"
                "'" +
                    t.out + "': 3 files would change, 1 carries edits\n");
  CHECK(status == ExitWouldChange);

  CHECK(t.regenerate() == "");
  CHECK(t.report.str() ==
        "torch2hpvm-export: hpvm_c.cpp: merged your edits into the new "
        "generation cleanly\n"
        "torch2hpvm-export: regenerated '" +
            t.out +
            "': 3 files changed (1 merged cleanly, 0 with conflicts)\n");
  std::string fresh = t.freshExport("hpvm_c.cpp");
  CHECK(fresh.find("__hpvm__tensor_tanh(t1)") != std::string::npos);
  CHECK(readFile(src) == myEdits(fresh));
  // The new generation is the next merge base; the manifest has its digest.
  CHECK(readFile(t.out + "/.torch2hpvm/base/hpvm_c.cpp") == fresh);
  nlohmann::json m = nlohmann::json::parse(readFile(t.out + "/manifest.json"));
  for (const auto& f : m["files"])
    if (f["path"] == "hpvm_c.cpp")
      CHECK(f["sha256"] == sha256Hex(fresh));
  CHECK(manifestConflicts(t.out).empty());
  CHECK(readFile(t.out + "/ops.json") == t.freshExport("ops.json"));
}

TEST_CASE("Regeneration: an edit on a changed line conflicts and nothing is "
          "lost") {
  RegenFixture t("regen-conflict");
  std::string src = t.out + "/hpvm_c.cpp";
  std::string previous = readFile(src);
  const std::string relu = "  void *r = __hpvm__tensor_relu(t1);\n";
  const std::string myRelu =
      "  void *r = __hpvm__tensor_relu(t1); // keep relu\n";
  std::string mine = edit(myEdits(previous), relu, myRelu);
  writeFile(src, mine);
  t.changeActivation("Tanh");

  auto [text, status] = t.check();
  CHECK(text == "update   CMakeLists.txt\n"
                "conflict hpvm_c.cpp (edited; 1 conflict)\n"
                "update   ops.json\n"
                "'" +
                    t.out +
                    "': 3 files would change, 1 carries edits; a "
                    "regeneration would stop on a conflict\n");
  CHECK(status == ExitConflict);

  // A file of the user's in the way of a side file is never overwritten.
  writeFile(src + ".new", "my notes\n");
  auto inTheWay = snapshot(t.out);
  CHECK(t.regenerate(ExitUserError) ==
        src + ".new: the regeneration writes a file of this name (the side "
              "file of a conflict); move yours away and run again");
  CHECK(snapshot(t.out) == inTheWay);
  CHECK(t.report.str() == "");
  fs::remove(src + ".new");

  CHECK(t.regenerate(ExitConflict) ==
        t.out + ": conflicts in 1 file (hpvm_c.cpp); the program was not "
                "built. Resolve the <<<<<<< markers, then run the same "
                "command again");
  CHECK(t.report.str() ==
        "torch2hpvm-export: CONFLICT in hpvm_c.cpp: 1 conflict between your "
        "edits and the new generation; the three versions are written side "
        "by side as hpvm_c.cpp.base (previous generation), hpvm_c.cpp.mine "
        "(yours) and hpvm_c.cpp.new (new generation)\n"
        "torch2hpvm-export: regenerated '" +
            t.out +
            "': 3 files changed (0 merged cleanly, 1 with conflicts)\n");
  std::string fresh = t.freshExport("hpvm_c.cpp");
  // The conflict holds both lines; the rest of the edits merged.
  CHECK(readFile(src) == edit(myEdits(fresh),
                              "  void *r = __hpvm__tensor_tanh(t1);\n",
                              "<<<<<<< hpvm_c.cpp (yours)\n" + myRelu +
                                  "=======\n"
                                  "  void *r = __hpvm__tensor_tanh(t1);\n"
                                  ">>>>>>> hpvm_c.cpp (new generation)\n"));
  CHECK(readFile(src + ".base") == previous);
  CHECK(readFile(src + ".mine") == mine);
  CHECK(readFile(src + ".new") == fresh);
  CHECK(manifestConflicts(t.out) == std::vector<std::string>{"hpvm_c.cpp"});
  // The rest of the directory is the new generation, and no program claims
  // to be built from it.
  CHECK(readFile(t.out + "/ops.json") == t.freshExport("ops.json"));
  nlohmann::json m = nlohmann::json::parse(readFile(t.out + "/manifest.json"));
  CHECK(m["binary"] == "");

  // Unresolved, it stays as it is.
  auto before = snapshot(t.out);
  CHECK(t.regenerate(ExitConflict) ==
        src + ": still holds the conflict markers of the last regeneration; "
              "resolve them (the three versions are beside it: "
              "hpvm_c.cpp.base, hpvm_c.cpp.mine and hpvm_c.cpp.new) and run "
              "again, or use --force (which keeps your version as "
              "hpvm_c.cpp.orig)");
  CHECK(snapshot(t.out) == before);

  // Resolved, the next run keeps the resolution and drops the side files.
  std::string resolved = edit(myEdits(fresh), "__hpvm__tensor_tanh(t1);\n",
                              "__hpvm__tensor_tanh(t1); // was relu\n");
  writeFile(src, resolved);
  CHECK(t.regenerate() == "");
  CHECK(t.report.str() == "torch2hpvm-export: hpvm_c.cpp: kept your edits "
                          "(the new generation does not change it)\n"
                          "torch2hpvm-export: regenerated '" +
                              t.out + "': 0 files changed\n");
  CHECK(readFile(src) == resolved);
  CHECK_FALSE(fs::exists(src + ".base"));
  CHECK_FALSE(fs::exists(src + ".mine"));
  CHECK_FALSE(fs::exists(src + ".new"));
  CHECK(manifestConflicts(t.out).empty());
}

TEST_CASE("Regeneration: edits to ops.json are merged, and a merge that is "
          "not JSON is refused") {
  RegenFixture t("regen-ops-json");
  std::string ops = t.out + "/ops.json";
  // The user's own cost for the conv; the model change renames relu_2.
  const std::string cost = "    \"convolution_0\": ";
  std::string generated = readFile(ops);
  size_t at = generated.find(cost);
  REQUIRE(at != std::string::npos);
  std::string line = generated.substr(at, generated.find('\n', at) - at + 1);
  std::string mine = edit(generated, line, cost + "1,\n");
  writeFile(ops, mine);
  t.changeActivation("Tanh");
  auto [text, status] = t.check();
  CHECK(text == "update   CMakeLists.txt\n"
                "update   hpvm_c.cpp\n"
                "merge    ops.json (edited; merges cleanly)\n"
                "'" +
                    t.out + "': 3 files would change, 1 carries edits\n");
  CHECK(status == ExitWouldChange);
  CHECK(t.regenerate() == "");
  std::string fresh = t.freshExport("ops.json");
  CHECK(fresh.find("\"tanh_2\"") != std::string::npos);
  CHECK(readFile(ops) == edit(fresh, line, cost + "1,\n"));
  CHECK(readFile(t.out + "/.torch2hpvm/base/ops.json") == fresh);

  // Edits that merge line by line into something that is not JSON stop the
  // regeneration before anything is written.
  writeFile(ops, edit(readFile(ops), cost + "1,\n", cost + "1,,\n"));
  t.changeActivation("Sigmoid");
  auto before = snapshot(t.out);
  CHECK(t.regenerate(ExitUserError) ==
        ops + ": edited since it was generated; your edits and the new "
              "generation merge line by line, but the result is not valid "
              "JSON, so merge them by hand; move your version away, or use "
              "--force (which keeps it as ops.json.orig)");
  CHECK(snapshot(t.out) == before);
}

TEST_CASE("Regeneration: a re-export with no model change is a no-op") {
  RegenFixture t("regen-noop");
  std::string src = t.out + "/hpvm_c.cpp";
  for (bool edited : {false, true}) {
    INFO("edited: " << edited);
    if (edited)
      writeFile(src, myEdits(readFile(src)));
    auto before = snapshot(t.out);
    auto stamp = fs::last_write_time(src);
    auto [text, status] = t.check();
    CHECK(text == std::string(edited ? "keep     hpvm_c.cpp (edited; the new "
                                       "generation does not change it)\n"
                                     : "") +
                      "'" + t.out + "': 0 files would change, " +
                      (edited ? "1 carries" : "0 carry") + " edits\n");
    CHECK(status == ExitOk);
    CHECK(t.regenerate() == "");
    CHECK(t.report.str() == "torch2hpvm-export: '" + t.out +
                                "' is up to date (nothing to regenerate)\n");
    CHECK(snapshot(t.out) == before);
    CHECK(fs::last_write_time(src) == stamp);
    // No temporary directory is left beside it.
    for (const std::string& name : listDir(t.data))
      CHECK(name[0] != '.');
  }
}

TEST_CASE("Regeneration: the program is rebuilt from the merged sources, "
          "not when up to date, and not after a conflict") {
  RegenFixture t("regen-build");
  t.opts.noBuild = false;
  std::string binary = t.out + "/build/lenet_small";
  CHECK(t.regenerate() == "");
  REQUIRE(fs::is_regular_file(binary));
  auto built = fs::last_write_time(binary);
  CHECK(t.regenerate() == "");
  CHECK(t.report.str() == "torch2hpvm-export: '" + t.out +
                              "' is up to date (nothing to regenerate)\n");
  CHECK(fs::last_write_time(binary) == built);

  // An hpvm_rt built since the program (here: a program and sources from
  // before the runtime's build): linked anew.
  const auto runtime = hpvmRtBuiltAt();
  REQUIRE(runtime > fs::file_time_type::min());
  for (const char* f : {"hpvm_c.cpp", "CMakeLists.txt"})
    fs::last_write_time(t.out + "/" + f, runtime - std::chrono::hours(2));
  fs::last_write_time(binary, runtime - std::chrono::hours(1));
  CHECK(t.regenerate() == "");
  CHECK(t.report.str() ==
        "torch2hpvm-export: regenerated '" + t.out + "': 0 files changed\n");
  CHECK(fs::last_write_time(binary) > runtime);
  built = fs::last_write_time(binary);
  CHECK(t.regenerate() == "");
  CHECK(t.report.str() == "torch2hpvm-export: '" + t.out +
                              "' is up to date (nothing to regenerate)\n");

  // An edit since the build: rebuilt with the edit.
  std::string src = t.out + "/hpvm_c.cpp";
  writeFile(src, myEdits(readFile(src)));
  fs::last_write_time(src, built + std::chrono::seconds(1));
  CHECK(t.regenerate() == "");
  CHECK(fs::last_write_time(binary) > built);
  CHECK(readFile(src) == myEdits(readFile(t.out + "/.torch2hpvm/base/"
                                                  "hpvm_c.cpp")));

  // A conflict: no program claims to come from the new sources.
  writeFile(src, edit(readFile(src), "__hpvm__tensor_relu(t1);\n",
                      "__hpvm__tensor_relu(t1); // mine\n"));
  t.changeActivation("Tanh");
  CHECK(t.regenerate(ExitConflict) != "");
  CHECK_FALSE(fs::exists(t.out + "/build"));
  CHECK_FALSE(fs::exists(t.out + "/build.log"));
  // Resolved: built again.
  writeFile(src, readFile(src + ".new"));
  CHECK(t.regenerate() == "");
  CHECK(fs::is_regular_file(binary));
}

TEST_CASE(
    "Regeneration: --force overwrites edits, keeping each as .orig, and an "
    "edited file that cannot be merged is refused") {
  RegenFixture t("regen-force");
  // tuner_confs.txt comes from --config and is replaced, never merged (as
  // torch2hpvm-tune rewrites it).
  writeFile(t.data + "/c1.txt",
            "0.0\n+++++\nconf1 1 1 100 0\n" + LenetSmallConf + "-----\n");
  writeFile(t.data + "/c2.txt",
            "0.0\n+++++\nconf2 1 1 100 0\n" + LenetSmallConf + "-----\n");
  t.opts.configFile = t.data + "/c1.txt";
  CHECK(t.regenerate() == "");
  std::string src = t.out + "/hpvm_c.cpp";
  std::string mine = myEdits(readFile(src));
  writeFile(src, mine);
  writeFile(t.out + "/tuner_confs.txt", "tuned\n");
  t.opts.configFile = t.data + "/c2.txt";
  auto before = snapshot(t.out);
  CHECK(t.regenerate(ExitUserError) ==
        t.out + "/tuner_confs.txt: edited since it was generated, and the "
                "new generation changes it; only the text files (hpvm_c.cpp, "
                "CMakeLists.txt, ops.json) are merged; move your version "
                "away, or use "
                "--force (which keeps it as tuner_confs.txt.orig)");
  CHECK(snapshot(t.out) == before);

  // Without its merge base (an export of an older torch2hpvm, or a base
  // changed by hand) an edited source cannot be merged either.
  std::string baseFile = t.out + "/.torch2hpvm/base/hpvm_c.cpp";
  std::string base = readFile(baseFile);
  writeFile(t.out + "/tuner_confs.txt", readFile(t.data + "/c1.txt"));
  t.changeActivation("Tanh");
  // (--config is checked against the program: its relu becomes tanh too.)
  writeFile(t.data + "/c3.txt",
            edit(readFile(t.data + "/c2.txt"), "relu fp32", "tanh fp32"));
  t.opts.configFile = t.data + "/c3.txt";
  writeFile(baseFile, base + "// changed\n");
  before = snapshot(t.out);
  CHECK(t.regenerate(ExitUserError) ==
        src + ": edited since it was generated, and the previous generation "
              "(.torch2hpvm/base/hpvm_c.cpp) is missing or changed, so the "
              "edits cannot be merged; move your version away, or use "
              "--force (which keeps it as hpvm_c.cpp.orig)");
  CHECK(snapshot(t.out) == before);
  writeFile(baseFile, base);
  writeFile(t.out + "/tuner_confs.txt", "tuned\n");

  t.opts.force = true;
  writeFile(t.out + "/hpvm_c.cpp.orig", "an older backup\n");
  CHECK(t.regenerate() == "");
  CHECK(t.report.str() ==
        "torch2hpvm-export: hpvm_c.cpp: overwritten by the new generation "
        "(--force); your version is kept as hpvm_c.cpp.orig.1\n"
        "torch2hpvm-export: tuner_confs.txt: overwritten by the new "
        "generation (--force); your version is kept as tuner_confs.txt.orig\n"
        "torch2hpvm-export: regenerated '" +
            t.out + "': 4 files changed\n");
  CHECK(readFile(src) == readFile(t.out + "/.torch2hpvm/base/hpvm_c.cpp"));
  CHECK(readFile(src + ".orig.1") == mine);
  CHECK(readFile(src + ".orig") == "an older backup\n");
  CHECK(readFile(t.out + "/tuner_confs.txt") == readFile(t.data + "/c3.txt"));
  CHECK(readFile(t.out + "/tuner_confs.txt.orig") == "tuned\n");
}

TEST_CASE("Regeneration: deleted files come back, a file of the user's is "
          "never overwritten, files no longer generated go unless edited") {
  RegenFixture t("regen-files");
  writeFile(t.data + "/c1.txt",
            "0.0\n+++++\nconf1 1 1 100 0\n" + LenetSmallConf + "-----\n");
  // As torch2hpvm-tune writes it into an export made without --config.
  writeFile(t.out + "/tuner_confs.txt", "tuned\n");
  fs::remove(t.out + "/weights/fc_bias.bin");
  t.opts.configFile = t.data + "/c1.txt";
  auto [text, status] = t.check();
  CHECK(text == "update   hpvm_c.cpp\n"
                "update   ops.json\n"
                "refuse   tuner_confs.txt (exists, but torch2hpvm did not "
                "generate it and the new generation writes it)\n"
                "restore  weights/fc_bias.bin (deleted)\n"
                "'" +
                    t.out +
                    "': 3 files would change, 2 carry edits; a regeneration "
                    "would stop on a conflict\n");
  CHECK(status == ExitConflict);
  CHECK(t.regenerate(ExitUserError) ==
        t.out + "/tuner_confs.txt: exists, but torch2hpvm did not generate it "
                "and the new generation writes it; move your version away, or "
                "use --force (which keeps it as tuner_confs.txt.orig)");

  fs::rename(t.out + "/tuner_confs.txt", t.out + "/tuned_confs.txt");
  CHECK(t.regenerate() == "");
  CHECK(t.report.str() == "torch2hpvm-export: weights/fc_bias.bin: was "
                          "deleted; written again\n"
                          "torch2hpvm-export: regenerated '" +
                              t.out + "': 4 files changed\n");
  CHECK(readFile(t.out + "/tuned_confs.txt") == "tuned\n");
  CHECK(readFile(t.out + "/tuner_confs.txt") == readFile(t.data + "/c1.txt"));
  CHECK(fs::file_size(t.out + "/weights/fc_bias.bin") == 40);

  // Without --config, an edited tuner_confs.txt stays; an untouched one
  // would go.
  writeFile(t.out + "/tuner_confs.txt", "tuned again\n");
  t.opts.configFile.clear();
  CHECK(t.regenerate() == "");
  CHECK(t.report.str() == "torch2hpvm-export: tuner_confs.txt: no longer "
                          "generated; your edited version is kept\n"
                          "torch2hpvm-export: regenerated '" +
                              t.out + "': 2 files changed\n");
  CHECK(readFile(t.out + "/tuner_confs.txt") == "tuned again\n");
  t.opts.configFile = t.data + "/c1.txt";
  fs::remove(t.out + "/tuner_confs.txt");
  CHECK(t.regenerate() == "");
  t.opts.configFile.clear();
  CHECK(t.regenerate() == "");
  CHECK_FALSE(fs::exists(t.out + "/tuner_confs.txt"));
}

TEST_CASE("Regeneration: the tool's messages and exit codes") {
  std::string tool =
      std::string(HPVM_BINARY_DIR) + "/frontend/torch2hpvm-export";
  RegenFixture t("regen-tool");
  std::string log = t.data + "/log";
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {
        tool,        t.model,          "--tune", t.opts.tuneInput,
        "--test",    t.opts.testInput, "-o",     t.out,
        "--no-build"};
    args.insert(args.end(), extra.begin(), extra.end());
    fs::remove(log);
    int code = runCommand(args, t.data, log, nullptr);
    std::string text = readFile(log);
    return std::make_pair(code, text.substr(text.find('\n') + 1));
  };
  std::string src = t.out + "/hpvm_c.cpp";
  writeFile(src, edit(readFile(src), "__hpvm__tensor_relu(t1);\n",
                      "__hpvm__tensor_relu(t1); // mine\n"));
  CHECK(run({"--check"}) ==
        std::make_pair(0, "keep     hpvm_c.cpp (edited; the new generation "
                          "does not change it)\n'" +
                              t.out +
                              "': 0 files would change, 1 carries "
                              "edits\n"));
  t.changeActivation("Tanh");
  CHECK(run({"--check"}).first == ExitConflict);
  auto [code, text] = run({});
  CHECK(code == ExitConflict);
  CHECK(text.find("torch2hpvm-export: CONFLICT in hpvm_c.cpp: 1 conflict ") ==
        0);
  CHECK(text.find("\ntorch2hpvm-export: error: " + t.out +
                  ": conflicts in 1 file (hpvm_c.cpp); ") != std::string::npos);
  writeFile(src, readFile(src + ".new"));
  CHECK(run({"--check"}).first == ExitOk);
  t.changeActivation("Sigmoid");
  CHECK(run({"--check"}).first == ExitWouldChange);
}

TEST_CASE("Cli: a rejected model or dataset writes nothing") {
  std::string data = makeDatasets("cli-nothing");
  std::string out = data + "/out";
  Options o = exportOptions(data, "unsupported.onnxtxt", out);
  std::string error = exportError(o);
  CHECK(error.find("unsupported") != std::string::npos);
  CHECK(error.find("Elu") != std::string::npos);
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
  CHECK(exportError(o) == "--config '" + data +
                              "/missing.txt': cannot open: No such file or "
                              "directory");
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
          "node and the intrinsic HPVM lacks, and clang exports them") {
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

TEST_CASE("Cli: --toolchain hpvm refuses a 2-D input, an hpvm_rt "
          "extension") {
  std::string data = makeDatasets("cli-input-2d");
  std::string out = data + "/out";
  Options o = exportOptions(data, "../mlp_2d.onnxtxt", out);
  o.toolchain = Toolchain::Hpvm;
  CHECK(exportError(o) ==
        o.model + ": the input 'input' is 2-D (N, K); feature-vector inputs "
                  "are an hpvm_rt extension (--toolchain clang builds them)");
  CHECK_FALSE(fs::exists(out));
}
