// CodegenTestGraphs.h - small lowered graphs built by hand with the Graph API
// (HPVM kinds directly), plus file helpers, for the codegen tests.
#ifndef TORCH2HPVM_TESTS_FRONTEND_CODEGENTESTGRAPHS_H
#define TORCH2HPVM_TESTS_FRONTEND_CODEGENTESTGRAPHS_H

#include "codegen/HpvmCodegen.h"
#include "ir/Graph.h"
#include "support/Diagnostics.h"
#include "toolchain/Toolchain.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace hpvm::fe::testing {

/// A float32 constant with values 0.5, 1.0, 1.5, ... in shape \p dims.
inline std::shared_ptr<TensorData> rampTensor(std::vector<int64_t> dims) {
  auto t = std::make_shared<TensorData>();
  t->dtype = DataType::Float;
  t->dims = std::move(dims);
  int64_t n = t->numElements();
  t->bytes.resize(static_cast<size_t>(n) * 4);
  for (int64_t i = 0; i < n; ++i) {
    float v = 0.5f * static_cast<float>(i + 1);
    std::memcpy(t->bytes.data() + 4 * i, &v, 4);
  }
  return t;
}

/// Names of the tiny net's values and nodes; tests replace them with hostile
/// strings.
struct TinyNetNames {
  std::string input = "input";
  std::string convWeight = "conv1.weight";
  std::string convBias = "conv1.bias";
  std::string fcWeight = "fc.weight";
  std::string fcBias = "fc.bias";
  std::string convNode = "Conv_0";
  std::string tanhNode = "Tanh_1";
  std::string poolNode = "MaxPool_2";
  std::string gemmNode = "Gemm_4";
  std::string softmaxNode = "Softmax_5";
};

/// A lowered LeNet-shaped graph: input ?x1x8x8, conv 3x3 pad 1 -> 2
/// channels, bias add, tanh, maxpool 2, mul (32 -> 10), bias add, softmax.
inline std::unique_ptr<Graph> makeTinyNet(const TinyNetNames& names = {}) {
  auto g = std::make_unique<Graph>();
  g->source.path = "tiny.onnx";
  g->source.sha256 = std::string(64, 'a');
  g->source.producer = "handmade 1.0";
  g->source.opset = 13;
  g->input = g->addValue(names.input, DataType::Float, {-1, 1, 8, 8});
  Value* w1 = g->addConstant(names.convWeight, rampTensor({2, 1, 3, 3}), 0);
  Value* b1 = g->addConstant(names.convBias, rampTensor({1, 2, 1, 1}), 1);
  Value* w2 = g->addConstant(names.fcWeight, rampTensor({1, 1, 32, 10}), 2);
  Value* b2 = g->addConstant(names.fcBias, rampTensor({1, 10, 1, 1}), 3);
  Origin conv{names.convNode, "Conv", 0};
  Origin tanh{names.tanhNode, "Tanh", 1};
  Origin pool{names.poolNode, "MaxPool", 2};
  Origin gemm{names.gemmNode, "Gemm", 4};
  Origin flatten{"Flatten_3", "Flatten", 3};
  Origin softmax{names.softmaxNode, "Softmax", 5};
  auto val = [&](const char* n, std::vector<int64_t> s) {
    return g->addValue(n, DataType::Float, std::move(s));
  };
  Node* c =
      g->addNode(OpKind::Conv, {g->input, w1}, val("c", {-1, 2, 8, 8}), {conv});
  c->scalars = {Scalar::integer(1), Scalar::integer(1), Scalar::integer(1),
                Scalar::integer(1)};
  Node* a =
      g->addNode(OpKind::Add, {c->output, b1}, val("a", {-1, 2, 8, 8}), {conv});
  Node* t =
      g->addNode(OpKind::Tanh, {a->output}, val("t", {-1, 2, 8, 8}), {tanh});
  Node* p =
      g->addNode(OpKind::MaxPool, {t->output}, val("p", {-1, 2, 4, 4}), {pool});
  p->scalars = {Scalar::integer(2), Scalar::integer(2), Scalar::integer(0),
                Scalar::integer(0), Scalar::integer(2), Scalar::integer(2)};
  Node* m = g->addNode(OpKind::Mul, {p->output, w2}, val("m", {-1, 10, 1, 1}),
                       {flatten, gemm});
  Node* a2 = g->addNode(OpKind::Add, {m->output, b2}, val("a2", {-1, 10, 1, 1}),
                        {gemm});
  Node* s = g->addNode(OpKind::Softmax, {a2->output}, val("s", {-1, 10, 1, 1}),
                       {softmax});
  g->setOutput(s->output);
  return g;
}

/// A residual block: conv+add+relu, conv+add, residual add, relu, batchnorm,
/// clipped relu, avgpool - every fusion case and scalar kind.
inline std::unique_ptr<Graph> makeResidualNet() {
  auto g = std::make_unique<Graph>();
  g->source.path = "residual.onnx";
  g->source.sha256 = std::string(64, 'b');
  g->source.producer = "handmade 1.0";
  g->source.opset = 13;
  g->input = g->addValue("x", DataType::Float, {1, 2, 4, 4});
  Value* w1 = g->addConstant("w1", rampTensor({2, 2, 3, 3}), 0);
  Value* b1 = g->addConstant("b1", rampTensor({1, 2, 1, 1}), 1);
  Value* w2 = g->addConstant("w2", rampTensor({2, 1, 3, 3}), 2);
  Value* b2 = g->addConstant("b2", rampTensor({1, 2, 1, 1}), 3);
  Value* gamma = g->addConstant("bn.gamma", rampTensor({1, 2, 1, 1}), 4);
  Value* beta = g->addConstant("bn.beta", rampTensor({1, 2, 1, 1}), 5);
  Value* mean = g->addConstant("bn.mean", rampTensor({1, 2, 1, 1}), 6);
  Value* var = g->addConstant("bn.var", rampTensor({1, 2, 1, 1}), 7);
  auto val = [&](const char* n, std::vector<int64_t> s) {
    return g->addValue(n, DataType::Float, std::move(s));
  };
  std::vector<int64_t> s4 = {1, 2, 4, 4};
  Origin o{"", "Conv", 0};
  Node* c1 = g->addNode(OpKind::Conv, {g->input, w1}, val("c1", s4), {o});
  c1->scalars = {Scalar::integer(1), Scalar::integer(1), Scalar::integer(1),
                 Scalar::integer(1)};
  Node* a1 = g->addNode(OpKind::Add, {c1->output, b1}, val("a1", s4), {o});
  Node* r1 = g->addNode(OpKind::Relu, {a1->output}, val("r1", s4),
                        {{"relu1", "Relu", 1}});
  Node* c2 = g->addNode(OpKind::GroupConv, {r1->output, w2}, val("c2", s4),
                        {{"dw", "Conv", 2}});
  c2->scalars = {Scalar::integer(1), Scalar::integer(1), Scalar::integer(1),
                 Scalar::integer(1), Scalar::integer(1), Scalar::integer(2)};
  Node* a2 = g->addNode(OpKind::Add, {c2->output, b2}, val("a2", s4),
                        {{"dw", "Conv", 2}});
  Node* res = g->addNode(OpKind::Add, {a2->output, r1->output}, val("res", s4),
                         {{"add", "Add", 3}});
  Node* bn =
      g->addNode(OpKind::BatchNorm, {res->output, gamma, beta, mean, var},
                 val("bn", s4), {{"bn", "BatchNormalization", 4}});
  bn->scalars = {Scalar::real(1e-05)};
  Node* clip = g->addNode(OpKind::ClippedRelu, {bn->output}, val("clip", s4),
                          {{"relu6", "Clip", 5}});
  clip->scalars = {Scalar::real(0.0), Scalar::real(6.0)};
  Node* pool =
      g->addNode(OpKind::AvgPool, {clip->output}, val("pool", {1, 2, 1, 1}),
                 {{"gap", "GlobalAveragePool", 6}});
  pool->scalars = {Scalar::integer(4), Scalar::integer(4), Scalar::integer(0),
                   Scalar::integer(0), Scalar::integer(1), Scalar::integer(1)};
  g->setOutput(pool->output);
  return g;
}

/// Codegen options with fixed values, so that goldens are stable.
inline CodegenOptions testCodegenOptions(Target target = Target::HpvmTensor) {
  CodegenOptions o;
  o.target = target;
  o.toolVersion = "0.0.0-test";
  o.modelFile = "tiny.onnx";
  o.modelSha256 = std::string(64, 'a');
  o.producer = "handmade 1.0";
  o.opset = 13;
  o.modelName = "tiny";
  o.binaryName = "tiny";
  o.tuneCount = 100;
  o.testCount = 200;
  o.batchSize = 0;
  o.templateDir = std::string(HPVM_SOURCE_DIR) + "/templates";
  return o;
}

/// The contents of \p path ("" if missing).
inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Writes \p bytes to \p path.
inline void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

/// Removes the scratch directories of this test process when it exits
/// (set HPVM_KEEP_TEST_DIRS=1 to keep them for a post-mortem).
struct ScratchRegistry {
  std::vector<std::string> dirs;
  ~ScratchRegistry() {
    const char* keep = std::getenv("HPVM_KEEP_TEST_DIRS");
    if (keep && std::string(keep) == "1")
      return;
    std::error_code ec;
    for (const std::string& d : dirs)
      std::filesystem::remove_all(d, ec);
  }
};

inline ScratchRegistry& scratchRegistry() {
  static ScratchRegistry registry;
  return registry;
}

/// A fresh empty scratch directory, removed when the test process exits.
inline std::string scratchDir(const std::string& name) {
  std::filesystem::path p =
      std::filesystem::temp_directory_path() /
      ("torch2hpvm-test-" + std::to_string(::getpid()) + "-" + name);
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  scratchRegistry().dirs.push_back(p.string());
  return p.string();
}

/// A unified diff (3 lines of context) from \p expected to \p actual.
inline std::string unifiedDiff(const std::string& expected,
                               const std::string& actual,
                               const std::string& name) {
  auto split = [](const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
      lines.push_back(line);
    return lines;
  };
  std::vector<std::string> a = split(expected), b = split(actual);
  size_t n = a.size(), m = b.size();
  // Longest common subsequence table, from the end.
  std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1
                               : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  // Edit script: ' ', '-', '+' with line indices.
  struct Edit {
    char op;
    size_t ai, bi;
  };
  std::vector<Edit> edits;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j])
      edits.push_back({' ', i++, j++});
    else if (j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]))
      edits.push_back({'+', i, j++});
    else
      edits.push_back({'-', i++, j});
  }
  std::string out = "--- " + name + " (golden)\n+++ " + name + " (actual)\n";
  for (size_t k = 0; k < edits.size();) {
    if (edits[k].op == ' ') {
      ++k;
      continue;
    }
    size_t start = k >= 3 ? k - 3 : 0;
    size_t end = k;
    // Extend the hunk while changes are within 6 lines of each other.
    for (size_t q = k; q < edits.size(); ++q)
      if (edits[q].op != ' ')
        end = q;
      else if (q - end > 6)
        break;
    end = std::min(edits.size(), end + 4);
    out += "@@ -" + std::to_string(edits[start].ai + 1) + " +" +
           std::to_string(edits[start].bi + 1) + " @@\n";
    for (size_t q = start; q < end; ++q)
      out += std::string(1, edits[q].op) +
             (edits[q].op == '+' ? b[edits[q].bi] : a[edits[q].ai]) + "\n";
    k = end;
  }
  return out;
}

/// Compares \p actual with golden file \p name under test_frontend/golden/;
/// with HPVM_UPDATE_GOLDEN=1 in the environment rewrites it instead.
/// Returns "" when equal, else a unified diff.
inline std::string checkGolden(const std::string& name,
                               const std::string& actual) {
  std::string path =
      std::string(HPVM_SOURCE_DIR) + "/test_frontend/golden/" + name;
  const char* update = std::getenv("HPVM_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    writeFile(path, actual);
    return "";
  }
  if (!std::filesystem::exists(path))
    return "golden file " + path + " is missing (run scripts/update_golden.sh)";
  std::string expected = readFile(path);
  if (expected == actual)
    return "";
  return unifiedDiff(expected, actual, name) +
         "(run scripts/update_golden.sh if the change is intended)";
}

/// Compiles \p source with clang++ -fsyntax-only -Wall -Werror against
/// hpvm_rt's headers; returns "" on success, else the failure report.
inline std::string syntaxCheck(const std::string& source,
                               const std::string& name) {
  std::string dir = scratchDir("syntax-" + name);
  writeFile(dir + "/hpvm_c.cpp", source);
  std::string clang = findExecutable("clang++");
  if (clang.empty())
    return "clang++ not found on PATH";
  try {
    runLogged({clang, "-fsyntax-only", "-std=c++17", "-Wall", "-Werror",
               "-I" + std::string(HPVM_SOURCE_DIR) + "/hpvm_rt/include",
               dir + "/hpvm_c.cpp"},
              "", dir + "/log", nullptr);
  } catch (const UserError& e) {
    return e.what();
  }
  std::filesystem::remove_all(dir);
  return "";
}

} // namespace hpvm::fe::testing

#endif // TORCH2HPVM_TESTS_FRONTEND_CODEGENTESTGRAPHS_H
