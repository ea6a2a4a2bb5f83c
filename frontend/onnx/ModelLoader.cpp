// ModelLoader.cpp - read an ONNX ModelProto into an ONNX-level Graph: parse,
// pre-scan operators and attributes, check, convert (ProtoConversion.cpp),
// infer shapes, build.
#include "onnx/ModelLoader.h"

#include "ir/OpTable.h"
#include "ir/Printer.h" // formatShape
#include "onnx/Attributes.h"
#include "onnx/HiddenNodes.h"
#include "onnx/ModelInput.h"
#include "onnx/OpAttrs.h"
#include "onnx/ProtoConversion.h"
#include "onnx/Rank3Input.h"
#include "onnx/Sha256.h"
#include "onnx/ShapeInference.h"
#include "onnx/SplitOutputs.h"
#include "support/Diagnostics.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/version_converter/convert.h>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <sys/stat.h>

namespace hpvm::fe {

namespace {

using onnx::AttributeProto;
using onnx::ModelProto;
using onnx::NodeProto;
using onnx::TensorProto;

// ---------------------------------------------------------------------------
// Reading and parsing.
// ---------------------------------------------------------------------------

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Collects text-format parse errors as "line:col: message".
class TextErrors : public google::protobuf::io::ErrorCollector {
public:
  void AddError(int line, int column, const std::string& message) override {
    if (first.empty())
      first = std::to_string(line + 1) + ":" + std::to_string(column + 1) +
              ": " + message;
  }
  std::string first;
};

ModelProto parseModel(const std::string& path, const std::string& bytes) {
  ModelProto model;
  if (endsWith(path, ".onnxtxt")) {
    google::protobuf::TextFormat::Parser parser;
    TextErrors errors;
    parser.RecordErrorsTo(&errors);
    if (!parser.ParseFromString(bytes, &model))
      throw UserError(path + ":" + errors.first +
                      " (not a valid ONNX model in protobuf text format)");
    return model;
  }
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw UserError(path + ": the file is larger than 2 GiB; store the "
                           "weights as ONNX external data");
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw UserError(path + ": not a valid ONNX model (protobuf parse failed)");
  return model;
}

/// The default-domain opset the model imports, or 0.
int64_t defaultOpset(const ModelProto& model) {
  for (const auto& imp : model.opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx")
      return imp.version();
  return 0;
}

// ---------------------------------------------------------------------------
// Pre-scan: operator support and attribute values.
// ---------------------------------------------------------------------------

/// Appends to \p reasons each attribute value of a \p kind node that
/// torch2hpvm cannot honour; \p a has read every declared attribute without
/// type errors. Values that need shapes (ceil_mode, asymmetric pads,
/// count_include_pad with auto_pad, Pad's value) are checked during lowering.
void checkAttributes(OpKind kind, OpAttrs& a,
                     std::vector<std::string>& reasons) {
  auto onlyOnes = [&](const char* name) {
    std::vector<int64_t> v = a.getInts(name);
    for (int64_t x : v)
      if (x != 1) {
        reasons.push_back(std::string(name) + " " + formatInts(v) +
                          " are not supported (only 1)");
        return;
      }
  };
  auto autoPad = [&] {
    std::string mode = a.getString("auto_pad");
    if (mode != "NOTSET" && mode != "VALID" && mode != "SAME_UPPER" &&
        mode != "SAME_LOWER")
      reasons.push_back("auto_pad '" + escapeName(mode) + "' is not supported");
  };
  auto positive = [&](const char* name) {
    std::vector<int64_t> v = a.getInts(name);
    for (int64_t x : v)
      if (x < 1) {
        reasons.push_back(std::string(name) + " " + formatInts(v) +
                          " must be positive");
        return;
      }
  };
  auto nonNegative = [&](const char* name) {
    std::vector<int64_t> v = a.getInts(name);
    for (int64_t x : v)
      if (x < 0) {
        reasons.push_back(std::string(name) + " " + formatInts(v) +
                          " must not be negative");
        return;
      }
  };

  // Only operators with value checks appear here; every attribute's name
  // and type was checked against the op's declarations (OpAttrs).
  if (kind == OpKind::OnnxConv) {
    autoPad();
    positive("dilations");
    if (a.getInt("group") < 1)
      reasons.push_back("group " + std::to_string(a.getInt("group")) +
                        " must be positive");
    positive("kernel_shape");
    nonNegative("pads");
    positive("strides");
  } else if (kind == OpKind::OnnxGemm) {
    if (a.getInt("transA") != 0)
      reasons.push_back("transA=1 (transposed activations) is not supported");
  } else if (kind == OpKind::OnnxMaxPool || kind == OpKind::OnnxAveragePool) {
    autoPad();
    if (kind == OpKind::OnnxMaxPool)
      onlyOnes("dilations");
    positive("kernel_shape");
    nonNegative("pads");
    positive("strides");
  } else if (kind == OpKind::OnnxBatchNormalization) {
    if (a.getInt("is_test") == 0)
      reasons.push_back("is_test=0 (training mode) is not supported");
    if (a.getInt("training_mode") != 0)
      reasons.push_back("training_mode=1 is not supported (inference only)");
  } else if (kind == OpKind::OnnxPad) {
    std::string mode = a.getString("mode");
    if (mode != "constant")
      reasons.push_back("mode '" + escapeName(mode) +
                        "' is not supported (only constant)");
  } else if (kind == OpKind::OnnxConstant) {
    if (a.has("value_string"))
      reasons.push_back("string constants are not supported");
  }
}

struct PreScan {
  /// Per node: its kind (Refused for an unsupported one) and converted
  /// attributes.
  std::vector<OpKind> kinds;
  std::vector<std::map<std::string, AttrValue>> attrs;
  /// Per node: why it is unsupported (empty when it is supported).
  std::vector<std::vector<std::string>> reasons;
  /// Per node: true for an unsupported node the ONNX checker and shape
  /// inference cannot take (no ONNX schema: a custom domain, a misspelt
  /// operator; or attributes its schema rejects): they run with it hidden
  /// (HiddenNodes), and lowering says what else is wrong.
  std::vector<bool> hide;

  /// True when some node is unsupported.
  bool anyRefused() const {
    return std::any_of(reasons.begin(), reasons.end(),
                       [](const auto& r) { return !r.empty(); });
  }
  /// True when some node is hidden.
  bool anyHidden() const {
    return std::find(hide.begin(), hide.end(), true) != hide.end();
  }
};

Origin originOf(const NodeProto& node, int index) {
  Origin o;
  o.name = node.name().empty() ? "#" + std::to_string(index) : node.name();
  o.opType = node.domain().empty() || node.domain() == "ai.onnx"
                 ? node.op_type()
                 : node.domain() + "." + node.op_type();
  o.index = index;
  return o;
}

/// Phase 1: every node's operator, opset and attributes; why the
/// unsupported ones are, in scan.reasons.
PreScan preScan(const ModelProto& model, int64_t opset) {
  PreScan scan;
  const auto& nodes = model.graph().node();
  // Records the last node as unsupported, because of \p reasons (of its
  // attributes when \p attributes).
  auto refuse = [&](const NodeProto& node, std::vector<std::string> reasons,
                    bool attributes = false) {
    scan.kinds.back() = OpKind::Refused;
    scan.attrs.back().clear();
    scan.reasons.back() = std::move(reasons);
    const bool defaultDomain =
        node.domain().empty() || node.domain() == "ai.onnx";
    // (ONNX's checker prints a warning of its own for an experimental
    // operator, such as Crop.)
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset));
    scan.hide.back() =
        attributes || !defaultDomain || schema == nullptr ||
        schema->support_level() == onnx::OpSchema::SupportType::EXPERIMENTAL;
  };
  for (int i = 0; i < nodes.size(); ++i) {
    const NodeProto& node = nodes[i];
    Origin origin = originOf(node, i);
    scan.kinds.push_back(OpKind::Refused);
    scan.attrs.emplace_back();
    scan.reasons.emplace_back();
    scan.hide.push_back(false);
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      refuse(node, {"operator " + escapeName(origin.opType) +
                    " is not supported (custom domain '" +
                    escapeName(node.domain()) + "')"});
      continue;
    }
    const OnnxOpDesc* desc = onnxOpByName(node.op_type());
    if (desc == nullptr) {
      refuse(node,
             {"operator " + escapeName(node.op_type()) + " is not supported"});
      continue;
    }
    if (opset < desc->minOpset) {
      refuse(node,
             {"operator " + node.op_type() + " needs opset " +
              std::to_string(desc->minOpset) +
              " or newer (the model has opset " + std::to_string(opset) + ")"});
      continue;
    }
    scan.kinds.back() = desc->kind;
    std::vector<std::string> reasons;
    std::map<std::string, AttrValue> attrs = convertAttributes(node, reasons);
    OpAttrs reader(desc->kind, attrs, opset);
    std::vector<std::string> typeErrors = reader.readAll();
    if (typeErrors.empty())
      checkAttributes(desc->kind, reader, reasons);
    reasons.insert(reasons.end(), typeErrors.begin(), typeErrors.end());
    // consumed_inputs: an opset-1 optimisation hint without meaning for
    // inference.
    std::string ignored = std::string(desc->ignoredAttrs) + " consumed_inputs";
    for (const std::string& name : reader.unconsumed(ignored))
      reasons.push_back("attribute '" + escapeName(name) +
                        "' is not supported");
    if (!reasons.empty()) {
      refuse(node, std::move(reasons), /*attributes=*/true);
      continue;
    }
    // Only the declared attributes, which lowering reads, travel on.
    std::set<std::string> dropped;
    std::istringstream words(ignored);
    for (std::string w; words >> w;)
      dropped.insert(w);
    for (auto it = attrs.begin(); it != attrs.end();)
      it = dropped.count(it->first) ? attrs.erase(it) : std::next(it);
    scan.attrs.back() = std::move(attrs);
  }
  return scan;
}

/// Refuses a model with unsupported nodes, listing with them what is wrong
/// with its input (--input-shape applied first), so that one refusal says
/// all that loading finds before shape inference: for models that cannot
/// carry their unsupported nodes on to lowering (hidden nodes of a model
/// with external data, which the checker reads from its file; opset
/// conversion), or whose --input-shape does not fit.
void refuseScanned(onnx::ModelProto& model, const std::string& path,
                   const LoadOptions& opts, const PreScan& scan) {
  if (!scan.anyRefused())
    return;
  ErrorList errors(path);
  for (int i = 0; i < model.graph().node_size(); ++i)
    for (const std::string& reason : scan.reasons[static_cast<size_t>(i)])
      errors.add(originOf(model.graph().node(i), i), reason);
  try {
    if (!opts.inputShape.empty())
      fixInputShape(model, path, opts.inputShapeName, opts.inputShape,
                    opts.inputShapeFrom);
  } catch (const UserError& e) {
    const std::string what = e.what();
    errors.problem(
        what.rfind(path + ": ", 0) == 0 ? what.substr(path.size() + 2) : what);
  }
  if (const std::string wrong = inputProblem(modelInputs(model.graph()));
      !wrong.empty())
    errors.problem(wrong);
  errors.throwIfAny();
}

// ---------------------------------------------------------------------------
// Building the IR.
// ---------------------------------------------------------------------------

/// Default constant for an empty optional input \p index of \p kind, or
/// nullptr when the input has no default we can materialise. Inputs that
/// were attributes before opset 11 or 12 (Clip's bounds, Dropout's ratio,
/// Pad's value) default as the attribute does (attrDecls).
std::shared_ptr<const TensorData> optionalDefault(OpKind kind, int index,
                                                  int64_t opset) {
  auto scalar = [](DataType t, auto v) {
    auto d = std::make_shared<TensorData>();
    d->dtype = t;
    appendValue(d->bytes, v);
    return d;
  };
  auto asAttribute = [&](const char* name) {
    std::map<std::string, AttrValue> absent;
    double v = OpAttrs(kind, absent, opset).getFloat(name);
    return scalar(DataType::Float, static_cast<float>(v));
  };
  if (kind == OpKind::OnnxClip && index == 1)
    return asAttribute("min");
  if (kind == OpKind::OnnxClip && index == 2)
    return asAttribute("max");
  if (kind == OpKind::OnnxDropout && index == 1)
    return asAttribute("ratio");
  if (kind == OpKind::OnnxDropout && index == 2)
    return scalar(DataType::Bool, uint8_t{0}); // training_mode: false
  if (kind == OpKind::OnnxPad && index == 2)
    return asAttribute("value");
  if (kind == OpKind::OnnxResize && (index == 1 || index == 2)) {
    // roi, scales: absent (Resize takes sizes then).
    auto empty = std::make_shared<TensorData>();
    empty->dtype = DataType::Float;
    empty->dims = {0};
    return empty;
  }
  return nullptr;
}

std::string dirOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

/// Adds unsupported \p node to \p g as a Refused node per output it names,
/// reading the inputs it names, and its \p reasons to g.refusals.
void addRefused(Graph& g, const NodeProto& node, const Origin& origin,
                const std::vector<std::string>& reasons,
                const std::unordered_map<std::string, TypeInfo>& types,
                std::unordered_map<std::string, Value*>& values) {
  for (const std::string& reason : reasons)
    g.refusals.emplace_back(origin, reason);
  std::vector<Value*> ins;
  for (const std::string& name : node.input())
    if (!name.empty()) {
      auto it = values.find(name);
      HPVM_ASSERT(it != values.end(),
                  "checked model uses undefined value " + name);
      ins.push_back(it->second);
    }
  for (const std::string& name : node.output()) {
    if (name.empty())
      continue;
    TypeInfo t;
    if (auto it = types.find(name); it != types.end())
      t = it->second;
    Value* out =
        g.addValue(name, t.dtype, t.known ? t.shape : std::vector<int64_t>{});
    values[name] = out;
    g.addNode(OpKind::Refused, ins, out, {origin});
  }
}

std::unique_ptr<Graph> buildGraph(const ModelProto& model, PreScan& scan,
                                  const std::string& path, uint64_t limit) {
  auto g = std::make_unique<Graph>();
  const onnx::GraphProto& graph = model.graph();
  std::string modelDir = dirOf(path);
  int64_t opset = defaultOpset(model);

  std::unordered_map<std::string, TypeInfo> types;
  for (const auto& vi : graph.value_info())
    types[vi.name()] = typeInfo(vi.type());
  for (const auto& vi : graph.output())
    types[vi.name()] = typeInfo(vi.type());

  std::unordered_map<std::string, Value*> values;
  for (int i = 0; i < graph.initializer_size(); ++i) {
    const TensorProto& init = graph.initializer(i);
    auto data = convertTensor(
        init, modelDir,
        path + ": initializer '" + escapeName(init.name()) + "'", limit);
    values[init.name()] = g->addConstant(init.name(), std::move(data), i);
  }
  if (graph.sparse_initializer_size() != 0)
    throw UserError(path + ": sparse initializers are not supported");

  // Exactly one non-initializer input, float32 of rank 2 to 4, only its
  // batch symbolic. Another problem with it is listed with the nodes'
  // (below); several inputs end the loading here (the nodes read them).
  ErrorList errors(path);
  const std::vector<const onnx::ValueInfoProto*> inputs = modelInputs(graph);
  const std::string inputWrong = inputProblem(inputs);
  if (inputs.size() != 1)
    throw UserError(path + ": " + inputWrong);
  const onnx::ValueInfoProto& in = *inputs.front();
  const TypeInfo inType = typeInfo(in.type());
  const std::string inputBig = activationSizeProblem(inType.shape, limit);
  if (!inputWrong.empty())
    errors.problem(inputWrong);
  else if (!inputBig.empty())
    errors.problem("input '" + escapeName(in.name()) + "' " + inputBig);
  // (A 3-D input is held in 4-D: the nodes read `asRead`, rewritten to
  // read g->input below.)
  const bool rank3 = inType.shape.size() == 3 && inputWrong.empty();
  g->input = g->addValue(in.name(), DataType::Float,
                         rank3 ? heldShape(inType.shape) : inType.shape);
  g->inputRank = inType.shape.size();
  Value* asRead =
      rank3 ? g->addValue(in.name(), DataType::Float, inType.shape) : g->input;
  values[in.name()] = asRead;

  if (graph.output_size() < 1)
    throw UserError(path + ": the model has no outputs; it computes nothing");
  {
    std::unordered_set<std::string> seen;
    for (const auto& vi : graph.output())
      if (!seen.insert(vi.name()).second)
        throw UserError(path + ": output '" + escapeName(vi.name()) +
                        "' is listed twice among the graph outputs");
  }

  // Names read by some node or by a graph output: extra node outputs
  // (Dropout's mask, MaxPool's indices) must not be among them.
  std::unordered_set<std::string> used;
  for (const NodeProto& node : graph.node())
    for (const std::string& name : node.input())
      used.insert(name);
  for (const auto& vi : graph.output())
    used.insert(vi.name());

  // The loader's refusals, in errors too in case loading ends here.
  size_t carried = 0;
  for (int i = 0; i < graph.node_size(); ++i) {
    const NodeProto& node = graph.node(i);
    Origin origin = originOf(node, i);
    OpKind kind = scan.kinds[static_cast<size_t>(i)];
    if (kind == OpKind::Refused) {
      addRefused(*g, node, origin, scan.reasons[static_cast<size_t>(i)], types,
                 values);
      for (const std::string& reason : scan.reasons[static_cast<size_t>(i)])
        errors.add(origin, reason);
      carried += scan.reasons[static_cast<size_t>(i)].size();
      continue;
    }
    std::vector<std::string> names(node.input().begin(), node.input().end());
    while (!names.empty() && names.back().empty())
      names.pop_back();
    std::vector<Value*> ins;
    bool ok = true;
    for (size_t k = 0; k < names.size(); ++k) {
      if (names[k].empty()) {
        auto def = optionalDefault(kind, static_cast<int>(k), opset);
        if (def == nullptr) {
          errors.add(origin, "optional input #" + std::to_string(k) +
                                 " is empty, which is not supported");
          ok = false;
          break;
        }
        ins.push_back(g->addConstant("", std::move(def)));
        continue;
      }
      auto it = values.find(names[k]);
      HPVM_ASSERT(it != values.end(),
                  "checked model uses undefined value " + names[k]);
      ins.push_back(it->second);
    }
    if (kind == OpKind::OnnxSplit) {
      addSplitOutputs(*g, node, origin, ins, ok,
                      scan.attrs[static_cast<size_t>(i)], opset, types, used,
                      values);
      continue;
    }
    // DynamicQuantizeLinear's scale and zero point (outputs 1 and 2)
    // become nodes of their own, of the same kind and operand
    // (kOutputIndex names which).
    const bool splitOutputs = kind == OpKind::OnnxDynamicQuantizeLinear;
    for (int k = 1; k < node.output_size(); ++k)
      if (!splitOutputs && !node.output(k).empty() &&
          used.count(node.output(k))) {
        errors.add(origin, "output #" + std::to_string(k) + " ('" +
                               escapeName(node.output(k)) +
                               "') is used; only the first output of " +
                               node.op_type() + " is supported");
        ok = false;
      }
    if (node.output_size() < 1 || node.output(0).empty()) {
      errors.add(origin, "the node has no output");
      continue;
    }
    const std::string& outName = node.output(0);
    TypeInfo t;
    if (auto it = types.find(outName); it != types.end())
      t = it->second;
    Value* out = g->addValue(outName, t.dtype,
                             t.known ? t.shape : std::vector<int64_t>{});
    values[outName] = out;
    std::vector<Value*> split(3, nullptr);
    for (int k = 1; splitOutputs && k < node.output_size() && k < 3; ++k) {
      if (node.output(k).empty())
        continue;
      TypeInfo tk;
      if (auto it = types.find(node.output(k)); it != types.end())
        tk = it->second;
      split[size_t(k)] =
          g->addValue(node.output(k), tk.dtype,
                      tk.known ? tk.shape : std::vector<int64_t>{});
      values[node.output(k)] = split[size_t(k)];
    }
    if (!ok)
      continue;
    if (splitOutputs &&
        scan.attrs[static_cast<size_t>(i)].count(kOutputIndex)) {
      errors.add(origin, std::string("attribute '") + kOutputIndex +
                             "' is torch2hpvm's own");
      continue;
    }
    for (int k = 1; k < 3; ++k)
      if (split[size_t(k)] != nullptr) {
        Node* nk = g->addNode(kind, ins, split[size_t(k)], {origin});
        nk->attrs[kOutputIndex] = int64_t{k};
      }
    Node* n = g->addNode(kind, std::move(ins), out, {origin});
    n->attrs = std::move(scan.attrs[static_cast<size_t>(i)]);
  }
  // A node making an activation too large to hold, or to count in 64 bits,
  // is refused, and its output's shape and those of the nodes after it left
  // unknown: no pass multiplies those dimensions, and lowering reports the
  // node with the others.
  std::unordered_set<const Value*> unsized;
  for (const auto& n : g->nodes()) {
    const bool after =
        std::any_of(n->inputs.begin(), n->inputs.end(),
                    [&](const Value* v) { return unsized.count(v) > 0; });
    const std::string big =
        after ? "" : activationSizeProblem(n->output->shape, limit);
    if (!big.empty()) {
      g->refusals.emplace_back(n->origins.front(), "its output " + big);
      n->kind = OpKind::Refused;
    }
    if (after || !big.empty()) {
      n->output->shape.clear();
      unsized.insert(n->output);
    }
  }
  if (rank3)
    adoptRank3Input(*g, asRead, errors);
  // Only the loader's refusals: lowering reports them with its own.
  if (!inputWrong.empty() || !inputBig.empty() || errors.size() > carried)
    errors.throwIfAny();

  std::vector<std::string> idle;
  for (const auto& vi : graph.output()) {
    auto outIt = values.find(vi.name());
    HPVM_ASSERT(outIt != values.end(), "checked model has an undefined output");
    Value* v = outIt->second;
    const TypeInfo t = typeInfo(vi.type());
    g->outputs.push_back(
        GraphOutput{vi.name(), v, t.known ? t.shape : std::vector<int64_t>{}});
    const bool input = v == g->input || v == asRead;
    if (input || v->isConstant())
      idle.push_back("'" + escapeName(vi.name()) + "' is " +
                     (input ? "the input itself" : "a constant"));
  }
  if (!idle.empty()) {
    std::string list = idle[0];
    for (size_t i = 1; i < idle.size(); ++i)
      list += ", " + idle[i];
    throw UserError(path + ": output " + list +
                    (graph.output_size() == 1
                         ? "; the model computes nothing"
                         : "; every output must be computed by the model"));
  }
  return g;
}

/// What the ONNX checker lets through or trips over, checked first: a graph
/// with nodes, one output some node, input or initializer defines, and
/// external data that is safe to read (see resolveExternal; the checker
/// would open a FIFO and wait).
void checkGraphShape(const ModelProto& model, const std::string& path,
                     uint64_t limit) {
  const onnx::GraphProto& graph = model.graph();
  if (graph.node_size() == 0)
    throw UserError(path + ": the graph has no nodes; the model computes "
                           "nothing");
  std::unordered_set<std::string> defined;
  for (const auto& vi : graph.input())
    defined.insert(vi.name());
  for (const TensorProto& t : graph.initializer())
    defined.insert(t.name());
  for (const NodeProto& n : graph.node())
    for (const std::string& o : n.output())
      defined.insert(o);
  for (const auto& vi : graph.output())
    if (!defined.count(vi.name()))
      throw UserError(path + ": graph output '" + escapeName(vi.name()) +
                      "' is produced by no node and is no input or "
                      "initializer");
  checkElementTypes(graph, path);
  const std::string modelDir = dirOf(path);
  for (const TensorProto& t : graph.initializer()) {
    if (t.data_location() != TensorProto::EXTERNAL)
      continue;
    const std::string what =
        path + ": initializer '" + escapeName(t.name()) + "'";
    const uint64_t bytes = checkedTensorBytes(
        what, std::vector<int64_t>(t.dims().begin(), t.dims().end()),
        std::max<size_t>(1, elementSize(toDataType(t.data_type()))), limit);
    resolveExternal(t, modelDir, what, bytes);
  }
}

bool hasExternalData(const ModelProto& model) {
  for (const TensorProto& t : model.graph().initializer())
    if (t.data_location() == TensorProto::EXTERNAL)
      return true;
  return false;
}

} // namespace

std::unique_ptr<Graph> loadModel(const std::string& path,
                                 const LoadOptions& opts) {
  return loadModelBytes(InputFile(path).readAll(opts.maxBytes), path, opts);
}

std::unique_ptr<Graph> loadModelBytes(std::string bytes,
                                      const std::string& path,
                                      const LoadOptions& opts) {
  try {
    ModelProto model = parseModel(path, bytes);
    std::string sha = sha256Hex(bytes);
    bytes.clear();
    bytes.shrink_to_fit();

    int64_t opset = defaultOpset(model);
    if (opset == 0)
      throw UserError(path + ": the model imports no default-domain (ai.onnx) "
                             "opset");
    const int64_t latest =
        onnx::OpSchemaRegistry::DomainToVersionRange::Instance()
            .Map()
            .at(onnx::ONNX_DOMAIN)
            .second;
    if (opset > latest)
      throw UserError(path + ": the model imports opset " +
                      std::to_string(opset) +
                      " of the default domain; this exporter knows opsets up "
                      "to " +
                      std::to_string(latest));
    PreScan scan = preScan(model, opset);
    // (Opset conversion stops at unsupported nodes. The checker reads a
    // model with external data from its file, where no node is hidden.)
    const bool external = hasExternalData(model) && !endsWith(path, ".onnxtxt");
    if ((scan.anyHidden() && external) ||
        (opts.targetOpset != 0 && opts.targetOpset != opset))
      refuseScanned(model, path, opts, scan);
    try {
      checkGraphShape(model, path, opts.maxBytes);
    } catch (const UserError&) {
      refuseScanned(model, path, opts, scan);
      throw;
    }

    try {
      // The checker finds external data files relative to the model's
      // folder only when it reads the model itself.
      HiddenNodes hidden(model, scan.hide);
      if (external)
        onnx::checker::check_model(path);
      else
        onnx::checker::check_model(model);
    } catch (const std::exception& e) {
      // (Unsupported attributes are often what the checker trips on.)
      refuseScanned(model, path, opts, scan);
      throw UserError(path + ": invalid ONNX model: " + e.what());
    }

    if (opts.targetOpset != 0 && opts.targetOpset != opset) {
      if (opts.targetOpset < 7 || opts.targetOpset > latest)
        throw UserError(path + ": cannot convert to opset " +
                        std::to_string(opts.targetOpset) +
                        " (supported targets: 7 to " + std::to_string(latest) +
                        ")");
      try {
        // The adapters need shapes (Softmax 12 -> 13, for one).
        inferShapes(model, /*strict=*/false);
        model = onnx::version_conversion::ConvertVersion(
            model, static_cast<int>(opts.targetOpset));
      } catch (const std::exception& e) {
        throw UserError(path + ": cannot convert from opset " +
                        std::to_string(opset) + " to " +
                        std::to_string(opts.targetOpset) + ": " + e.what());
      }
      opset = defaultOpset(model);
      const std::string converted =
          path + " (converted to opset " + std::to_string(opset) + ")";
      scan = preScan(model, opset);
      if (scan.anyHidden() && external)
        refuseScanned(model, converted, opts, scan);
    }

    if (!opts.inputShape.empty()) {
      try {
        fixInputShape(model, path, opts.inputShapeName, opts.inputShape,
                      opts.inputShapeFrom);
      } catch (const UserError&) {
        if (!scan.anyRefused())
          throw;
        refuseScanned(model, path, opts, scan);
        throw;
      }
    }

    readSymbolicBatchAsOne(model);
    try {
      HiddenNodes hidden(model, scan.hide);
      inferShapes(model, /*strict=*/true);
    } catch (const std::exception& e) {
      // ONNX ends a list of node errors with a newline.
      std::string what = e.what();
      while (!what.empty() &&
             std::isspace(static_cast<unsigned char>(what.back())))
        what.pop_back();
      // An unsupported node ONNX cannot infer (an attribute out of range)
      // leaves its outputs of unknown shape: lowering reports it, and
      // nothing only downstream of it.
      bool inferred = false;
      if (scan.anyRefused()) {
        try {
          HiddenNodes hidden(model, scan.hide);
          inferShapes(model, /*strict=*/false);
          inferred = true;
        } catch (const std::exception&) {
        }
      }
      if (!inferred) {
        refuseScanned(model, path, opts, scan);
        throw UserError(path + ": shape inference failed: " + what);
      }
    }

    std::unique_ptr<Graph> g = buildGraph(model, scan, path, opts.maxBytes);
    g->source.path = path;
    g->maxTensorBytes = opts.maxBytes;
    g->source.sha256 = sha;
    g->source.producer = model.producer_name();
    if (!model.producer_version().empty())
      g->source.producer += " " + model.producer_version();
    g->source.opset = opset;
    g->source.graphName = model.graph().name();
    return g;
  } catch (const UserError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw UserError(path + ": out of memory while loading the model");
  } catch (const std::exception& e) {
    throw UserError(path + ": cannot load the model: " + e.what());
  }
}

} // namespace hpvm::fe
