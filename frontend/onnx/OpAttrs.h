// OpAttrs.h - the attributes each accepted ONNX operator reads (name, type,
// default), declared once, and the reader the pre-scan and the passes share.
#ifndef TORCH2HPVM_FRONTEND_ONNX_OPATTRS_H
#define TORCH2HPVM_FRONTEND_ONNX_OPATTRS_H

#include "ir/Graph.h"
#include "onnx/Attributes.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hpvm::fe {

/// The type an attribute is read as (and the AttrValue alternative its
/// default holds).
enum class AttrType { Int, Float, String, Ints, Floats, Tensor };

/// One attribute an ONNX operator reads, with its default. Where ONNX
/// requires the attribute or gives it no default, the default is a value the
/// readers treat as "absent" (an empty list, a null tensor), or one that
/// means what absence means (Shape's end: INT64_MAX, clamped to the rank).
struct AttrDecl {
  const char* name; ///< Attribute name, as in the ONNX schema.
  AttrType type;    ///< How it is read.
  AttrValue def;    ///< Value when absent.
  /// From this opset on the default is newDef instead (0: never). Softmax's
  /// axis is 1 before opset 13 and -1 from 13 on.
  int64_t newDefOpset = 0;
  AttrValue newDef = int64_t{0};
};

/// The attributes ONNX-level kind \p kind reads, the only ones the pre-scan
/// accepts besides the row's IgnoredAttrs; empty for HPVM kinds.
const std::vector<AttrDecl>& attrDecls(OpKind kind);

/// The attribute naming which output of a multi-output ONNX node a node the
/// loader made computes: DynamicQuantizeLinear's scale (1) and zero point
/// (2), 0 (absent) its quantized output; the output of a Split it could not
/// place along the axis yet (SplitOutputs.h).
inline constexpr const char* kOutputIndex = "torch2hpvm.output";
/// How many outputs that Split has.
inline constexpr const char* kSplitOutputs = "torch2hpvm.outputs";

/// Reads the attributes of one ONNX-level node against attrDecls(): the
/// accessors take only a name and return the value, or the declared default
/// for the model's opset, so no caller can hold a default of its own. Reading
/// an undeclared attribute, or as another type than declared, is a bug
/// (HPVM_ASSERT); a present value of the wrong type throws AttrError.
class OpAttrs {
public:
  /// A reader of \p attrs, the attributes of a node of kind \p kind in a
  /// model of default-domain opset \p opset.
  OpAttrs(OpKind kind, const std::map<std::string, AttrValue>& attrs,
          int64_t opset);
  /// A reader of node \p n's attributes.
  OpAttrs(const Node& n, int64_t opset) : OpAttrs(n.kind, n.attrs, opset) {}

  /// True if declared attribute \p name is present.
  bool has(const char* name) const;
  /// Declared Int attribute \p name.
  int64_t getInt(const char* name);
  /// Declared Float attribute \p name (an integer value is accepted).
  double getFloat(const char* name);
  /// Declared String attribute \p name.
  std::string getString(const char* name);
  /// Declared Ints attribute \p name.
  std::vector<int64_t> getInts(const char* name);
  /// Declared Floats attribute \p name.
  std::vector<double> getFloats(const char* name);
  /// Declared Tensor attribute \p name (nullptr when absent).
  std::shared_ptr<const TensorData> getTensor(const char* name);

  /// Reads every declared attribute, as the pre-scan does: afterwards all of
  /// them count as read. Returns one reason per present value of the wrong
  /// type, in declaration order.
  std::vector<std::string> readAll();
  /// Present attributes that are neither declared nor listed in \p ignored
  /// (space-separated), sorted; valid after readAll().
  std::vector<std::string> unconsumed(const std::string& ignored) const {
    return reader_.unconsumed(ignored);
  }

private:
  /// The declaration of \p name, asserting that it exists with type \p type.
  const AttrDecl& decl(const char* name, AttrType type) const;
  /// The default of \p d at this reader's opset.
  const AttrValue& defaultOf(const AttrDecl& d) const;

  OpKind kind_;
  int64_t opset_;
  AttrReader reader_;
};

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_ONNX_OPATTRS_H
