// GraphQueries.h - what the pass tests ask of a graph: its fixture
// models, its node kinds in order, the first node of a kind; and one edit
// (a scalar constant for an input).
#ifndef TORCH2HPVM_TESTS_FRONTEND_GRAPHQUERIES_H
#define TORCH2HPVM_TESTS_FRONTEND_GRAPHQUERIES_H

#include "ir/Graph.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace hpvm::fe::test {

/// The path of fixture model test_frontend/models/NAME.onnxtxt.
inline std::string fixture(const std::string& name) {
  return std::string(HPVM_SOURCE_DIR) + "/test_frontend/models/" + name +
         ".onnxtxt";
}

/// The kinds of \p g's nodes, in order.
inline std::vector<OpKind> kindsOf(const Graph& g) {
  std::vector<OpKind> kinds;
  for (const auto& n : g.nodes())
    kinds.push_back(n->kind);
  return kinds;
}

/// Makes input \p i of \p n a new float constant scalar \p v.
inline void setScalarInput(Graph& g, Node* n, size_t i, float v) {
  auto t = std::make_shared<TensorData>();
  t->dtype = DataType::Float;
  t->bytes.resize(sizeof v);
  std::memcpy(t->bytes.data(), &v, sizeof v);
  Value* c = g.addConstant("scalar", t);
  auto& users = n->inputs[i]->users;
  users.erase(std::find(users.begin(), users.end(), n));
  n->inputs[i] = c;
  c->users.push_back(n);
}

/// The first node of kind \p k, or null.
inline const Node* firstOf(const Graph& g, OpKind k) {
  for (const auto& n : g.nodes())
    if (n->kind == k)
      return n.get();
  return nullptr;
}

} // namespace hpvm::fe::test

#endif // TORCH2HPVM_TESTS_FRONTEND_GRAPHQUERIES_H
