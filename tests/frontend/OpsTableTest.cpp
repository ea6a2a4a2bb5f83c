// OpsTableTest.cpp - the operator table printed by --list-ops: derived from
// Ops.def, and README.rst's copy of it is current.
#include "CodegenTestGraphs.h"
#include "codegen/OpsJson.h"
#include "ir/OpTable.h"

#include <doctest/doctest.h>

#include <set>
#include <sstream>

using namespace hpvm::fe;
using namespace hpvm::fe::testing;

namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    out.push_back(line);
  return out;
}

} // namespace

TEST_CASE("Ops: the rst table has one row per ONNX operator") {
  std::string rst = opsTableRst();
  for (const OnnxOpDesc& row : onnxOps())
    CHECK(rst.find("   * - ``" + std::string(row.onnxName) + "``\n") !=
          std::string::npos);
  CHECK(rst.find("   * - ``Conv``\n"
                 "     - 1\n"
                 "     - conv | group_conv | dilated_conv [+ add]\n"
                 "     - ``__hpvm__tensor_convolution``, "
                 "``__hpvm__tensor_group_convolution``, "
                 "``__hpvm_rt__tensor_dilated_convolution`` (hpvm_rt only), "
                 "``__hpvm__tensor_add``\n"
                 "     - ``conv``, ``group_conv``, ``dilated_conv``, ``add``\n"
                 "     - 11-12, 121-138, 151-168, 231-239, 261-269, 301, "
                 "311-312, 321-338, 421-438, 531-539, 631-639\n") !=
        std::string::npos);
  // An ONNX op that becomes either of two hpvm_rt extension ops.
  CHECK(rst.find("   * - ``HardSigmoid``\n"
                 "     - 1\n"
                 "     - hard_sigmoid | hard_swish\n"
                 "     - ``__hpvm_rt__tensor_hard_sigmoid`` (hpvm_rt only), "
                 "``__hpvm_rt__tensor_hard_swish`` (hpvm_rt only)\n"
                 "     - ``hard_sigmoid``, ``hard_swish``\n"
                 "     - 11-12\n") != std::string::npos);
  CHECK(rst.find("   * - ``Identity``\n"
                 "     - 1\n"
                 "     - (removed)\n"
                 "     - -\n"
                 "     - -\n"
                 "     - -\n") != std::string::npos);
}

TEST_CASE("Ops: every op's ScalarNames name each scalar operand once") {
  for (const HpvmOpDesc& d : hpvmOps()) {
    INFO("op " << d.confName);
    std::vector<std::string> labels = hpvm::rt::scalarLabels(*d.facts);
    CHECK(static_cast<int>(labels.size()) == d.facts->scalarArgs);
    CHECK((labels.empty() || !labels[0].empty()));
  }
  CHECK(hpvm::rt::scalarLabels(*hpvmOpDesc(OpKind::MaxPoolPads).facts) ==
        std::vector<std::string>{"window", "", "pads", "", "", "", "strides",
                                 ""});
}

TEST_CASE("Ops: configuration names and ops.json types are one per op") {
  std::set<std::string> conf, json;
  for (const HpvmOpDesc& d : hpvmOps()) {
    INFO("op " << d.confName);
    CHECK(conf.insert(d.confName).second);
    CHECK(json.insert(d.jsonType).second);
  }
}

TEST_CASE("Ops: the json table lists every op and knob") {
  nlohmann::ordered_json j = opsTableJson();
  CHECK(j["onnx_ops"].size() == onnxOps().size());
  CHECK(j["hpvm_ops"].size() == hpvmOps().size());
  CHECK(j["knobs"].size() == knobTable().size());
  CHECK(j["onnx_ops"][0]["onnx_op"] == "Conv");
  CHECK(j["onnx_ops"][0]["hpvm_ops"] ==
        nlohmann::ordered_json({"conv", "group_conv", "dilated_conv", "add"}));
  // hard_sigmoid: an hpvm_rt extension whose alpha and beta are scalars.
  bool found = false;
  for (const auto& op : j["hpvm_ops"])
    if (op["config_name"] == "hard_sigmoid") {
      found = true;
      CHECK(op["in_hpvm"] == false);
      CHECK(op["intrinsic"] == "__hpvm_rt__tensor_hard_sigmoid");
      CHECK(op["scalar_args"] == 2);
    }
  CHECK(found);
}

TEST_CASE("Ops: README.rst's operator table is current") {
  const std::string begin = ".. BEGIN GENERATED OPERATOR TABLE";
  const std::string end = ".. END GENERATED OPERATOR TABLE";
  std::string path = std::string(HPVM_SOURCE_DIR) + "/README.rst";
  std::vector<std::string> readme = lines(readFile(path));
  auto b = std::find(readme.begin(), readme.end(), begin);
  auto e = std::find(b, readme.end(), end);
  if (b == readme.end() || e == readme.end())
    FAIL(path << " lacks the lines '" << begin << "' and '" << end
              << "' around the operator table");
  std::vector<std::string> actual(b + 1, e);
  std::vector<std::string> expected = {""};
  for (const std::string& l : lines(opsTableRst()))
    expected.push_back(l);
  expected.push_back("");
  CHECK_MESSAGE(actual == expected,
                path << "'s operator table differs from Ops.def; run "
                        "scripts/update_readme_ops.py");
}
