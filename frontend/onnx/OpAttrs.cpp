// OpAttrs.cpp - the attribute declarations of every accepted ONNX operator
// and the reader that applies them.
#include "onnx/OpAttrs.h"

#include "support/Diagnostics.h"

#include <cstring>
#include <limits>

namespace hpvm::fe {

namespace {

using Ints = std::vector<int64_t>;
using Decls = std::vector<AttrDecl>;

AttrDecl intAttr(const char* name, int64_t def) {
  return {name, AttrType::Int, def};
}
AttrDecl floatAttr(const char* name, double def) {
  return {name, AttrType::Float, def};
}
AttrDecl stringAttr(const char* name, const char* def) {
  return {name, AttrType::String, std::string(def)};
}
AttrDecl intsAttr(const char* name, Ints def) {
  return {name, AttrType::Ints, std::move(def)};
}
AttrDecl floatsAttr(const char* name) {
  return {name, AttrType::Floats, std::vector<double>{}};
}
AttrDecl tensorAttr(const char* name) {
  return {name, AttrType::Tensor, std::shared_ptr<const TensorData>()};
}
/// \p d whose default becomes \p def from opset \p opset on.
AttrDecl changedAt(AttrDecl d, int64_t opset, AttrValue def) {
  d.newDefOpset = opset;
  d.newDef = std::move(def);
  return d;
}

constexpr double Inf = std::numeric_limits<double>::infinity();

} // namespace

const std::vector<AttrDecl>& attrDecls(OpKind kind) {
  static const Decls none;
  // Window defaults are those of the 2-D windows torch2hpvm supports.
  switch (kind) {
  case OpKind::OnnxConv: {
    static const Decls decls = {
        stringAttr("auto_pad", "NOTSET"),
        intsAttr("dilations", {1, 1}),
        intAttr("group", 1),
        intsAttr("kernel_shape", {}), // absent: the weight's spatial dims
        intsAttr("pads", {0, 0, 0, 0}),
        intsAttr("strides", {1, 1}),
    };
    return decls;
  }
  case OpKind::OnnxConvTranspose: {
    static const Decls decls = {
        stringAttr("auto_pad", "NOTSET"),
        intsAttr("dilations", {1, 1}),
        intAttr("group", 1),
        intsAttr("kernel_shape", {}), // absent: the weight's spatial dims
        intsAttr("output_padding", {0, 0}),
        intsAttr("output_shape", {}),
        intsAttr("pads", {0, 0, 0, 0}),
        intsAttr("strides", {1, 1}),
    };
    return decls;
  }
  case OpKind::OnnxGemm: {
    static const Decls decls = {
        floatAttr("alpha", 1.0), floatAttr("beta", 1.0),
        intAttr("broadcast", 0), // opset < 7
        intAttr("transA", 0),    intAttr("transB", 0),
    };
    return decls;
  }
  case OpKind::OnnxMaxPool: {
    static const Decls decls = {
        stringAttr("auto_pad", "NOTSET"),
        intAttr("ceil_mode", 0),
        intsAttr("dilations", {1, 1}),
        intsAttr("kernel_shape", {}), // required by ONNX
        intsAttr("pads", {0, 0, 0, 0}),
        intsAttr("strides", {1, 1}),
    };
    return decls;
  }
  case OpKind::OnnxAveragePool: {
    static const Decls decls = {
        stringAttr("auto_pad", "NOTSET"),
        intAttr("ceil_mode", 0),
        intAttr("count_include_pad", 0),
        intsAttr("kernel_shape", {}), // required by ONNX
        intsAttr("pads", {0, 0, 0, 0}),
        intsAttr("strides", {1, 1}),
    };
    return decls;
  }
  case OpKind::OnnxAdd:
  case OpKind::OnnxSub:
  case OpKind::OnnxDiv:
  case OpKind::OnnxMul: {
    // Legacy broadcast (opset < 7); axis has no default and is read only
    // when present.
    static const Decls decls = {
        intAttr("axis", 0),
        intAttr("broadcast", 0),
    };
    return decls;
  }
  case OpKind::OnnxBatchNormalization: {
    static const Decls decls = {
        floatAttr("epsilon", 1e-5),
        // Absent means training mode before opset 7, which dropped it
        // (inference only).
        changedAt(intAttr("is_test", 0), 7, int64_t{1}),
        intAttr("training_mode", 0),
    };
    return decls;
  }
  case OpKind::OnnxClip: {
    // Attributes before opset 11, inputs from 11 on; absent means unbounded.
    static const Decls decls = {
        floatAttr("min", -Inf),
        floatAttr("max", Inf),
    };
    return decls;
  }
  case OpKind::OnnxSoftmax:
  case OpKind::OnnxLogSoftmax: {
    static const Decls decls = {changedAt(intAttr("axis", 1), 13, int64_t{-1})};
    return decls;
  }
  case OpKind::OnnxFlatten: {
    static const Decls decls = {intAttr("axis", 1)};
    return decls;
  }
  case OpKind::OnnxReshape: {
    // Opset < 5; the shape is input 1 from opset 5 on.
    static const Decls decls = {intsAttr("shape", {})};
    return decls;
  }
  case OpKind::OnnxDropout: {
    static const Decls decls = {floatAttr("ratio", 0.5)};
    return decls;
  }
  case OpKind::OnnxResize: {
    static const Decls decls = {
        intAttr("antialias", 0),
        intsAttr("axes", {}),
        stringAttr("coordinate_transformation_mode", "half_pixel"),
        floatAttr("cubic_coeff_a", -0.75),
        intAttr("exclude_outside", 0),
        floatAttr("extrapolation_value", 0.0),
        stringAttr("keep_aspect_ratio_policy", "stretch"),
        stringAttr("mode", "nearest"),
        stringAttr("nearest_mode", "round_prefer_floor"),
    };
    return decls;
  }
  case OpKind::OnnxUpsample: {
    static const Decls decls = {
        stringAttr("mode", "nearest"),
        floatsAttr("scales"), // opset 7-8; an input from 9 on
    };
    return decls;
  }
  case OpKind::OnnxPad: {
    // pads (opset 2-10) or paddings (opset 1), required; inputs from 11 on.
    static const Decls decls = {
        stringAttr("mode", "constant"),
        intsAttr("pads", {}),
        intsAttr("paddings", {}),
        floatAttr("value", 0.0),
    };
    return decls;
  }
  case OpKind::OnnxConstant: {
    // Exactly one is present; the others are read only when present.
    static const Decls decls = {
        tensorAttr("value"),        floatAttr("value_float", 0.0),
        floatsAttr("value_floats"), intAttr("value_int", 0),
        intsAttr("value_ints", {}), stringAttr("value_string", ""),
    };
    return decls;
  }
  case OpKind::OnnxShape: {
    static const Decls decls = {
        intAttr("start", 0),
        intAttr("end", std::numeric_limits<int64_t>::max()), // the rank
    };
    return decls;
  }
  case OpKind::OnnxGather: {
    static const Decls decls = {intAttr("axis", 0)};
    return decls;
  }
  case OpKind::OnnxUnsqueeze:
  case OpKind::OnnxSqueeze: {
    // Opset < 13; input 1 from 13 on. Squeeze without axes drops every
    // dimension of size 1.
    static const Decls decls = {intsAttr("axes", {})};
    return decls;
  }
  case OpKind::OnnxConcat: {
    // Required from opset 4 on; Concat-1 defaults to 1.
    static const Decls decls = {intAttr("axis", 1)};
    return decls;
  }
  case OpKind::OnnxCast: {
    // Required; 0 (UNDEFINED) is never folded.
    static const Decls decls = {intAttr("to", 0)};
    return decls;
  }
  case OpKind::OnnxConstantOfShape: {
    // Absent: a float 0.
    static const Decls decls = {tensorAttr("value")};
    return decls;
  }
  case OpKind::OnnxMod: {
    static const Decls decls = {intAttr("fmod", 0)};
    return decls;
  }
  case OpKind::OnnxScatterND: {
    // Opset 16 on; only "none" folds.
    static const Decls decls = {stringAttr("reduction", "none")};
    return decls;
  }
  case OpKind::OnnxLayerNormalization: {
    static const Decls decls = {intAttr("axis", -1),
                                floatAttr("epsilon", 1e-5)};
    return decls;
  }
  case OpKind::OnnxTranspose: {
    // Absent: the dims reversed.
    static const Decls decls = {intsAttr("perm", {})};
    return decls;
  }
  case OpKind::OnnxSplit: {
    // The sizes: the attribute before opset 13, input 1 from 13 on; none:
    // an even split. The loader's own two (SplitOutputs.h) on the nodes it
    // makes of outputs it could not place yet.
    static const Decls decls = {intAttr("axis", 0), intsAttr("split", {}),
                                intAttr(kOutputIndex, 0),
                                intAttr(kSplitOutputs, 0)};
    return decls;
  }
  case OpKind::OnnxSlice: {
    // Opset < 10; inputs from 10 on (with steps).
    static const Decls decls = {intsAttr("starts", {}), intsAttr("ends", {}),
                                intsAttr("axes", {})};
    return decls;
  }
  case OpKind::OnnxHardSigmoid: {
    static const Decls decls = {floatAttr("alpha", 0.2),
                                floatAttr("beta", 0.5)};
    return decls;
  }
  case OpKind::OnnxLeakyRelu: {
    static const Decls decls = {floatAttr("alpha", 0.01)};
    return decls;
  }
  case OpKind::OnnxReduceMean: {
    // Absent axes: every axis (refused during lowering).
    static const Decls decls = {intsAttr("axes", {}), intAttr("keepdims", 1)};
    return decls;
  }
  case OpKind::OnnxQuantizeLinear: {
    static const Decls decls = {intAttr("axis", 1), intAttr("block_size", 0),
                                intAttr("output_dtype", 0)};
    return decls;
  }
  case OpKind::OnnxDequantizeLinear: {
    static const Decls decls = {intAttr("axis", 1), intAttr("block_size", 0)};
    return decls;
  }
  case OpKind::OnnxQLinearConv:
  case OpKind::OnnxConvInteger:
    return attrDecls(OpKind::OnnxConv);
  case OpKind::OnnxDynamicQuantizeLinear: {
    static const Decls decls = {intAttr(kOutputIndex, 0)};
    return decls;
  }
  case OpKind::OnnxMatMulInteger:
  case OpKind::OnnxQLinearMatMul:
  case OpKind::OnnxMatMul:
  case OpKind::OnnxPow:
  case OpKind::OnnxSqrt:
  case OpKind::OnnxErf:
  case OpKind::OnnxGlobalAveragePool:
  case OpKind::OnnxRelu:
  case OpKind::OnnxMax:
  case OpKind::OnnxSum:
  case OpKind::OnnxMin:
  case OpKind::OnnxTanh:
  case OpKind::OnnxSigmoid:
  case OpKind::OnnxHardSwish:
  case OpKind::OnnxIdentity:
  case OpKind::OnnxEqual:
  case OpKind::OnnxWhere:
  case OpKind::OnnxExpand:
  case OpKind::OnnxNot:
  case OpKind::OnnxRange:
  case OpKind::Refused: // (its attributes were not read)
    return none;
    // HPVM kinds carry scalars, not attributes.
#define HPVM_OP(Kind, ...) case OpKind::Kind:
#include "hpvm_rt/Ops.def"
    return none;
  }
  HPVM_UNREACHABLE("attrDecls of an invalid OpKind");
}

OpAttrs::OpAttrs(OpKind kind, const std::map<std::string, AttrValue>& attrs,
                 int64_t opset)
    : kind_(kind), opset_(opset), reader_(attrs) {}

const AttrDecl& OpAttrs::decl(const char* name, AttrType type) const {
  for (const AttrDecl& d : attrDecls(kind_))
    if (std::strcmp(d.name, name) == 0) {
      HPVM_ASSERT(d.type == type, std::string(opKindName(kind_)) +
                                      " attribute '" + name +
                                      "' read as another type than declared");
      return d;
    }
  HPVM_UNREACHABLE(std::string(opKindName(kind_)) + " reads attribute '" +
                   name + "', which attrDecls() does not declare");
}

const AttrValue& OpAttrs::defaultOf(const AttrDecl& d) const {
  return d.newDefOpset != 0 && opset_ >= d.newDefOpset ? d.newDef : d.def;
}

bool OpAttrs::has(const char* name) const {
  for (const AttrDecl& d : attrDecls(kind_))
    if (std::strcmp(d.name, name) == 0)
      return reader_.has(name);
  HPVM_UNREACHABLE(std::string(opKindName(kind_)) + " asks for attribute '" +
                   name + "', which attrDecls() does not declare");
}

int64_t OpAttrs::getInt(const char* name) {
  const AttrDecl& d = decl(name, AttrType::Int);
  return reader_.getInt(name, std::get<int64_t>(defaultOf(d)));
}

double OpAttrs::getFloat(const char* name) {
  const AttrDecl& d = decl(name, AttrType::Float);
  return reader_.getFloat(name, std::get<double>(defaultOf(d)));
}

std::string OpAttrs::getString(const char* name) {
  const AttrDecl& d = decl(name, AttrType::String);
  return reader_.getString(name, std::get<std::string>(defaultOf(d)));
}

std::vector<int64_t> OpAttrs::getInts(const char* name) {
  const AttrDecl& d = decl(name, AttrType::Ints);
  return reader_.getInts(name, std::get<std::vector<int64_t>>(defaultOf(d)));
}

std::vector<double> OpAttrs::getFloats(const char* name) {
  const AttrDecl& d = decl(name, AttrType::Floats);
  return reader_.getFloats(name, std::get<std::vector<double>>(defaultOf(d)));
}

std::shared_ptr<const TensorData> OpAttrs::getTensor(const char* name) {
  decl(name, AttrType::Tensor);
  // A tensor attribute has no default value: absent reads as nullptr.
  return reader_.getTensor(name);
}

std::vector<std::string> OpAttrs::readAll() {
  std::vector<std::string> reasons;
  for (const AttrDecl& d : attrDecls(kind_)) {
    try {
      switch (d.type) {
      case AttrType::Int:
        getInt(d.name);
        break;
      case AttrType::Float:
        getFloat(d.name);
        break;
      case AttrType::String:
        getString(d.name);
        break;
      case AttrType::Ints:
        getInts(d.name);
        break;
      case AttrType::Floats:
        getFloats(d.name);
        break;
      case AttrType::Tensor:
        getTensor(d.name);
        break;
      }
    } catch (const AttrError& e) {
      reasons.push_back(e.what());
    }
  }
  return reasons;
}

} // namespace hpvm::fe
