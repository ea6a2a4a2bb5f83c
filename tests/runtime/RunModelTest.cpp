// RunModelTest.cpp - the generated programs' driver (hpvm_rt::runModel) on a
// fake model: batching, accuracy, final_accuracy, .npy and JSON outputs,
// configurations, and every dataset and option error.
#include "hpvm_rt/RunModel.h"

#include "approx/HalfConv.h"
#include "approx/Isa.h"

#include "tensor_runtime.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

namespace fs = std::filesystem;

const std::string kDataDir = HPVM_SOURCE_DIR "/tests/runtime/data/";

/// A fresh directory that is also the working directory (final_accuracy and
/// profile_info.txt land there) for the test's lifetime.
struct TempDir {
  fs::path path, oldCwd;
  TempDir() {
    char tmpl[] = "/tmp/hpvm_rt_runmodel_XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
    oldCwd = fs::current_path();
    fs::current_path(path);
  }
  ~TempDir() {
    fs::current_path(oldCwd);
    fs::remove_all(path);
  }
  std::string dir() const { return path.string(); }
  std::string file(const std::string& name) const {
    return (path / name).string();
  }
};

void writeBytes(const std::string& path, const void* data, size_t n) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  REQUIRE(out.good());
}

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A fake 1x2x2 -> 3-class model whose output for an image is its first
/// three pixels. Test set: 10 images, 7 predicted right (indices 2, 5 and 9
/// wrong); tune set: 6 images, all right.
struct FakeModel {
  hpvm_rt::ModelInfo info{};
  std::vector<int64_t> batches;
  std::vector<std::string> weightDirs;
  bool wrongShape = false;
  hpvm_rt::LoadWeightsFn load;
  hpvm_rt::RunBatchFn run;
  std::string dir;

  static std::vector<float> image(int i) {
    std::vector<float> px = {0.f, 0.f, 0.f, -1.f};
    px[static_cast<size_t>(i % 3)] = 1.f + static_cast<float>(i);
    px[static_cast<size_t>((i + 1) % 3)] = 0.5f;
    return px;
  }

  explicit FakeModel(const std::string& modelDir) : dir(modelDir) {
    info.name = "fake";
    info.modelDir = dir.c_str();
    info.channels = 1;
    info.height = 2;
    info.width = 2;
    info.numClasses = 3;
    info.tuneCount = 6;
    info.testCount = 10;
    info.defaultBatch = 0;
    info.defaultConfig = "";
    info.numOps = 6;
    info.inspect = 0;
    writeSet("test", 10, {2, 5, 9});
    writeSet("tune", 6, {});
    load = [this](const std::string& d) { weightDirs.push_back(d); };
    run = [this](void* in) -> void* {
      auto* x = static_cast<Tensor*>(in);
      hpvm_request_tensor(x, 0);
      size_t n = x->dims.dim_sizes[0];
      batches.push_back(static_cast<int64_t>(n));
      size_t classes = wrongShape ? 2 : 3;
      std::vector<float> y(n * classes);
      const float* px = static_cast<const float*>(x->host_data);
      for (size_t i = 0; i < n; ++i)
        for (size_t c = 0; c < classes; ++c)
          y[i * classes + c] = px[i * 4 + c];
      void* out = create4DTensor(0, 0, n, classes, 1, 1);
      initTensorData(out, y.data(), y.size() * sizeof(float));
      return out;
    };
  }

  void writeSet(const std::string& set, int count,
                const std::vector<int>& wrong) {
    std::vector<float> pixels;
    std::vector<int32_t> labels;
    for (int i = 0; i < count; ++i) {
      std::vector<float> px = image(i);
      pixels.insert(pixels.end(), px.begin(), px.end());
      bool isWrong = std::find(wrong.begin(), wrong.end(), i) != wrong.end();
      labels.push_back(isWrong ? (i + 1) % 3 : i % 3);
    }
    writeBytes(dir + "/" + set + "_input.bin", pixels.data(),
               pixels.size() * sizeof(float));
    writeBytes(dir + "/" + set + "_labels.bin", labels.data(),
               labels.size() * sizeof(int32_t));
  }
};

struct Outcome {
  int code;
  std::string out, err;
};

int redirect(int fd, const std::string& path) {
  int saved = dup(fd);
  int file = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(file, fd);
  close(file);
  return saved;
}

void restore(int fd, int saved) {
  dup2(saved, fd);
  close(saved);
}

/// Runs runModel("fake" + args) with stdout and stderr captured.
Outcome runModel(FakeModel& m, const std::vector<std::string>& args) {
  std::vector<std::string> all = {"/some/dir/fake"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string outPath = m.dir + "/.stdout", errPath = m.dir + "/.stderr";
  std::fflush(stdout);
  std::fflush(stderr);
  int savedOut = redirect(1, outPath), savedErr = redirect(2, errPath);
  int code = hpvm_rt::runModel(static_cast<int>(all.size()), argv.data(),
                               m.info, m.load, m.run);
  std::fflush(stdout);
  std::fflush(stderr);
  restore(1, savedOut);
  restore(2, savedErr);
  Outcome o{code, readText(outPath), readText(errPath)};
  fs::remove(outPath);
  fs::remove(errPath);
  return o;
}

} // namespace

TEST_CASE("Runtime: runModel runs the test set with a final partial batch") {
  TempDir tmp;
  FakeModel m(tmp.dir());
  Outcome o = runModel(m, {"--batch-size", "4"});
  CHECK(o.code == 0);
  CHECK(o.err == "");
  CHECK(o.out == "fake: test set, 10 images in batches of 4, exact FP32 (no "
                 "configuration)\nAccuracy: 70.000000% (7 of 10 images)\n");
  CHECK(m.batches == std::vector<int64_t>{4, 4, 2});
  CHECK(m.weightDirs == std::vector<std::string>{tmp.dir() + "/"});
  // HPVM's format: fixed, 6 decimals, no newline.
  CHECK(readText("final_accuracy") == "70.000000");
  std::string profile = readText("profile_info.txt");
  CHECK(profile.rfind("Iteration 0\n", 0) == 0);
  CHECK(profile.find("Iteration 2\n") != std::string::npos);
  CHECK(profile.find("Iteration 3\n") == std::string::npos);
  CHECK(profile.find("\nTotal Time  : ") != std::string::npos);
}

TEST_CASE("Runtime: a relative modelDir is the program's directory's") {
  // torch2hpvm's programs say "../" (they are OUT/build/<model>), so that
  // their source names no directory and the output directory can move.
  TempDir tmp;
  FakeModel m(tmp.dir());
  fs::path exe = fs::read_symlink("/proc/self/exe");
  std::string relative =
      fs::path(tmp.dir()).lexically_relative(exe.parent_path()).string();
  REQUIRE(relative.rfind("..", 0) == 0);
  m.info.modelDir = relative.c_str();
  Outcome o = runModel(m, {"-q"});
  CHECK(o.code == 0);
  CHECK(o.err == "");
  REQUIRE(m.weightDirs.size() == 1);
  CHECK(m.weightDirs[0] == tmp.dir() + "/");
  // --model-dir stays relative to the working directory.
  m.weightDirs.clear();
  fs::path cwd = fs::current_path();
  fs::current_path(tmp.dir());
  o = runModel(m, {"-q", "--model-dir", "."});
  fs::current_path(cwd);
  CHECK(o.code == 0);
  CHECK(m.weightDirs == std::vector<std::string>{"./"});
}

TEST_CASE("Runtime: runModel batch sizes, --limit and the tune set") {
  TempDir tmp;
  FakeModel m(tmp.dir());
  SUBCASE("whole set by default (HPVM)") {
    CHECK(runModel(m, {"-q"}).out == "Accuracy: 70.000000% (7 of 10 images)\n");
    CHECK(m.batches == std::vector<int64_t>{10});
  }
  SUBCASE("the model's default batch") {
    m.info.defaultBatch = 3;
    CHECK(runModel(m, {"test", "--quiet"}).code == 0);
    CHECK(m.batches == std::vector<int64_t>{3, 3, 3, 1});
  }
  SUBCASE("--batch-size 0 and larger than the set mean one batch") {
    m.info.defaultBatch = 3;
    CHECK(runModel(m, {"--batch-size=0", "-q"}).code == 0);
    CHECK(runModel(m, {"-b", "64", "-q"}).code == 0);
    CHECK(m.batches == std::vector<int64_t>{10, 10});
  }
  SUBCASE("--limit") {
    Outcome o = runModel(m, {"--limit", "5", "--batch-size", "4", "-q"});
    CHECK(o.out == "Accuracy: 80.000000% (4 of 5 images)\n");
    CHECK(m.batches == std::vector<int64_t>{4, 1});
    CHECK(readText("final_accuracy") == "80.000000");
  }
  SUBCASE("tune set") {
    Outcome o = runModel(m, {"tune", "-q"});
    CHECK(o.out == "Accuracy: 100.000000% (6 of 6 images)\n");
    CHECK(m.batches == std::vector<int64_t>{6});
  }
  SUBCASE("--model-dir overrides the baked-in directory") {
    m.info.modelDir = "/nonexistent/";
    Outcome o = runModel(m, {"--model-dir", tmp.dir(), "-q"});
    CHECK(o.code == 0);
    CHECK(m.weightDirs == std::vector<std::string>{tmp.dir() + "/"});
  }
}

TEST_CASE("Runtime: runModel --output writes the outputs as .npy") {
  TempDir tmp;
  FakeModel m(tmp.dir());
  Outcome o = runModel(m, {"-b", "4", "--output", "out.npy", "-q"});
  REQUIRE(o.code == 0);
  std::string bytes = readText("out.npy");
  const std::string header =
      std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
      "{'descr': '<f4', 'fortran_order': False, 'shape': (10, 3), }";
  REQUIRE(bytes.size() == 128 + 10 * 3 * 4);
  CHECK(bytes.substr(0, header.size()) == header);
  CHECK(bytes.substr(header.size(), 128 - header.size()) ==
        std::string(128 - header.size() - 1, ' ') + "\n");
  std::vector<float> values(30);
  std::memcpy(values.data(), bytes.data() + 128, 120);
  for (int i = 0; i < 10; ++i) {
    std::vector<float> px = FakeModel::image(i);
    for (int c = 0; c < 3; ++c)
      CHECK(values[static_cast<size_t>(i * 3 + c)] ==
            px[static_cast<size_t>(c)]);
  }
  // NumPy reads it back.
  std::string cmd = "/usr/bin/python3 -c \"import numpy as n; a=n.load('" +
                    tmp.file("out.npy") +
                    "'); print(a.shape, a.dtype, float(a.sum()))\" > py.txt";
  REQUIRE(std::system(cmd.c_str()) == 0);
  CHECK(readText("py.txt") == "(10, 3) float32 60.0\n");
}

TEST_CASE("Runtime: runModel --json, --repeat and --print-time") {
  TempDir tmp;
  FakeModel m(tmp.dir());
  Outcome o = runModel(m, {"-b", "4", "--repeat", "3", "--print-time", "--json",
                           "r.json", "--threads", "1", "-q"});
  REQUIRE(o.code == 0);
  CHECK(m.batches.size() == 9);
  CHECK(o.out.rfind("Accuracy: 70.000000% (7 of 10 images)\nExecution time "
                    "summary (9 batches of up to 4 images):\n mean (ms)",
                    0) == 0);
  CHECK(o.out.find("\nThroughput: ") != std::string::npos);
  auto j = nlohmann::json::parse(readText("r.json"));
  CHECK(j["model"] == "fake");
  CHECK(j["set"] == "test");
  CHECK(j["images"] == 10);
  CHECK(j["batch_size"] == 4);
  CHECK(j["repeat"] == 3);
  CHECK(j["threads"] == 1);
  CHECK(j["isa"] == hpvm::rt::approx::isaName(hpvm::rt::approx::isaLevel()));
  CHECK(j["fp16"] ==
        (hpvm::rt::approx::halfConvAvailable() ? "half" : "emulated"));
  CHECK(j["accuracy"] == 70.0);
  CHECK(j["correct"] == 7);
  CHECK(j["config"].is_null());
  CHECK(j["batch_times_ms"].size() == 9);
  CHECK(j["time_ms"]["min"].get<double>() <=
        j["time_ms"]["median"].get<double>());
  CHECK(j["images_per_second"].get<double>() > 0);
}

TEST_CASE("Runtime: runModel writes profile, trace and call-log files") {
  TempDir tmp;
  FakeModel m(tmp.dir());
  // The fake model launches no DFG, so every launch has no op records.
  Outcome o = runModel(m, {"-b", "4", "--profile", "p.json", "--trace",
                           "t.json", "--log-calls", "l.json"});
  REQUIRE(o.code == 0);
  CHECK(o.out.find("      0.000  100.0%  total over 3 launches\n") !=
        std::string::npos);
  auto p = nlohmann::json::parse(readText("p.json"));
  CHECK(p["launches"] == 3);
  CHECK(p["ops"].empty());
  auto t = nlohmann::json::parse(readText("t.json"));
  CHECK(t["traceEvents"].size() == 1);
  CHECK(nlohmann::json::parse(readText("l.json")) == nlohmann::json::array());
}

TEST_CASE("Runtime: runModel selects configurations") {
  TempDir tmp;
  FakeModel m(tmp.dir());
  const std::string conf = kDataDir + "predtuner_style.txt";
  SUBCASE("-c FILE uses the first block and notes gpu lines") {
    Outcome o = runModel(m, {"-c", conf, "--json", "r.json"});
    CHECK(o.code == 0);
    CHECK(o.err == "hpvm_rt: note: configuration lines marked 'gpu' run on "
                   "the CPU with the same knobs (fp16 knobs with "
                   "half-precision numerics)\n");
    CHECK(o.out.rfind("fake: test set, 10 images in batches of 10, "
                      "configuration 'conf0' of " +
                          conf + "\n",
                      0) == 0);
    auto j = nlohmann::json::parse(readText("r.json"));
    CHECK(j["config"]["name"] == "conf0");
    CHECK(j["config"]["index"] == 0);
    CHECK(j["config"]["file"] == conf);
  }
  SUBCASE("--config NAME and INDEX") {
    CHECK(
        runModel(m, {"-c", conf, "--config", "conf1", "--json", "a.json", "-q"})
            .code == 0);
    CHECK(nlohmann::json::parse(readText("a.json"))["config"]["index"] == 1);
    CHECK(runModel(m, {"-c", conf, "--config", "1", "--json", "b.json", "-q"})
              .code == 0);
    CHECK(nlohmann::json::parse(readText("b.json"))["config"]["name"] ==
          "conf1");
  }
  SUBCASE("the baked-in default is relative to the model directory") {
    fs::copy_file(conf, tmp.file("tuner_confs.txt"));
    m.info.defaultConfig = "tuner_confs.txt";
    CHECK(runModel(m, {"--json", "r.json", "-q"}).code == 0);
    CHECK(nlohmann::json::parse(readText("r.json"))["config"]["file"] ==
          tmp.dir() + "/tuner_confs.txt");
  }
  SUBCASE("a configuration that does not cover the program's ops") {
    m.info.numOps = 5;
    Outcome o = runModel(m, {"-c", conf});
    CHECK(o.code == 1);
    CHECK(o.err == "fake: error: " + conf +
                       ":6:1: line '3' of configuration 'conf0' covers op "
                       "6, but the program has 5 ops (1 to 5): remove the "
                       "lines past op 5\n");
    CHECK(m.batches.empty());
    CHECK_FALSE(fs::exists("final_accuracy"));
  }
  SUBCASE("errors in the file and the selector") {
    Outcome o = runModel(m, {"-c", conf, "--config", "conf7"});
    CHECK(o.err == "fake: error: " + conf +
                       ": no configuration named 'conf7' (the file has 2 "
                       "configurations: conf0, conf1)\n");
    const std::string bad = "1\n+++++\nc 1 1 1 0\n1 gpu conv perf 120\n-----\n";
    writeBytes("bad.txt", bad.data(), bad.size());
    o = runModel(m, {"-c", "bad.txt"});
    CHECK(o.code == 1);
    CHECK(o.err == "fake: error: bad.txt:4:17: unknown knob id 120 for "
                   "'perf'; expected one of 121-138\n");
    o = runModel(m, {"--config", "conf1"});
    CHECK(o.err == "fake: error: --config needs a configuration file: give "
                   "-c FILE (the model has no default configuration)\n");
  }
}

TEST_CASE("Runtime: runModel --all-configs evaluates every configuration") {
  TempDir tmp;
  FakeModel m(tmp.dir());
  Outcome o = runModel(m, {"-c", kDataDir + "predtuner_style.txt",
                           "--all-configs", "--json", "all.json", "-q"});
  REQUIRE(o.code == 0);
  // One untimed warm-up batch before each of the three timed runs.
  CHECK(m.batches == std::vector<int64_t>{10, 10, 10, 10, 10, 10});
  std::istringstream lines(o.out);
  std::string line;
  std::vector<std::string> rows;
  while (std::getline(lines, line))
    rows.push_back(line);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0] == "Configuration         Predicted   Measured    Accuracy  "
                   "     Loss");
  CHECK(rows[1].rfind("(exact fp32)                  -     1.000x    "
                      "70.0000%     0.0000",
                      0) == 0);
  CHECK(rows[2].rfind("conf0                    1.000x", 0) == 0);
  CHECK(rows[3].rfind("conf1                    2.500x", 0) == 0);
  CHECK(rows[3].find("70.0000%     0.0000") != std::string::npos);
  auto j = nlohmann::json::parse(readText("all.json"));
  CHECK(j["exact"]["accuracy"] == 70.0);
  REQUIRE(j["configs"].size() == 2);
  CHECK(j["configs"][1]["name"] == "conf1");
  CHECK(j["configs"][1]["predicted_speedup"] == 2.5);
  CHECK(j["configs"][1]["accuracy_loss"] == 0.0);
  CHECK(j["configs"][1]["measured_speedup"].get<double>() > 0);
}

TEST_CASE("Runtime: runModel reports bad datasets with file and sizes") {
  TempDir tmp;
  FakeModel m(tmp.dir());
  const std::string input = tmp.file("test_input.bin");
  const std::string labels = tmp.file("test_labels.bin");
  SUBCASE("input file of the wrong size") {
    fs::resize_file(input, 159);
    Outcome o = runModel(m, {});
    CHECK(o.code == 1);
    CHECK(o.err == "fake: error: " + input +
                       ": 159 bytes, expected 10 images x 1x2x2 float32 = "
                       "160 bytes\n");
    CHECK(m.weightDirs.empty());
  }
  SUBCASE("labels file of the wrong size") {
    fs::resize_file(labels, 44);
    CHECK(runModel(m, {}).err ==
          "fake: error: " + labels +
              ": 44 bytes, expected 10 labels x int32 = 40 bytes\n");
  }
  SUBCASE("no labels file: no accuracy, no final_accuracy") {
    fs::remove(labels);
    const Outcome o = runModel(m, {"-q"});
    CHECK(o.code == 0);
    CHECK(o.out ==
          "No accuracy: the test set has no labels (" + labels + ")\n");
    CHECK(!fs::exists("final_accuracy"));
  }
  SUBCASE("label out of range") {
    int32_t bad[] = {0, 1, 3};
    std::fstream f(labels, std::ios::in | std::ios::out | std::ios::binary);
    f.write(reinterpret_cast<const char*>(bad), sizeof(bad));
    f.close();
    Outcome o = runModel(m, {});
    CHECK(o.code == 1);
    CHECK(o.err == "fake: error: " + labels +
                       ": label 3 at index 2 is out of range; the model has "
                       "3 classes\n");
    CHECK_FALSE(fs::exists("final_accuracy"));
  }
  SUBCASE("a set the model was exported without") {
    m.info.tuneCount = 0;
    CHECK(runModel(m, {"tune"}).err == "fake: error: the model has no tune "
                                       "set (it was exported without one)\n");
  }
  SUBCASE("--limit beyond the set") {
    CHECK(runModel(m, {"--limit", "11"}).err ==
          "fake: error: --limit 11 exceeds the 10 images of the test set\n");
  }
  SUBCASE("output of the wrong shape") {
    m.wrongShape = true;
    Outcome o = runModel(m, {"-b", "4", "-q"});
    CHECK(o.code == 1);
    CHECK(o.err == "fake: error: images 0 to 4: the program's output has 8 "
                   "values with batch dimension 4, expected 4 images x 3 "
                   "classes\n");
    CHECK_FALSE(fs::exists("final_accuracy"));
    CHECK_FALSE(fs::exists("profile_info.txt"));
  }
}

TEST_CASE("Runtime: runModel option errors and --help") {
  TempDir tmp;
  FakeModel m(tmp.dir());
  auto err = [&](const std::vector<std::string>& args) {
    Outcome o = runModel(m, args);
    CHECK(o.code == 1);
    return o.err;
  };
  const std::string tryHelp = "\nTry 'fake --help'.\n";
  CHECK(err({"--bogus"}) == "fake: error: unknown option '--bogus'" + tryHelp);
  CHECK(err({"--batch-size"}) ==
        "fake: error: option '--batch-size' needs a value (N)" + tryHelp);
  CHECK(err({"-b", "x"}) == "fake: error: bad value 'x' for --batch-size: "
                            "expected an integer >= 0" +
                                tryHelp);
  CHECK(err({"--repeat", "0"}) == "fake: error: bad value '0' for --repeat: "
                                  "expected an integer >= 1" +
                                      tryHelp);
  CHECK(err({"--quiet=yes"}) ==
        "fake: error: option '--quiet' takes no value" + tryHelp);
  CHECK(err({"train"}) == "fake: error: unexpected argument 'train'; "
                          "expected 'test' or 'tune'" +
                              tryHelp);
  CHECK(err({"test", "tune"}) ==
        "fake: error: give only one of 'test' and 'tune'" + tryHelp);
  CHECK(err({"--all-configs", "--config", "x"}) ==
        "fake: error: --all-configs and --config exclude each other" + tryHelp);
  CHECK(err({"--all-configs", "-o", "x.npy"}) ==
        "fake: error: --all-configs and --output exclude each other" + tryHelp);
  setenv("HPVM_NUM_THREADS", "many", 1);
  CHECK(err({}) == "fake: error: HPVM_NUM_THREADS='many': expected an "
                   "integer from 0 to 1024\n");
  setenv("HPVM_NUM_THREADS", "100000", 1);
  CHECK(err({}) == "fake: error: HPVM_NUM_THREADS='100000': expected an "
                   "integer from 0 to 1024\n");
  unsetenv("HPVM_NUM_THREADS");
  CHECK(err({"--threads", "100000"}) ==
        "fake: error: bad value '100000' for --threads: expected an integer "
        "from 0 to 1024" +
            tryHelp);
  unsetenv("HPVM_NUM_THREADS");
  CHECK(m.batches.empty());

  Outcome help = runModel(m, {"--help"});
  CHECK(help.code == 0);
  CHECK(help.out.rfind("Usage: fake [test|tune] [options]\n", 0) == 0);
  for (const char* opt :
       {"-c, --config-file FILE", "--config NAME|INDEX", "--all-configs",
        "--batch-size N", "--limit N", "--repeat N", "--print-time",
        "--output FILE.npy", "--threads N", "--model-dir DIR", "--json FILE",
        "--profile FILE.json", "--trace FILE.json", "--log-calls FILE.json",
        "--quiet", "--help"})
    CHECK(help.out.find(opt) != std::string::npos);
  CHECK(m.weightDirs.empty());
}
