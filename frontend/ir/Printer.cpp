// Printer.cpp - the IR as text (--dump-ir), one line per node, and the
// formatting of shapes, scalars and producers.
#include "ir/Printer.h"

#include "support/Diagnostics.h"

#include "hpvm_rt/OpFacts.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <unordered_map>

namespace hpvm::fe {

namespace {

/// Shortest "%.Ng" form of \p v that reads back exactly.
std::string formatReal(double v) {
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  return buf;
}

std::string formatAttr(const AttrValue& v) {
  struct Visitor {
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return formatReal(d); }
    std::string operator()(const std::string& s) const {
      return "'" + escapeName(s) + "'";
    }
    std::string operator()(const std::vector<int64_t>& l) const {
      std::string s = "[";
      for (size_t i = 0; i < l.size(); ++i)
        s += (i ? " " : "") + std::to_string(l[i]);
      return s + "]";
    }
    std::string operator()(const std::vector<double>& l) const {
      std::string s = "[";
      for (size_t i = 0; i < l.size(); ++i)
        s += (i ? " " : "") + formatReal(l[i]);
      return s + "]";
    }
    std::string operator()(const std::shared_ptr<const TensorData>& t) const {
      return "tensor " + formatShape(t->dims);
    }
  };
  return std::visit(Visitor{}, v);
}

/// The bracketed operand list of an HPVM node: "pads 2 2 strides 1 1"
/// (labels from Ops.def's ScalarNames).
std::string formatScalars(const Node& n) {
  const std::vector<std::string> labels =
      hpvm::rt::scalarLabels(hpvm::rt::kOpFacts[static_cast<int>(n.kind)]);
  std::string s;
  for (size_t i = 0; i < n.scalars.size(); ++i) {
    if (!s.empty())
      s += " ";
    if (i < labels.size() && !labels[i].empty())
      s += labels[i] + " ";
    s += formatScalar(n.scalars[i]);
  }
  return s;
}

} // namespace

std::string formatShape(const std::vector<int64_t>& shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") +
         (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  return s;
}

std::string formatScalar(const Scalar& s) {
  return s.isInteger ? std::to_string(s.i) : formatReal(s.d);
}

std::string dumpIr(const Graph& g) {
  std::unordered_map<const Value*, size_t> number;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    number[g.nodes()[i]->output] = i + 1;
  auto name = [&](const Value* v) {
    auto it = number.find(v);
    if (it != number.end())
      return "%" + std::to_string(it->second);
    return "%" + (v->name.empty() ? std::string("const") : escapeName(v->name));
  };

  std::ostringstream out;
  for (const auto& node : g.nodes()) {
    const Node& n = *node;
    out << name(n.output) << " = " << opKindName(n.kind) << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i)
      out << (i ? ", " : "") << name(n.inputs[i]) << ": "
          << formatShape(n.inputs[i]->shape);
    out << ") -> " << formatShape(n.output->shape);
    std::string extra;
    if (isHpvmOp(n.kind)) {
      extra = formatScalars(n);
    } else {
      for (const auto& [key, value] : n.attrs)
        extra += (extra.empty() ? "" : " ") + key + "=" + formatAttr(value);
    }
    if (!extra.empty())
      out << "  [" << extra << "]";
    if (!n.origins.empty()) {
      out << "  #";
      for (size_t i = 0; i < n.origins.size(); ++i) {
        const Origin& o = n.origins[i];
        out << (i ? ", " : " ")
            << (o.name.empty() ? "#" + std::to_string(o.index)
                               : escapeName(o.name));
      }
    }
    out << "\n";
  }
  for (const GraphOutput& o : g.outputs)
    out << "return " << name(o.value) << ": " << formatShape(o.value->shape)
        << "\n";
  return out.str();
}

std::string describeProducer(const Value* v) {
  if (v->producer == nullptr)
    return v->isConstant() ? "a constant" : "the graph input";
  const Origin& o = v->producer->origins.front();
  return "node '" + escapeName(o.name) + "' (" + escapeName(o.opType) + ")";
}

double shortestFloat(float f) {
  char buf[32];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, static_cast<double>(f));
    if (std::strtof(buf, nullptr) == f)
      return std::strtod(buf, nullptr);
  }
  return static_cast<double>(f);
}

} // namespace hpvm::fe
