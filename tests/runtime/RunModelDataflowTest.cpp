// RunModelDataflowTest.cpp - runModel driving a real HPVM-C dataflow graph
// (conv+add+relu, mul, softmax with node ids): configuration knobs reach the
// executor, profiles and traces hold its op records, and a configuration
// that does not match the program is reported cleanly.
#include "hpvm_rt/RunModel.h"

#include "hpvm.h"
#include "tensor_runtime.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;

void convNode(void* x, size_t xb, void* w, size_t wb) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, x, w, 0);
  __hpvm__node_id(1);
  void* r = __hpvm__tensor_convolution(x, w, 1, 1, 1, 1);
  __hpvm__return(2, r, (size_t)0);
}

void biasNode(void* x, size_t xb, void* b, size_t bb) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, x, b, 0);
  __hpvm__node_id(2);
  void* r = __hpvm__tensor_add(x, b);
  __hpvm__return(2, r, (size_t)0);
}

void reluNode(void* x, size_t xb) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, x, 0);
  __hpvm__node_id(3);
  void* r = __hpvm__tensor_relu(x);
  __hpvm__return(2, r, (size_t)0);
}

void denseNode(void* x, size_t xb, void* w, size_t wb) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, x, w, 0);
  __hpvm__node_id(4);
  void* r = __hpvm__tensor_mul(x, w);
  __hpvm__return(2, r, (size_t)0);
}

void softmaxNode(void* x, size_t xb) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, x, 0);
  __hpvm__node_id(5);
  void* r = __hpvm__tensor_softmax(x);
  __hpvm__return(2, r, (size_t)0);
}

void root(void* input, size_t inputBytes, void* w, size_t wBytes, void* b,
          size_t bBytes, void* fc, size_t fcBytes) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(4, input, w, b, fc, 0);
  void* conv = __hpvm__createNodeND(0, convNode);
  __hpvm__bindIn(conv, 0, 0, 0);
  __hpvm__bindIn(conv, 1, 1, 0);
  __hpvm__bindIn(conv, 2, 2, 0);
  __hpvm__bindIn(conv, 3, 3, 0);
  void* bias = __hpvm__createNodeND(0, biasNode);
  __hpvm__edge(conv, bias, 1, 0, 0, 0);
  __hpvm__edge(conv, bias, 1, 1, 1, 0);
  __hpvm__bindIn(bias, 4, 2, 0);
  __hpvm__bindIn(bias, 5, 3, 0);
  void* relu = __hpvm__createNodeND(0, reluNode);
  __hpvm__edge(bias, relu, 1, 0, 0, 0);
  __hpvm__edge(bias, relu, 1, 1, 1, 0);
  void* dense = __hpvm__createNodeND(0, denseNode);
  __hpvm__edge(relu, dense, 1, 0, 0, 0);
  __hpvm__edge(relu, dense, 1, 1, 1, 0);
  __hpvm__bindIn(dense, 6, 2, 0);
  __hpvm__bindIn(dense, 7, 3, 0);
  void* softmax = __hpvm__createNodeND(0, softmaxNode);
  __hpvm__edge(dense, softmax, 1, 0, 0, 0);
  __hpvm__edge(dense, softmax, 1, 1, 1, 0);
  __hpvm__bindOut(softmax, 0, 0, 0);
  __hpvm__bindOut(softmax, 1, 1, 0);
}

struct __attribute__((__packed__)) RootIn {
  void* input;
  size_t inputBytes;
  void* w;
  size_t wBytes;
  void* b;
  size_t bBytes;
  void* fc;
  size_t fcBytes;
  struct {
    void* tensor;
    size_t bytes;
  } r;
};

void* tensorOf(const std::vector<float>& data, size_t n, size_t c, size_t h,
               size_t w) {
  void* t = create4DTensor(0, 0, n, c, h, w);
  initTensorData(t, const_cast<float*>(data.data()),
                 data.size() * sizeof(float));
  return t;
}

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * static_cast<float>(static_cast<int>(i % 7) - 3);
  return v;
}

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void writeText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

/// A 2x4x4 -> 3-class network over 6 test images, in a fresh working
/// directory.
struct Network {
  fs::path dir, oldCwd;
  std::string dirText;
  hpvm_rt::ModelInfo info{};
  RootIn args{};

  Network() {
    char tmpl[] = "/tmp/hpvm_rt_dataflow_XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    dirText = dir.string() + "/";
    oldCwd = fs::current_path();
    fs::current_path(dir);
    std::vector<float> images = ramp(6 * 2 * 4 * 4, 0.25f);
    std::vector<int32_t> labels = {0, 1, 2, 0, 1, 2};
    std::ofstream(dirText + "test_input.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(images.data()),
               static_cast<std::streamsize>(images.size() * 4));
    std::ofstream(dirText + "test_labels.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(labels.data()), 6 * 4);
    info.name = "net";
    info.modelDir = dirText.c_str();
    info.channels = 2;
    info.height = 4;
    info.width = 4;
    info.numClasses = 3;
    info.tuneCount = 0;
    info.testCount = 6;
    info.defaultBatch = 4;
    info.defaultConfig = "";
    info.numOps = 5;
    info.inspect = 0;
  }
  ~Network() {
    fs::current_path(oldCwd);
    fs::remove_all(dir);
  }

  int run(std::vector<std::string> extra, std::string* err = nullptr) {
    std::vector<std::string> all = {"net", "-q"};
    all.insert(all.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& a : all)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    auto load = [this](const std::string&) {
      args.w = tensorOf(ramp(3 * 2 * 3 * 3, 0.1f), 3, 2, 3, 3);
      args.b = tensorOf({0.1f, -0.2f, 0.3f}, 1, 3, 1, 1);
      args.fc = tensorOf(ramp(48 * 3, 0.05f), 1, 1, 48, 3);
    };
    auto runBatch = [this](void* input) -> void* {
      args.input = input;
      void* dfg = __hpvm__launch(0, root, (void*)&args);
      __hpvm__wait(dfg);
      return args.r.tensor;
    };
    std::fflush(stderr);
    int saved = dup(2);
    int file = open("stderr.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(file, 2);
    close(file);
    int code = hpvm_rt::runModel(static_cast<int>(all.size()), argv.data(),
                                 info, load, runBatch);
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
    if (err)
      *err = readText("stderr.txt");
    return code;
  }
};

} // namespace

TEST_CASE("Runtime: runModel profiles a dataflow graph under a "
          "configuration") {
  Network net;
  writeText("conf.txt", "0.0\n+++++\nconf1 2.0 1.0 90.0 1.0\n"
                        "1 cpu conv perf 123 add fp32 11 relu fp32 11\n"
                        "4 cpu mul fp32 11\n5 cpu softmax fp32 11\n-----\n");
  REQUIRE(net.run({"-c", "conf.txt", "--profile", "p.json", "--trace", "t.json",
                   "--log-calls", "l.json"}) == 0);
  auto p = nlohmann::json::parse(readText("p.json"));
  CHECK(p["launches"] == 2);
  REQUIRE(p["fused_nodes"].size() == 3);
  REQUIRE(p["ops"].size() == 5);
  std::map<std::string, nlohmann::json> ops;
  for (const auto& op : p["ops"])
    ops[op["op"].get<std::string>()] = op;
  CHECK(ops["conv"]["knob"] == "perf 123");
  CHECK(ops["conv"]["op_id"] == 1);
  CHECK(ops["conv"]["fused_node"] == 1);
  CHECK(ops["relu"]["fused_node"] == 1);
  CHECK(ops["mul"]["fused_node"] == 2);
  CHECK(ops["softmax"]["fused_node"] == 3);
  CHECK(ops["conv"]["calls"] == 2);
  CHECK(ops["conv"]["flops"].get<double>() > 0);
  for (const auto& node : p["fused_nodes"])
    if (node["fused_node"] == 1)
      CHECK(node["ops"] == "conv+add+relu");
  auto t = nlohmann::json::parse(readText("t.json"));
  CHECK(t["traceEvents"].size() == 1 + 2 * 5);
  auto l = nlohmann::json::parse(readText("l.json"));
  REQUIRE(l.size() == 10);
  CHECK(l[5]["launch"] == 1);
  CHECK(l[5]["op"] == "conv");
  CHECK(l[5]["inputs"][0] == nlohmann::json::parse("[2,2,4,4]"));
  CHECK(l[5]["output"] == nlohmann::json::parse("[2,3,4,4]"));
  std::string profile = readText("profile_info.txt");
  CHECK(profile.find("tensorConvolution(perf) ") != std::string::npos);
  CHECK(profile.find("Iteration 1\n") != std::string::npos);
}

TEST_CASE("Runtime: runModel reports a configuration that does not match "
          "the graph") {
  Network net;
  writeText("conf.txt", "0.0\n+++++\nconf1 1 1 90 0\n"
                        "1 cpu conv fp32 11 add fp32 11\n2 cpu relu fp32 11\n"
                        "3 cpu mul fp32 11\n4 cpu softmax fp32 11\n-----\n");
  std::string err;
  CHECK(net.run({"-c", "conf.txt"}, &err) == 1);
  CHECK(err.rfind("net: error: conf.txt:4:7: ", 0) == 0);
  CHECK(err.find("fused node 1") != std::string::npos);
  CHECK_FALSE(fs::exists("final_accuracy"));
}
