// ModelInput.cpp - the model's input: type, --input-shape, problems
// (ModelInput.h).
#include "onnx/ModelInput.h"

#include "onnx/ProtoConversion.h"
#include "support/Diagnostics.h"

#include <unordered_set>

namespace hpvm::fe {

TypeInfo typeInfo(const onnx::TypeProto& type) {
  TypeInfo info;
  if (!type.has_tensor_type())
    return info;
  info.dtype = toDataType(type.tensor_type().elem_type());
  if (!type.tensor_type().has_shape())
    return info;
  info.known = true;
  for (const auto& dim : type.tensor_type().shape().dim())
    info.shape.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
  return info;
}

std::string describeShape(const TypeInfo& info) {
  if (!info.known)
    return "unknown shape";
  std::string s;
  for (size_t i = 0; i < info.shape.size(); ++i)
    s += (i ? "x" : "") +
         (info.shape[i] < 0 ? std::string("?") : std::to_string(info.shape[i]));
  return s.empty() ? "a scalar" : "shape " + s;
}

std::string givenShape(const TypeInfo& info) {
  std::string s;
  for (size_t i = 0; i < info.shape.size(); ++i)
    s += (i ? "x" : "") + (info.shape[i] >= 0 ? std::to_string(info.shape[i])
                           : i == 0           ? std::string("1")
                           : i + 2 == info.shape.size() ? std::string("H")
                           : i + 1 == info.shape.size() ? std::string("W")
                                                        : std::string("C"));
  return s;
}

namespace {

/// The graph inputs of \p model that are no initializer, to edit.
std::vector<onnx::ValueInfoProto*> editableInputs(onnx::ModelProto& model) {
  std::unordered_set<std::string> inits;
  for (const onnx::TensorProto& t : model.graph().initializer())
    inits.insert(t.name());
  std::vector<onnx::ValueInfoProto*> inputs;
  for (onnx::ValueInfoProto& vi : *model.mutable_graph()->mutable_input())
    if (!inits.count(vi.name()))
      inputs.push_back(&vi);
  return inputs;
}

} // namespace

void fixInputShape(onnx::ModelProto& model, const std::string& path,
                   const std::string& name, std::vector<int64_t> dims,
                   const std::string& from) {
  const std::vector<onnx::ValueInfoProto*> inputs = editableInputs(model);
  std::vector<std::string> names;
  for (const onnx::ValueInfoProto* vi : inputs)
    names.push_back(vi->name());
  onnx::ValueInfoProto* in = nullptr;
  for (onnx::ValueInfoProto* vi : inputs)
    if (name.empty() ? inputs.size() == 1 : vi->name() == name)
      in = vi;
  const std::string option =
      !from.empty()
          ? from
          : "--input-shape" + (name.empty() ? "" : " " + escapeName(name));
  if (!in)
    throw UserError(path + ": " + option + ": the model has no input " +
                    (name.empty() ? std::string("to give it (it has ")
                                  : "'" + escapeName(name) + "' (it has ") +
                    (names.empty() ? std::string("none") : quotedList(names)) +
                    (name.empty() && inputs.size() > 1 ? "; name one" : "") +
                    ")");
  if (!in->type().has_tensor_type())
    throw UserError(path + ": " + option + ": input '" +
                    escapeName(in->name()) + "' is not a tensor");
  onnx::TensorShapeProto* shape =
      in->mutable_type()->mutable_tensor_type()->mutable_shape();
  // A dataset's N x 1 x H x W images are an N x H x W input's too.
  if (!from.empty() && shape->dim_size() == 3 && dims.size() == 4 &&
      dims[1] == 1)
    dims.erase(dims.begin() + 1);
  if (shape->dim_size() != 0 &&
      shape->dim_size() != static_cast<int>(dims.size()))
    throw UserError(path + ": " + option + ": input '" +
                    escapeName(in->name()) + "' has " +
                    std::to_string(shape->dim_size()) + " dims, " +
                    std::to_string(dims.size()) + " given");
  while (shape->dim_size() < static_cast<int>(dims.size()))
    shape->add_dim();
  for (int i = 0; i < shape->dim_size(); ++i) {
    onnx::TensorShapeProto::Dimension* d = shape->mutable_dim(i);
    if (d->has_dim_value()) {
      // A dataset's images that do not fit are the dataset check's to
      // report (with both shapes).
      if (d->dim_value() != dims[size_t(i)] && from.empty())
        throw UserError(path + ": " + option + ": input '" +
                        escapeName(in->name()) + "' has dim " +
                        std::to_string(i) + " of " +
                        std::to_string(d->dim_value()) + ", " +
                        std::to_string(dims[size_t(i)]) + " given");
    } else if (i != 0) {
      d->set_dim_value(dims[size_t(i)]);
    }
  }
}

void readSymbolicBatchAsOne(onnx::ModelProto& model) {
  const std::vector<onnx::ValueInfoProto*> inputs = editableInputs(model);
  if (inputs.size() != 1)
    return;
  onnx::ValueInfoProto* in = inputs.front();
  if (!in->type().has_tensor_type() || !in->type().tensor_type().has_shape())
    return;
  onnx::TensorShapeProto* shape =
      in->mutable_type()->mutable_tensor_type()->mutable_shape();
  // (An input refused for its other dims is described as the model has it.)
  for (int d = 1; d < shape->dim_size(); ++d)
    if (!shape->dim(d).has_dim_value())
      return;
  if (shape->dim_size() >= 2 && !shape->dim(0).has_dim_value())
    shape->mutable_dim(0)->set_dim_value(1);
}

std::vector<const onnx::ValueInfoProto*>
modelInputs(const onnx::GraphProto& graph) {
  std::unordered_set<std::string> inits;
  for (const onnx::TensorProto& t : graph.initializer())
    inits.insert(t.name());
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const auto& vi : graph.input())
    if (!inits.count(vi.name()))
      inputs.push_back(&vi);
  return inputs;
}

std::string
inputProblem(const std::vector<const onnx::ValueInfoProto*>& inputs) {
  if (inputs.size() != 1) {
    std::vector<std::string> names;
    for (const auto* vi : inputs)
      names.push_back(vi->name());
    return "the model has " + std::to_string(inputs.size()) + " inputs" +
           (names.empty() ? "" : " (" + quotedList(names) + ")") +
           "; torch2hpvm needs exactly one, the image batch";
  }
  const onnx::ValueInfoProto& in = *inputs.front();
  const TypeInfo t = typeInfo(in.type());
  if (t.dtype != DataType::Float || !t.known || t.shape.size() < 2 ||
      t.shape.size() > 4)
    return "input '" + escapeName(in.name()) + "' is " +
           (t.dtype == DataType::Float
                ? std::string("float32")
                : onnxTypeName(in.type().tensor_type().elem_type())) +
           " with " + describeShape(t) +
           "; torch2hpvm needs a 4-D float32 image batch (N, C, H, W), a 3-D "
           "one (N, H, W) or a 2-D batch of feature vectors (N, K)";
  for (size_t d = 1; d < t.shape.size(); ++d)
    if (t.shape[d] < 0)
      return "input '" + escapeName(in.name()) + "' has " + describeShape(t) +
             "; only the batch dimension may be symbolic (give "
             "--input-shape " +
             escapeName(in.name()) + ":" + givenShape(t) +
             " with the sizes to run at)";
  return "";
}

} // namespace hpvm::fe
