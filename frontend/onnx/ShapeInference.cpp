// ShapeInference.cpp - ONNX shape inference through a schema registry that
// puts a check in front of the inference functions of the ONNX library
// (Debian's 1.12) that index shapes without checking them. Found by the
// fuzzer (tests/fuzz/FuzzOnnx.cpp); each check has a hostile-input case.
#include "onnx/ShapeInference.h"

#include "onnx/Attributes.h"

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>
#include <onnx/shape_inference/implementation.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace hpvm::fe {

namespace {

using onnx::InferenceContext;

/// The rank of input \p i when shape inference knows it, else -1.
int knownRank(InferenceContext& ctx, size_t i) {
  if (i >= ctx.getNumInputs())
    return -1;
  const onnx::TypeProto* type = ctx.getInputType(i);
  if (type == nullptr || !type->has_tensor_type() ||
      !type->tensor_type().has_shape())
    return -1;
  return type->tensor_type().shape().dim_size();
}

/// ConvTranspose reads the weight's (input \p W) second axis, its output
/// channels, and every convolution takes its window from the axes after,
/// whatever the weight's rank.
template <size_t W> void checkWeightRank(InferenceContext& ctx) {
  const int w = knownRank(ctx, W);
  if (w >= 0 && w < 3)
    fail_shape_inference("the weight W has rank ", w,
                         "; a convolution's has 3 or more (output and input "
                         "channels, then the window)");
}

/// A convolution without kernel_shape takes the window from the weight's
/// shape (input \p W), and ONNX then indexes the input's spatial axes (and
/// dilations) with it.
template <size_t W> void checkConv(InferenceContext& ctx) {
  const int x = knownRank(ctx, 0);
  const int w = knownRank(ctx, W);
  if (x >= 0 && w >= 0 && x != w)
    fail_shape_inference("the input X has rank ", x,
                         " but the weight W has rank ", w,
                         "; they must have the same rank");
  checkWeightRank<W>(ctx);
}

/// Convolutions and pools divide by their strides.
void checkStrides(InferenceContext& ctx) {
  const onnx::AttributeProto* strides = ctx.getAttribute("strides");
  if (strides == nullptr)
    return;
  const std::vector<int64_t> values(strides->ints().begin(),
                                    strides->ints().end());
  for (int64_t s : values)
    if (s < 1)
      fail_shape_inference("strides ", formatInts(values), " must be positive");
}

template <size_t W> void checkConvAndStrides(InferenceContext& ctx) {
  checkConv<W>(ctx);
  checkStrides(ctx);
}

/// The operators checked, by ONNX name (default domain, every version).
struct Guard {
  const char* op;
  void (*check)(InferenceContext&);
};
constexpr Guard kGuards[] = {
    {"Conv", checkConvAndStrides<1>},
    {"ConvTranspose", checkWeightRank<1>},
    {"ConvInteger", checkConvAndStrides<1>},
    {"QLinearConv", checkConvAndStrides<3>},
    {"MaxPool", checkStrides},
    {"AveragePool", checkStrides},
    {"LpPool", checkStrides},
};

/// The ONNX registry's schemas, with a guarded copy for each operator of
/// kGuards: its check runs first, then ONNX's own inference function.
class GuardedRegistry final : public onnx::ISchemaRegistry {
public:
  const onnx::OpSchema* GetSchema(const std::string& key,
                                  const int maxInclusiveVersion,
                                  const std::string& domain) const override {
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Schema(key, maxInclusiveVersion, domain);
    if (schema == nullptr || !(domain.empty() || domain == "ai.onnx"))
      return schema;
    for (const Guard& guard : kGuards)
      if (key == guard.op)
        return guarded(*schema, guard.check);
    return schema;
  }

private:
  const onnx::OpSchema* guarded(const onnx::OpSchema& schema,
                                void (*check)(InferenceContext&)) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::unique_ptr<onnx::OpSchema>& copy =
        copies_[{schema.Name(), schema.SinceVersion()}];
    if (copy == nullptr) {
      copy = std::make_unique<onnx::OpSchema>(schema);
      onnx::InferenceFunction inner = schema.GetTypeAndShapeInferenceFunction();
      copy->TypeAndShapeInferenceFunction(
          [inner, check](InferenceContext& ctx) {
            check(ctx);
            if (inner)
              inner(ctx);
          });
    }
    return copy.get();
  }

  mutable std::mutex mutex_;
  mutable std::map<std::pair<std::string, int>, std::unique_ptr<onnx::OpSchema>>
      copies_;
};

} // namespace

void inferShapes(onnx::ModelProto& model, bool strict) {
  static const GuardedRegistry registry;
  onnx::ShapeInferenceOptions options(/*check_type=*/strict,
                                      /*strict_mode=*/strict ? 1 : 0);
  onnx::shape_inference::InferShapes(model, &registry, options);
}

} // namespace hpvm::fe
