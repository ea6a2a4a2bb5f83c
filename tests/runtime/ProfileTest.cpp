// ProfileTest.cpp - profiles, Chrome traces and call logs from op records;
// profile_info.txt; the llvm_hpvm_* runtime-controller entry points.
#include "base/Errors.h"
#include "driver/Controller.h"
#include "driver/Profiler.h"
#include "tensor_runtime.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace hpvm::rt;

namespace {

namespace fs = std::filesystem;

OpRecord record(int opId, int fused, HpvmOp op, int knob, double flops,
                double start, double seconds) {
  OpRecord r;
  r.opId = opId;
  r.fusedOrdinal = fused;
  r.op = op;
  r.knob.id = knob;
  r.flops = flops;
  r.startSeconds = start;
  r.seconds = seconds;
  r.inputShapes = {{1, 1, 4, 4}};
  r.outputShape = {1, 2, 2, 2};
  return r;
}

/// Two launches of conv+add (fused node 1) and softmax (fused node 2).
Profiler twoLaunches() {
  Profiler p;
  p.addLaunch(0.0, {record(1, 1, HpvmOp::Conv, 151, 1000, 0.0, 0.002),
                    record(2, 1, HpvmOp::Add, 11, 8, 0.002, 0.001),
                    record(3, 2, HpvmOp::Softmax, 11, 32, 0.003, 0.0005)});
  p.addLaunch(0.010, {record(1, 1, HpvmOp::Conv, 151, 1000, 0.0, 0.004),
                      record(2, 1, HpvmOp::Add, 11, 8, 0.004, 0.001),
                      record(3, 2, HpvmOp::Softmax, 11, 32, 0.005, 0.0005)});
  return p;
}

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A fresh working directory for the test's lifetime.
struct TempCwd {
  fs::path path, oldCwd;
  TempCwd() {
    char tmpl[] = "/tmp/hpvm_rt_profile_XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
    oldCwd = fs::current_path();
    fs::current_path(path);
  }
  ~TempCwd() {
    fs::current_path(oldCwd);
    fs::remove_all(path);
  }
};

} // namespace

TEST_CASE("Runtime: profile sums per op and per fused node") {
  Profiler p = twoLaunches();
  CHECK(p.launches() == 2);
  nlohmann::json j = p.profileJson();
  CHECK(j["launches"] == 2);
  CHECK(j["total_ms"].get<double>() == doctest::Approx(9.0));
  REQUIRE(j["ops"].size() == 3);
  const nlohmann::json& conv = j["ops"][0];
  CHECK(conv["op"] == "conv");
  CHECK(conv["op_id"] == 1);
  CHECK(conv["fused_node"] == 1);
  CHECK(conv["knob"] == "perf_fp16 151");
  CHECK(conv["calls"] == 2);
  CHECK(conv["total_ms"].get<double>() == doctest::Approx(6.0));
  CHECK(conv["mean_ms"].get<double>() == doctest::Approx(3.0));
  CHECK(conv["flops"] == 2000.0);
  CHECK(conv["gflops_per_s"].get<double>() ==
        doctest::Approx(2000 / 0.006 / 1e9));
  CHECK(j["ops"][1]["op"] == "add");
  CHECK(j["ops"][2]["op"] == "softmax");
  REQUIRE(j["fused_nodes"].size() == 2);
  const nlohmann::json& node = j["fused_nodes"][0];
  CHECK(node["fused_node"] == 1);
  CHECK(node["ops"] == "conv+add");
  CHECK(node["knobs"] == "perf_fp16 151, fp32 11");
  CHECK(node["calls"] == 2);
  CHECK(node["total_ms"].get<double>() == doctest::Approx(8.0));
  CHECK(node["flops"] == 2016.0);
  CHECK(j["fused_nodes"][1]["ops"] == "softmax");

  std::string table = p.profileTable();
  std::istringstream lines(table);
  std::string header, first;
  std::getline(lines, header);
  std::getline(lines, first);
  CHECK(header == "  Time (ms)   Share   Calls  Mean (ms)   GFLOP/s  Node    "
                  "Op  Kind          Knob");
  CHECK(first == "      6.000   66.7%       2     3.0000      0.00     1     "
                 "1  conv          perf_fp16 151");
  CHECK(table.find("      9.000  100.0%  total over 2 launches\n") !=
        std::string::npos);
}

TEST_CASE("Runtime: Chrome trace and call log have one entry per op call") {
  Profiler p = twoLaunches();
  nlohmann::json trace = p.traceJson();
  CHECK(trace["displayTimeUnit"] == "ms");
  const nlohmann::json& events = trace["traceEvents"];
  REQUIRE(events.size() == 7);
  CHECK(events[0]["ph"] == "M");
  const nlohmann::json& conv2 = events[4];
  CHECK(conv2["name"] == "conv");
  CHECK(conv2["ph"] == "X");
  CHECK(conv2["ts"].get<double>() == doctest::Approx(10000.0));
  CHECK(conv2["dur"].get<double>() == doctest::Approx(4000.0));
  CHECK(conv2["args"]["op_id"] == 1);
  CHECK(conv2["args"]["fused_node"] == 1);
  CHECK(conv2["args"]["launch"] == 1);
  CHECK(conv2["args"]["knob"] == "perf_fp16 151");
  CHECK(conv2["args"]["inputs"] == nlohmann::json::parse("[[1,1,4,4]]"));
  CHECK(conv2["args"]["output"] == nlohmann::json::parse("[1,2,2,2]"));
  CHECK(events[6]["ts"].get<double>() == doctest::Approx(15000.0));

  nlohmann::json log = p.callLogJson();
  REQUIRE(log.size() == 6);
  CHECK(log[4]["op"] == "add");
  CHECK(log[4]["launch"] == 1);
  CHECK(log[4]["knob"] == "fp32");
  CHECK(log[4]["knob_id"] == 11);
  CHECK(log[4]["start_ms"].get<double>() == doctest::Approx(14.0));
  CHECK(log[4]["time_ms"].get<double>() == doctest::Approx(1.0));
  CHECK(log[4]["flops"] == 8.0);
}

TEST_CASE("Runtime: profile_info.txt has HPVM's layout") {
  ProfileIteration a;
  a.computeSeconds = 0.0015;
  a.kernels = {{"tensorConvolution", 0.001}, {"tensorAdd", 0.0005}};
  ProfileIteration b;
  b.computeSeconds = 0.0025;
  CHECK(formatProfileInfo({a, b}) ==
        "Iteration 0\ntensorConvolution 1.000000 0\ntensorAdd 0.500000 0\n\n"
        "Iteration Compute Time   : 1.500000\nIteration Compute Energy : 0\n"
        "Iteration Control Time   : 0\nIteration Control Energy : 0\n"
        "Iteration Config Time   : 0\nIteration Config Energy : 0\n"
        "Iteration End Frequency : 0\n\n\n"
        "Iteration 1\n\n"
        "Iteration Compute Time   : 2.500000\nIteration Compute Energy : 0\n"
        "Iteration Control Time   : 0\nIteration Control Energy : 0\n"
        "Iteration Config Time   : 0\nIteration Config Energy : 0\n"
        "Iteration End Frequency : 0\n\n\n"
        "Total Compute Time  : 4.000000\nTotal Compute Energy: 0\n"
        "Total Control Time  : 0\nTotal Control Energy: 0\n"
        "Total Config Time  : 0\nTotal Config Energy: 0\n"
        "Total Time  : 4.000000\nTotal Energy: 0\n");
  CHECK(profileKernelName(record(1, 1, HpvmOp::Conv, 151, 0, 0, 0)) ==
        "tensorConvolution(perf_fp16)");
  CHECK(profileKernelName(record(1, 1, HpvmOp::Mul, 11, 0, 0, 0)) ==
        "tensorGemmGPU");
}

TEST_CASE("Runtime: controller entry points keep HPVM's running accuracy") {
  TempCwd cwd;
  llvm_hpvm_initializeRuntimeController(HPVM_SOURCE_DIR
                                        "/tests/runtime/data/lenet_three.txt");
  const int32_t labels[] = {0, 1, 2, 0, 1, 2};
  {
    std::ofstream out("labels.bin", std::ios::binary);
    out.write(reinterpret_cast<const char*>(labels), sizeof(labels));
  }
  // Batch 1: rows predict 0, 1, 0, 0 -> 3 of 4 right.
  float batch1[] = {1, 0, 0, 0, 1, 0, 1, 0, 0, 1, 0, 0};
  void* out1 = create4DTensor(0, 0, 4, 3, 1, 1);
  initTensorData(out1, batch1, sizeof(batch1));
  llvm_hpvm_invokeRtControl(out1, "labels.bin", 0, 4);
  CHECK(readText("final_accuracy") == "75.000000");
  // Batch 2: rows predict 1 (tie keeps the lower index), 0 -> 1 of 2 right.
  float batch2[] = {0, 1, 1, 1, 0, 0};
  void* out2 = create4DTensor(0, 0, 2, 3, 1, 1);
  initTensorData(out2, batch2, sizeof(batch2));
  // Later label paths are ignored, as in HPVM (the first file is cached).
  llvm_hpvm_invokeRtControl(out2, "ignored.bin", 4, 6);
  CHECK(readText("final_accuracy") == "62.500000");
  llvm_hpvm_clearRuntimeController();
  std::string profile = readText("profile_info.txt");
  CHECK(profile.rfind("Iteration 0\n", 0) == 0);
  CHECK(profile.find("Iteration 1\n") != std::string::npos);
  CHECK(profile.find("\nTotal Time  : ") != std::string::npos);
  // Nothing recorded since: a second clear writes nothing.
  fs::remove("profile_info.txt");
  llvm_hpvm_clearRuntimeController();
  CHECK_FALSE(fs::exists("profile_info.txt"));
  freeTensor(out1);
  freeTensor(out2);
}

TEST_CASE("Runtime: controller rejects bad labels and batches") {
  TempCwd cwd;
  const int32_t labels[] = {0, 7};
  {
    std::ofstream out("labels.bin", std::ios::binary);
    out.write(reinterpret_cast<const char*>(labels), sizeof(labels));
  }
  float data[] = {1, 0, 0, 0, 1, 0};
  void* out = create4DTensor(0, 0, 2, 3, 1, 1);
  initTensorData(out, data, sizeof(data));
  RuntimeController c;
  CHECK_THROWS_WITH_AS(c.invoke(out, "labels.bin", 0, 3),
                       "labels.bin: batch [0, 3) is outside its 2 labels",
                       UserError);
  CHECK_THROWS_WITH_AS(c.invoke(out, "labels.bin", 0, 2),
                       "labels.bin: label 7 at index 1 is out of range; the "
                       "model has 3 classes",
                       UserError);
  RuntimeController fresh;
  CHECK_THROWS_WITH_AS(fresh.invoke(out, "missing.bin", 0, 2),
                       "missing.bin: cannot open labels file: No such file "
                       "or directory",
                       UserError);
  freeTensor(out);
}
