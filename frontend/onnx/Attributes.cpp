// Attributes.cpp - typed attribute reader with consumption tracking.
#include "onnx/Attributes.h"

#include <sstream>

namespace hpvm::fe {

namespace {

/// "an integer", "a string", ...: the kind of value \p v holds.
const char* kindOf(const AttrValue& v) {
  switch (v.index()) {
  case 0:
    return "an integer";
  case 1:
    return "a float";
  case 2:
    return "a string";
  case 3:
    return "a list of integers";
  case 4:
    return "a list of floats";
  default:
    return "a tensor";
  }
}

[[noreturn]] void wrongType(const std::string& name, const char* expected,
                            const AttrValue& v) {
  throw AttrError("attribute '" + name + "' must be " + expected + ", not " +
                  kindOf(v));
}

} // namespace

const AttrValue* AttrReader::find(const std::string& name) {
  consumed_.insert(name);
  auto it = attrs_.find(name);
  return it == attrs_.end() ? nullptr : &it->second;
}

int64_t AttrReader::getInt(const std::string& name, int64_t def) {
  const AttrValue* v = find(name);
  if (v == nullptr)
    return def;
  if (const auto* i = std::get_if<int64_t>(v))
    return *i;
  wrongType(name, "an integer", *v);
}

double AttrReader::getFloat(const std::string& name, double def) {
  const AttrValue* v = find(name);
  if (v == nullptr)
    return def;
  if (const auto* d = std::get_if<double>(v))
    return *d;
  if (const auto* i = std::get_if<int64_t>(v))
    return static_cast<double>(*i);
  wrongType(name, "a float", *v);
}

std::string AttrReader::getString(const std::string& name,
                                  const std::string& def) {
  const AttrValue* v = find(name);
  if (v == nullptr)
    return def;
  if (const auto* s = std::get_if<std::string>(v))
    return *s;
  wrongType(name, "a string", *v);
}

std::vector<int64_t> AttrReader::getInts(const std::string& name,
                                         const std::vector<int64_t>& def) {
  const AttrValue* v = find(name);
  if (v == nullptr)
    return def;
  if (const auto* l = std::get_if<std::vector<int64_t>>(v))
    return *l;
  wrongType(name, "a list of integers", *v);
}

std::vector<double> AttrReader::getFloats(const std::string& name,
                                          const std::vector<double>& def) {
  const AttrValue* v = find(name);
  if (v == nullptr)
    return def;
  if (const auto* l = std::get_if<std::vector<double>>(v))
    return *l;
  if (const auto* l = std::get_if<std::vector<int64_t>>(v))
    return std::vector<double>(l->begin(), l->end());
  wrongType(name, "a list of floats", *v);
}

std::shared_ptr<const TensorData>
AttrReader::getTensor(const std::string& name) {
  const AttrValue* v = find(name);
  if (v == nullptr)
    return nullptr;
  if (const auto* t = std::get_if<std::shared_ptr<const TensorData>>(v))
    return *t;
  wrongType(name, "a tensor", *v);
}

std::vector<std::string>
AttrReader::unconsumed(const std::string& ignored) const {
  std::set<std::string> ignoredSet;
  std::istringstream words(ignored);
  for (std::string word; words >> word;)
    ignoredSet.insert(word);
  std::vector<std::string> out;
  for (const auto& [name, value] : attrs_)
    if (!consumed_.count(name) && !ignoredSet.count(name))
      out.push_back(name);
  return out;
}

std::string formatInts(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i != 0)
      out += ", ";
    out += std::to_string(values[i]);
  }
  return out + "]";
}

} // namespace hpvm::fe
