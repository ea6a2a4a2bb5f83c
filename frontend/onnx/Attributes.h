// Attributes.h - typed, consumption-tracking access to a node's attributes.
#ifndef TORCH2HPVM_FRONTEND_ONNX_ATTRIBUTES_H
#define TORCH2HPVM_FRONTEND_ONNX_ATTRIBUTES_H

#include "ir/Graph.h"

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace hpvm::fe {

/// An attribute that is present but unusable (wrong type); the message is a
/// complete reason, e.g. "attribute 'group' must be an integer, not a string".
class AttrError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Reads attributes of one node with defaults, remembering which ones were
/// read, so that unread attributes can be reported (onnx-tensorrt's
/// OnnxAttrs with TVM's `ignores`). The frontend reads node attributes
/// through OpAttrs, which passes each attribute's one declared default.
class AttrReader {
public:
  explicit AttrReader(const std::map<std::string, AttrValue>& attrs)
      : attrs_(attrs) {}

  /// True if \p name is present (does not consume it).
  bool has(const std::string& name) const { return attrs_.count(name) != 0; }
  /// Integer attribute \p name, or \p def when absent.
  int64_t getInt(const std::string& name, int64_t def);
  /// Float attribute \p name (an integer is accepted), or \p def.
  double getFloat(const std::string& name, double def);
  /// String attribute \p name, or \p def.
  std::string getString(const std::string& name, const std::string& def);
  /// Integer list attribute \p name, or \p def.
  std::vector<int64_t> getInts(const std::string& name,
                               const std::vector<int64_t>& def);
  /// Float list attribute \p name, or \p def.
  std::vector<double> getFloats(const std::string& name,
                                const std::vector<double>& def);
  /// Tensor attribute \p name, or nullptr when absent.
  std::shared_ptr<const TensorData> getTensor(const std::string& name);
  /// Marks \p name as read without reading it.
  void consume(const std::string& name) { consumed_.insert(name); }

  /// Attributes that were neither read nor listed in \p ignored (a
  /// space-separated list, as Ops.def's IgnoredAttrs column), sorted.
  std::vector<std::string> unconsumed(const std::string& ignored) const;

private:
  const AttrValue* find(const std::string& name);

  const std::map<std::string, AttrValue>& attrs_;
  std::set<std::string> consumed_;
};

/// "[2, 2]": an integer list as shown in messages.
std::string formatInts(const std::vector<int64_t>& values);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_ONNX_ATTRIBUTES_H
