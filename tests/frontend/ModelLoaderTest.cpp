// ModelLoaderTest.cpp - loading .onnx/.onnxtxt files into the ONNX-level
// IR: initializer encodings, external data, inputs, opset conversion.
#include "onnx/ModelLoader.h"
#include "LowerToHpvm.h"
#include "ir/Printer.h"
#include "onnx/Sha256.h"
#include "support/Diagnostics.h"

#include <onnx/onnx_pb.h>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace hpvm::fe;

namespace {

std::string fixture(const std::string& name) {
  return std::string(HPVM_SOURCE_DIR) + "/test_frontend/models/" + name +
         ".onnxtxt";
}

/// A fresh temporary directory, removed with its files at scope exit.
struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/model_loader_test_XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    for (const std::string& f : files)
      std::remove((path + "/" + f).c_str());
    rmdir(path.c_str());
  }
  std::string file(const std::string& name) {
    files.push_back(name);
    return path + "/" + name;
  }
  std::string path;
  std::vector<std::string> files;
};

/// A model input -> Conv(w, b) -> output, input 1x2x3x3, w 1x2x1x1.
onnx::ModelProto convModel(const std::string& batchParam = "") {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.set_producer_name("loader-test");
  m.set_producer_version("1.0");
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("conv_graph");
  auto dims = [&](onnx::ValueInfoProto* v, std::vector<int64_t> d) {
    v->mutable_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto::FLOAT);
    auto* shape = v->mutable_type()->mutable_tensor_type()->mutable_shape();
    for (size_t i = 0; i < d.size(); ++i) {
      auto* dim = shape->add_dim();
      if (i == 0 && !batchParam.empty())
        dim->set_dim_param(batchParam);
      else
        dim->set_dim_value(d[i]);
    }
  };
  auto* in = g->add_input();
  in->set_name("input");
  dims(in, {1, 2, 3, 3});
  auto* out = g->add_output();
  out->set_name("y");
  dims(out, {1, 1, 3, 3});
  auto* n = g->add_node();
  n->set_op_type("Conv");
  n->set_name("conv");
  n->add_input("input");
  n->add_input("w");
  n->add_input("b");
  n->add_output("y");
  // w in raw_data, b in float_data.
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {1, 2, 1, 1})
    w->add_dims(d);
  float wv[2] = {0.5f, -2.0f};
  w->set_raw_data(std::string(reinterpret_cast<const char*>(wv), 8));
  auto* b = g->add_initializer();
  b->set_name("b");
  b->set_data_type(onnx::TensorProto::FLOAT);
  b->add_dims(1);
  b->add_float_data(0.25f);
  return m;
}

void writeBinary(const onnx::ModelProto& m, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  REQUIRE(m.SerializeToOstream(&out));
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string loadError(const std::string& path, const LoadOptions& opts = {}) {
  try {
    loadModel(path, opts);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("ModelLoader: a text fixture becomes ONNX-level nodes") {
  std::string path = fixture("Conv");
  std::unique_ptr<Graph> g = loadModel(path, {});
  CHECK(g->source.path == path);
  CHECK(g->source.sha256 == sha256Hex(readAll(path)));
  CHECK(g->source.producer == "make_test_models.py");
  CHECK(g->source.opset == 13);
  CHECK(g->source.graphName == "Conv");
  REQUIRE(g->nodes().size() == 1);
  const Node& conv = *g->nodes()[0];
  CHECK(conv.kind == OpKind::OnnxConv);
  CHECK(conv.origins.front().name == "conv1");
  CHECK(conv.origins.front().opType == "Conv");
  CHECK(conv.origins.front().index == 0);
  CHECK(std::get<std::vector<int64_t>>(conv.attrs.at("strides")) ==
        std::vector<int64_t>{2, 2});
  CHECK(g->input->name == "input");
  CHECK(g->input->shape == std::vector<int64_t>{1, 2, 6, 6});
  CHECK(conv.inputs[1]->isConstant());
  CHECK(conv.inputs[1]->initializerIndex == 0);
  CHECK(conv.inputs[1]->constant->dims == std::vector<int64_t>{3, 2, 3, 3});
  CHECK(g->output0() == conv.output);
  CHECK(g->output0()->shape == std::vector<int64_t>{1, 3, 3, 3});
}

TEST_CASE("ModelLoader: binary models with raw_data and typed initializers") {
  TempDir dir;
  std::string path = dir.file("conv.onnx");
  writeBinary(convModel(), path);
  std::unique_ptr<Graph> g = loadModel(path, {});
  const Node& conv = *g->nodes()[0];
  CHECK(conv.inputs[1]->constant->toFloats() ==
        std::vector<float>{0.5f, -2.0f});
  CHECK(conv.inputs[2]->constant->toFloats() == std::vector<float>{0.25f});
  CHECK(g->source.producer == "loader-test 1.0");
  lowerToHpvm(*g);
  CHECK(dumpIr(*g) ==
        "%1 = Conv(%input: 1x2x3x3, %w: 1x2x1x1) -> 1x1x3x3  [pads 0 0 "
        "strides 1 1]  # conv\n"
        "%2 = Add(%1: 1x1x3x3, %b: 1x1x1x1) -> 1x1x3x3  # conv\n"
        "return %2: 1x1x3x3\n");
}

TEST_CASE("ModelLoader: float16 and bfloat16 initializers are read exactly, "
          "from raw_data and from int32_data") {
  // Bits of 1, -2.5, 65504 (the largest half), 2^-24 (the smallest
  // subnormal), -0, infinity; of bfloat16 1, -2.5, 2^-133 (subnormal),
  // 3.389531e38 (the largest).
  const std::vector<uint16_t> half = {0x3c00, 0xc100, 0x7bff,
                                      0x0001, 0x8000, 0x7c00};
  const std::vector<uint16_t> bf16 = {0x3f80, 0xc020, 0x0001, 0x7f7f};
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> halfWant = {
      1.f, -2.5f, 65504.f, std::ldexp(1.f, -24), -0.f, inf};
  const std::vector<float> bf16Want = {1.f, -2.5f, std::ldexp(1.f, -133),
                                       3.3895313892515355e38f};
  for (bool raw : {false, true}) {
    INFO((raw ? "raw_data" : "int32_data"));
    onnx::ModelProto m = convModel();
    onnx::GraphProto* g = m.mutable_graph();
    auto add = [&](const char* name, int type,
                   const std::vector<uint16_t>& bits) {
      auto* t = g->add_initializer();
      t->set_name(name);
      t->set_data_type(type);
      t->add_dims(int64_t(bits.size()));
      if (raw)
        t->set_raw_data(std::string(reinterpret_cast<const char*>(bits.data()),
                                    bits.size() * 2));
      else
        for (uint16_t b : bits)
          t->add_int32_data(b);
    };
    add("h", onnx::TensorProto::FLOAT16, half);
    add("bf", onnx::TensorProto::BFLOAT16, bf16);
    TempDir dir;
    std::string path = dir.file("halves.onnx");
    writeBinary(m, path);
    std::unique_ptr<Graph> graph = loadModel(path, {});
    const TensorData *h = nullptr, *bf = nullptr;
    for (const auto& v : graph->values()) {
      if (v->name == "h")
        h = v->constant.get();
      if (v->name == "bf")
        bf = v->constant.get();
    }
    REQUIRE(h != nullptr);
    REQUIRE(bf != nullptr);
    CHECK(h->dtype == DataType::Float16);
    CHECK(bf->dtype == DataType::BFloat16);
    const std::vector<float> hv = h->toFloats(), bv = bf->toFloats();
    CHECK(hv == halfWant);
    CHECK(std::signbit(hv[4]));
    CHECK(bv == bf16Want);
  }
}

TEST_CASE("ModelLoader: external data is read relative to the model") {
  TempDir dir;
  onnx::ModelProto m = convModel();
  onnx::TensorProto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_raw_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const char* k, const std::string& v) {
    auto* e = w->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", "weights.bin");
  add("offset", "4");
  add("length", "8");
  std::string path = dir.file("conv.onnx");
  writeBinary(m, path);
  float data[3] = {9.0f, 1.5f, 3.0f};
  std::ofstream(dir.file("weights.bin"), std::ios::binary)
      .write(reinterpret_cast<const char*>(data), sizeof(data));
  std::unique_ptr<Graph> g = loadModel(path, {});
  CHECK(g->nodes()[0]->inputs[1]->constant->toFloats() ==
        std::vector<float>{1.5f, 3.0f});

  std::remove((dir.path + "/weights.bin").c_str());
  CHECK(loadError(path).rfind(path + ": ", 0) == 0);
  CHECK(loadError(path).find("weights.bin") != std::string::npos);
}

TEST_CASE("ModelLoader: a symbolic batch dimension is read as 1, as in a "
          "batch-1 export (the program's batch is the run's)") {
  TempDir dir;
  std::string path = dir.file("conv.onnx");
  writeBinary(convModel("N"), path);
  std::unique_ptr<Graph> g = loadModel(path, {});
  CHECK(g->input->shape == std::vector<int64_t>{1, 2, 3, 3});
  lowerToHpvm(*g);
  CHECK(g->output0()->shape == std::vector<int64_t>{1, 1, 3, 3});
}

TEST_CASE("ModelLoader: a 3-D input is held as N x 1 x H x W, its "
          "Unsqueeze a Reshape that the passes alias away") {
  std::unique_ptr<Graph> g = loadModel(fixture("input_3d_unsqueeze"), {});
  CHECK(g->inputRank == 3);
  CHECK(g->input->name == "input");
  CHECK(g->input->shape == std::vector<int64_t>{1, 1, 6, 6});
  REQUIRE(g->nodes().size() == 3);
  const Node& reshape = *g->nodes()[0];
  CHECK(reshape.kind == OpKind::OnnxReshape);
  CHECK(reshape.origins.front().name == "unsqueeze");
  CHECK(reshape.inputs[0] == g->input);
  CHECK(reshape.inputs[1]->constant->toInts() ==
        std::vector<int64_t>{1, 1, 6, 6});
  CHECK(reshape.output->name == "u");
  lowerToHpvm(*g);
  // The reshape aliased: the conv reads the input.
  REQUIRE(!g->nodes().empty());
  CHECK(g->nodes()[0]->inputs[0] == g->input);
  CHECK(g->output0()->shape == std::vector<int64_t>{1, 2, 6, 6});
}

TEST_CASE("ModelLoader: models convert to a requested opset") {
  LoadOptions opts;
  opts.targetOpset = 13;
  std::unique_ptr<Graph> g = loadModel(fixture("lenet_small"), opts);
  CHECK(g->source.opset == 13);
  std::unique_ptr<Graph> original = loadModel(fixture("lenet_small"), {});
  CHECK(original->source.opset == 10);
  lowerToHpvm(*g);
  lowerToHpvm(*original);
  CHECK(dumpIr(*g) == dumpIr(*original));
  opts.targetOpset = 99;
  std::string path = fixture("lenet_small");
  CHECK(loadError(path, opts).rfind(path + ": cannot convert to opset 99", 0) ==
        0);
}

TEST_CASE("ModelLoader: unreadable files give the file and the reason") {
  TempDir dir;
  std::string text = dir.file("broken.onnxtxt");
  std::ofstream(text) << "ir_version: 7\ngraph { node { op_type: ";
  CHECK(loadError(text).rfind(text + ":2:", 0) == 0);
  std::string bin = dir.file("broken.onnx");
  std::ofstream(bin) << "not a protobuf \xff\xff\xff";
  CHECK(loadError(bin) == bin + ": not a valid ONNX model (protobuf parse "
                                "failed)");
  CHECK(loadError(dir.path) == dir.path + ": is a directory, not a regular "
                                          "file");
}

TEST_CASE("ModelLoader: the ONNX checker's complaints are user errors") {
  TempDir dir;
  onnx::ModelProto m = convModel();
  m.mutable_graph()->mutable_node(0)->set_input(1, "undefined_weight");
  std::string path = dir.file("bad.onnx");
  writeBinary(m, path);
  CHECK(loadError(path).rfind(path + ": invalid ONNX model: ", 0) == 0);
}

TEST_CASE("ModelLoader: model hashes are standard SHA-256") {
  CHECK(sha256Hex("") ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256Hex("abc") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256Hex(std::string(1000, 'a')) ==
        "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
  CHECK(sha256Hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
