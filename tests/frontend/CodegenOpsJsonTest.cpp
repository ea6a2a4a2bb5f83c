// CodegenOpsJsonTest.cpp - ops.json (op_cost, op_knobs, knobs, paths,
// fused_nodes) and HPVM's fusion groups.
#include "CodegenTestGraphs.h"
#include "codegen/OpsJson.h"
#include "ir/OpTable.h"

#include <doctest/doctest.h>

using namespace hpvm::fe;
using namespace hpvm::fe::testing;

namespace {

std::vector<std::vector<int>> groupsOf(const ProgramLayout& layout) {
  std::vector<std::vector<int>> out;
  for (const FusedNode& g : fuseLikeHpvm(layout)) {
    std::vector<int> ids = {g.firstId};
    for (int i : g.opIndices)
      ids.push_back(i);
    out.push_back(ids);
  }
  return out;
}

} // namespace

TEST_CASE("Codegen: ops.json of the tiny net has exact FLOPs and knobs") {
  auto g = makeTinyNet();
  ProgramLayout layout = layoutProgram(*g, "tiny.onnx");
  OpsJsonPaths paths;
  paths.configFile = "/out/tuner_confs.txt";
  nlohmann::ordered_json j = makeOpsJson(layout, paths);

  // conv: 2x8x8 outputs x 2 FLOPs x (1*3*3); add/tanh: one per element;
  // maxpool: 2x4x4 x 2*2; mul: 10 x 2 x 32; softmax: 4 per element.
  nlohmann::ordered_json cost = {{"convolution_0", 2304}, {"add_1", 128},
                                 {"tanh_2", 128},         {"maxpool_3", 128},
                                 {"linear_4", 640},       {"add_5", 10},
                                 {"softmax_6", 40}};
  CHECK(j["op_cost"] == cost);
  CHECK(j["op_knobs"]["add_1"] == nlohmann::ordered_json({"11", "12"}));
  CHECK(j["op_knobs"]["linear_4"] ==
        nlohmann::ordered_json({"11", "12", "301", "311", "312"}));
  CHECK(j["op_knobs"]["convolution_0"].size() ==
        2 + 18 + 18 + 9 + 9 + 1 + 2 + 18 + 18 + 9 + 9);
  CHECK(j["knobs"]["11"] == nlohmann::ordered_json({{"speedup", 1.0},
                                                    {"devices", {"cpu", "gpu"}},
                                                    {"baseline_priority", 1}}));
  CHECK(j["knobs"]["12"]["baseline_priority"] == 0);
  CHECK_FALSE(j["knobs"]["121"].contains("baseline_priority"));
  CHECK(j["config_file"] == "/out/tuner_confs.txt");
  CHECK_FALSE(j.contains("fifo_path_r"));
  CHECK(j["fused_nodes"] ==
        nlohmann::ordered_json::parse(
            R"([{"id":1,"ops":["convolution_0","add_1","tanh_2","maxpool_3"]},
                {"id":5,"ops":["linear_4","add_5"]},
                {"id":7,"ops":["softmax_6"]}])"));
  // The whole file, byte for byte.
  std::string diff = checkGolden("tiny_ops.json", j.dump(2) + "\n");
  CHECK_MESSAGE(diff.empty(), diff);
}

TEST_CASE("Codegen: ops.json of the inspect target names the tuner paths") {
  auto g = makeTinyNet();
  ProgramLayout layout = layoutProgram(*g, "tiny.onnx");
  OpsJsonPaths paths;
  paths.tuneLabelsPath = "/o/tune_labels.bin";
  paths.confPath = "/o/tuner_confs.txt";
  paths.fifoPathR = "/o/hpvm_fifo_r";
  paths.fifoPathW = "/o/hpvm_fifo_w";
  nlohmann::ordered_json j = makeOpsJson(layout, paths);
  CHECK_FALSE(j.contains("config_file"));
  CHECK(j["tune_labels_path"] == "/o/tune_labels.bin");
  CHECK(j["conf_path"] == "/o/tuner_confs.txt");
  CHECK(j["fifo_path_r"] == "/o/hpvm_fifo_r");
  CHECK(j["fifo_path_w"] == "/o/hpvm_fifo_w");
}

TEST_CASE("Codegen: fusion follows HPVM's rules on a residual block") {
  auto g = makeResidualNet();
  ProgramLayout layout = layoutProgram(*g, "residual.onnx");
  // conv+add+relu fuse; relu's output has two users, so nothing follows it;
  // group conv, the residual add, batchnorm, clipped relu and the pool are
  // alone; the group conv's bias add is not fused (only conv and mul start
  // a group).
  CHECK(groupsOf(layout) ==
        std::vector<std::vector<int>>{
            {1, 0, 1, 2}, {4, 3}, {5, 4}, {6, 5}, {7, 6}, {8, 7}, {9, 8}});
}

TEST_CASE("Codegen: conv+add+pool fuses without an activation") {
  auto g = makeTinyNet();
  // Drop the tanh: the pool reads the bias add directly.
  Node* tanh = g->nodes()[2].get();
  Node* add = g->nodes()[1].get();
  g->replaceAllUses(tanh->output, add->output);
  g->eraseNode(tanh);
  ProgramLayout layout = layoutProgram(*g, "tiny.onnx");
  CHECK(groupsOf(layout) ==
        std::vector<std::vector<int>>{{1, 0, 1, 2}, {4, 3, 4}, {6, 5}});
}
