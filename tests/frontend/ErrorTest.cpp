// ErrorTest.cpp - must-fail models: each asserts the exact diagnostic.
#include "LowerToHpvm.h"
#include "onnx/ModelLoader.h"
#include "support/Diagnostics.h"

#include <doctest/doctest.h>

#include <string>

using namespace hpvm::fe;

namespace {

std::string errorFixture(const std::string& name) {
  return std::string(HPVM_SOURCE_DIR) + "/test_frontend/models/errors/" + name +
         ".onnxtxt";
}

/// The message of the UserError that loading and lowering \p path throws
/// ("" if none).
std::string failure(const std::string& path) {
  try {
    auto g = loadModel(path, {});
    lowerToHpvm(*g);
  } catch (const UserError& e) {
    CHECK(e.exitCode() == ExitUserError);
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("Frontend: every unsupported node is listed in one error") {
  std::string path = errorFixture("two_unsupported");
  CHECK(failure(path) ==
        path +
            ": 3 unsupported nodes:\n"
            "  node 'elu' (Elu, #1): operator Elu is not "
            "supported\n"
            "  node 'dilated' (Conv, #2): dilations [0, 2] must be "
            "positive\n"
            "  node '#3' (Softsign, #3): operator Softsign is not supported");
}

TEST_CASE("Frontend: an unknown attribute is named") {
  std::string path = errorFixture("unknown_attribute");
  CHECK(failure(path) ==
        path + ": node 'relu' (Relu, #0): attribute 'alpha' is not supported");
}

TEST_CASE("Frontend: an operator newer than the model's opset is rejected") {
  std::string path = errorFixture("low_opset");
  CHECK(failure(path) == path + ": node 'cast' (Cast, #1): operator Cast "
                                "needs opset 6 or newer (the model has opset "
                                "5)");
}

TEST_CASE("Frontend: a convolution weight computed at run time is rejected") {
  std::string path = errorFixture("nonconst_weight");
  CHECK(failure(path) ==
        path + ": node 'conv' (Conv, #1): weight 'w' is computed at run time "
               "by node 'weights_from_input' (Relu); only constant weights "
               "are supported");
}

TEST_CASE("Frontend: a model with two inputs is rejected") {
  std::string path = errorFixture("two_inputs");
  CHECK(failure(path) == path + ": the model has 2 inputs ('input', "
                                "'other'); torch2hpvm needs exactly one, the "
                                "image batch");
}

TEST_CASE("Frontend: a non-4-D input is explained") {
  std::string path = errorFixture("input_2d");
  CHECK(failure(path) ==
        path + ": input 'input' is float32 with shape 1x784; torch2hpvm "
               "needs a 4-D float32 image batch (N, C, H, W)");
}

TEST_CASE("Frontend: a reshape that does not feed a dense layer is rejected") {
  std::string path = errorFixture("reshape_not_dense");
  CHECK(failure(path) ==
        path + ": node 'reshape' (Reshape, #0): reshaping 1x2x6x6 to 1x72 is "
               "only supported right before Gemm or MatMul (it feeds node "
               "'relu' (Relu))");
}

TEST_CASE("Frontend: window geometry HPVM cannot express is listed per node") {
  std::string path = errorFixture("pool_geometry");
  CHECK(failure(path) ==
        path + ": 3 unsupported nodes:\n"
               "  node 'ceil' (AveragePool, #0): ceil_mode=1 with padding "
               "counted in the mean (count_include_pad=1) is not supported "
               "(pads [1, 1, 1, 1]): only symmetric pads, or ceil_mode with "
               "no padding\n"
               "  node 'asymmetric_mean' (AveragePool, #1): asymmetric padding "
               "with padding counted in the mean (count_include_pad=1) is not "
               "supported (pads [0, 0, 1, 1]): only symmetric pads, or "
               "ceil_mode with no padding\n"
               "  node 'asymmetric' (Conv, #2): asymmetric pads (height 0 "
               "before, 1 after) cannot be expressed with HPVM's symmetric "
               "padding");
}

TEST_CASE("Frontend: a missing model file is a user error") {
  std::string path = errorFixture("does_not_exist");
  CHECK(failure(path) == path + ": cannot open: No such file or directory");
}
