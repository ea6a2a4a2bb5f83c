// Dataflow.cpp - HPVM-C graph capture and dataflow execution: node
// creation, bindIn/bindOut/edge wiring, wiring checks, topological
// execution with nesting, __hpvm__return, and launch (packed root struct in,
// root outputs written after it).
#include "Executor.h"
#include "base/Errors.h"
#include "hpvm.h"
#include "tensor_runtime.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <unordered_map>

namespace hpvm::rt {

namespace {

using api::FnSig;
using api::TypeDesc;
using api::Value;
using api::ValueKind;

/// Where a child parameter's value comes from.
struct Source {
  enum Kind : uint8_t { Unbound, Parent, Edge } kind = Unbound;
  int node = -1;    ///< Edge: source child index.
  unsigned pos = 0; ///< Parent parameter or source output field.
  const char* file = "";
  int line = 0;
};

/// One child node created by the node function being executed.
struct Child {
  api::AnyFn fn;
  const FnSig* sig;
  const std::string* name; ///< Interned (see internName).
  const char* file;
  int line;
  std::vector<Source> in;
  std::vector<Value> outputs;
};

/// A parent output field bound by __hpvm__bindOut.
struct OutBind {
  bool set = false;
  int child = -1;
  unsigned childPos = 0;
  const char* file = "";
  int line = 0;
};

/// One node function being executed.
struct Frame {
  const std::string* name;
  const FnSig* sig;
  std::vector<Child> children;
  std::vector<OutBind> outBinds;
  bool returned = false;
  std::vector<Value> returnValues;
  uintptr_t firstHandle = 0;
  LeafContext leaf;
};

/// State of the launch in progress.
struct LaunchState {
  bool active = false;
  std::vector<Frame*> frames;
  uintptr_t nextHandle = 1;
};

LaunchState& state() {
  static LaunchState s;
  return s;
}

std::string typeName(const TypeDesc* t) {
  switch (t->kind) {
  case ValueKind::Pointer:
    return "pointer";
  case ValueKind::Float:
    return t->size == 4 ? "float" : "double";
  case ValueKind::Integer:
    break;
  }
  return std::to_string(t->size) + "-byte integer";
}

bool sameType(const TypeDesc* a, const TypeDesc* b) {
  return a->kind == b->kind && a->size == b->size;
}

std::string at(const char* file, int line) {
  return std::string(file) + ":" + std::to_string(line);
}

/// The node function name in the source text of createNodeND's arguments.
std::string nameFromText(const char* text) {
  std::string s(text);
  size_t comma = s.find(',');
  if (comma != std::string::npos)
    s.resize(comma);
  auto isJunk = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '&' || c == '(' ||
           c == ')';
  };
  while (!s.empty() && isJunk(s.back()))
    s.pop_back();
  size_t start = 0;
  while (start < s.size() && isJunk(s[start]))
    ++start;
  return s.substr(start);
}

/// The node function name of a createNodeND call site, computed once per
/// site (\p text is a string literal).
const std::string* internName(const char* text) {
  static std::unordered_map<const char*, std::string> names;
  auto it = names.find(text);
  if (it == names.end())
    it = names.emplace(text, nameFromText(text)).first;
  return &it->second;
}

Frame& currentFrame(const char* call, const char* file, int line) {
  LaunchState& st = state();
  if (!st.active || st.frames.empty())
    throw UserError(at(file, line) + ": " + call +
                    " called outside a node function of a launch");
  return *st.frames.back();
}

/// The child of the current frame a node handle names.
Child& childOf(Frame& f, void* handle, const char* call, const char* file,
               int line) {
  auto h = reinterpret_cast<uintptr_t>(handle);
  if (h < f.firstHandle || h - f.firstHandle >= f.children.size())
    throw UserError(
        at(file, line) + ": " + call + ": the node handle was not created by " +
        *f.name +
        " (handles are valid only in the node function that created "
        "them)");
  return f.children[h - f.firstHandle];
}

std::string childText(const Child& c) {
  return *c.name + " (created at " + at(c.file, c.line) + ")";
}

/// Runs a node function on \p args; its outputs land in \p outputs.
void runNode(const std::string& name, api::AnyFn fn, const FnSig* sig,
             const Value* args, std::vector<Value>& outputs);

/// Checks the wiring recorded by frame \p f, orders its children
/// topologically and runs them; fills \p outputs from the bindOuts.
void runChildren(Frame& f, const Value* args, std::vector<Value>& outputs) {
  std::vector<Child>& kids = f.children;
  size_t n = kids.size();
  // Every input bound; count edges for the topological order.
  // (Successors in one array, node s's at succ[first[s]..first[s + 1]):
  // this runs on every launch.)
  std::vector<int> pending(n, 0), first(n + 1, 0);
  for (size_t c = 0; c < n; ++c)
    for (size_t p = 0; p < kids[c].in.size(); ++p) {
      const Source& s = kids[c].in[p];
      if (s.kind == Source::Unbound)
        throw UserError("parameter " + std::to_string(p) + " of " +
                        childText(kids[c]) +
                        " is never bound (by __hpvm__bindIn or "
                        "__hpvm__edge in " +
                        *f.name + ")");
      if (s.kind == Source::Edge) {
        ++pending[c];
        ++first[s.node + 1];
      }
    }
  for (size_t c = 0; c < n; ++c)
    first[c + 1] += first[c];
  std::vector<int> succ(first[n]), filled(first.begin(), first.end() - 1);
  for (size_t c = 0; c < n; ++c)
    for (const Source& s : kids[c].in)
      if (s.kind == Source::Edge)
        succ[filled[s.node]++] = static_cast<int>(c);
  // Output fields bound without gaps.
  for (size_t o = 0; o < f.outBinds.size(); ++o)
    if (!f.outBinds[o].set)
      throw UserError("output " + std::to_string(o) + " of " + *f.name +
                      " is never bound (__hpvm__bindOut binds output " +
                      std::to_string(f.outBinds.size() - 1) + ")");
  // Kahn's algorithm, lowest creation index first.
  std::vector<int> order;
  order.reserve(n);
  std::vector<int> ready;
  for (size_t c = n; c-- > 0;)
    if (!pending[c])
      ready.push_back(static_cast<int>(c));
  while (!ready.empty()) {
    auto it = std::min_element(ready.begin(), ready.end());
    int c = *it;
    ready.erase(it);
    order.push_back(c);
    for (int i = first[c]; i < first[c + 1]; ++i)
      if (--pending[succ[i]] == 0)
        ready.push_back(succ[i]);
  }
  if (order.size() != n) {
    // Walk backwards along unfinished edges until a node repeats.
    int c = 0;
    while (!pending[c])
      ++c;
    std::vector<int> path;
    std::vector<int> seen(n, -1);
    while (seen[c] < 0) {
      seen[c] = static_cast<int>(path.size());
      path.push_back(c);
      for (const Source& s : kids[c].in)
        if (s.kind == Source::Edge && pending[s.node]) {
          c = s.node;
          break;
        }
    }
    std::string text;
    for (size_t i = path.size(); i-- > static_cast<size_t>(seen[c]);)
      text += *kids[path[i]].name + " -> ";
    throw UserError("cycle among the children of " + *f.name + ": " + text +
                    *kids[path.back()].name);
  }
  // Run in order.
  std::vector<Value> childArgs;
  for (int c : order) {
    Child& k = kids[c];
    childArgs.assign(k.in.size(), Value{});
    for (size_t p = 0; p < k.in.size(); ++p) {
      const Source& s = k.in[p];
      if (s.kind == Source::Parent) {
        childArgs[p] = args[s.pos];
        continue;
      }
      const Child& src = kids[s.node];
      if (s.pos >= src.outputs.size())
        throw UserError(at(s.file, s.line) + ": __hpvm__edge reads output " +
                        std::to_string(s.pos) + " of " + *src.name +
                        ", which has " + std::to_string(src.outputs.size()) +
                        " output(s)");
      const Value& v = src.outputs[s.pos];
      if (!sameType(v.type, k.sig->params[p]))
        throw UserError(at(s.file, s.line) + ": type mismatch: output " +
                        std::to_string(s.pos) + " of " + *src.name + " (" +
                        typeName(v.type) + ") feeds parameter " +
                        std::to_string(p) + " of " + *k.name + " (" +
                        typeName(k.sig->params[p]) + ")");
      childArgs[p] = v;
    }
    runNode(*k.name, k.fn, k.sig, childArgs.data(), k.outputs);
  }
  outputs.clear();
  for (const OutBind& b : f.outBinds) {
    const Child& k = kids[b.child];
    if (b.childPos >= k.outputs.size())
      throw UserError(at(b.file, b.line) + ": __hpvm__bindOut reads output " +
                      std::to_string(b.childPos) + " of " + *k.name +
                      ", which has " + std::to_string(k.outputs.size()) +
                      " output(s)");
    outputs.push_back(k.outputs[b.childPos]);
  }
}

void runNode(const std::string& name, api::AnyFn fn, const FnSig* sig,
             const Value* args, std::vector<Value>& outputs) {
  LaunchState& st = state();
  Frame f;
  f.name = &name;
  f.sig = sig;
  f.firstHandle = st.nextHandle;
  f.leaf.name = &name;
  st.frames.push_back(&f);
  sig->invoke(fn, args);
  st.frames.pop_back();
  if (f.children.empty()) {
    outputs = std::move(f.returnValues);
    return;
  }
  if (f.returned)
    throw UserError(name +
                    " both creates child nodes and calls __hpvm__return (an "
                    "internal node's outputs come from __hpvm__bindOut)");
  if (f.leaf.leafIndex >= 0)
    throw UserError(name +
                    " both creates child nodes and calls tensor operations "
                    "(tensor operations belong in leaf nodes)");
  runChildren(f, args, outputs);
}

/// Resets the launch state on every exit path.
struct LaunchGuard {
  bool done = false;
  ~LaunchGuard() {
    LaunchState& st = state();
    st.active = false;
    st.frames.clear();
    if (!done)
      traceAbort();
  }
};

} // namespace

LeafContext* currentLeafContext() {
  LaunchState& st = state();
  if (!st.active || st.frames.empty())
    return nullptr;
  return &st.frames.back()->leaf;
}

namespace api {

void* createNode(const char* file, int line, const char* text, unsigned dims,
                 unsigned numExtents, AnyFn fn, const FnSig* sig) {
  Frame& f = currentFrame("__hpvm__createNodeND", file, line);
  const std::string* name = internName(text);
  if (dims != 0 || numExtents != 0)
    throw UserError(at(file, line) + ": __hpvm__createNodeND(" +
                    std::to_string(dims) + ", " + *name +
                    "): replicated nodes (dims > 0) are not supported; tensor "
                    "programs use dims 0");
  if (f.leaf.leafIndex >= 0)
    throw UserError(*f.name +
                    " both calls tensor operations and creates child "
                    "nodes (at " +
                    at(file, line) + ")");
  LaunchState& st = state();
  Child c{fn, sig, name, file, line, {}, {}};
  c.in.resize(static_cast<size_t>(sig->numParams));
  f.children.push_back(std::move(c));
  return reinterpret_cast<void*>(st.nextHandle++);
}

void bindIn(const char* file, int line, void* node, unsigned ip, unsigned ic,
            unsigned isStream) {
  Frame& f = currentFrame("__hpvm__bindIn", file, line);
  Child& c = childOf(f, node, "__hpvm__bindIn", file, line);
  auto call = [&] {
    return at(file, line) + ": __hpvm__bindIn(" + *c.name + ", " +
           std::to_string(ip) + ", " + std::to_string(ic) + ")";
  };
  if (isStream)
    throw UserError(call() + ": streaming bindings are not supported");
  if (ip >= static_cast<unsigned>(f.sig->numParams))
    throw UserError(call() + ": parent position " + std::to_string(ip) +
                    " is out of range: " + *f.name + " has " +
                    std::to_string(f.sig->numParams) + " parameters");
  if (ic >= c.in.size())
    throw UserError(call() + ": child position " + std::to_string(ic) +
                    " is out of range: " + *c.name + " has " +
                    std::to_string(c.in.size()) + " parameters");
  Source& s = c.in[ic];
  if (s.kind != Source::Unbound)
    throw UserError(call() + ": parameter " + std::to_string(ic) + " of " +
                    *c.name + " is already bound at " + at(s.file, s.line));
  if (!sameType(f.sig->params[ip], c.sig->params[ic]))
    throw UserError(call() + ": type mismatch: parameter " +
                    std::to_string(ip) + " of " + *f.name + " (" +
                    typeName(f.sig->params[ip]) + ") feeds parameter " +
                    std::to_string(ic) + " of " + *c.name + " (" +
                    typeName(c.sig->params[ic]) + ")");
  s = Source{Source::Parent, -1, ip, file, line};
}

void bindOut(const char* file, int line, void* node, unsigned oc, unsigned op,
             unsigned isStream) {
  Frame& f = currentFrame("__hpvm__bindOut", file, line);
  Child& c = childOf(f, node, "__hpvm__bindOut", file, line);
  auto call = [&] {
    return at(file, line) + ": __hpvm__bindOut(" + *c.name + ", " +
           std::to_string(oc) + ", " + std::to_string(op) + ")";
  };
  if (isStream)
    throw UserError(call() + ": streaming bindings are not supported");
  if (f.outBinds.size() <= op)
    f.outBinds.resize(op + 1);
  OutBind& b = f.outBinds[op];
  if (b.set)
    throw UserError(call() + ": output " + std::to_string(op) + " of " +
                    *f.name + " is already bound at " + at(b.file, b.line));
  b = OutBind{true, static_cast<int>(&c - f.children.data()), oc, file, line};
}

void* edge(const char* file, int line, void* src, void* dst, unsigned replType,
           unsigned sp, unsigned dp, unsigned isStream) {
  (void)replType; // One-to-one and all-to-all coincide for 0-D nodes.
  Frame& f = currentFrame("__hpvm__edge", file, line);
  Child& s = childOf(f, src, "__hpvm__edge", file, line);
  Child& d = childOf(f, dst, "__hpvm__edge", file, line);
  auto call = [&] {
    return at(file, line) + ": __hpvm__edge(" + *s.name + ", " + *d.name +
           ", " + std::to_string(sp) + ", " + std::to_string(dp) + ")";
  };
  if (isStream)
    throw UserError(call() + ": streaming edges are not supported");
  if (&s == &d)
    throw UserError(call() + ": cycle: an edge from " + *s.name + " to itself");
  if (dp >= d.in.size())
    throw UserError(call() + ": destination position " + std::to_string(dp) +
                    " is out of range: " + *d.name + " has " +
                    std::to_string(d.in.size()) + " parameters");
  Source& in = d.in[dp];
  if (in.kind != Source::Unbound)
    throw UserError(call() + ": parameter " + std::to_string(dp) + " of " +
                    *d.name + " is already bound at " + at(in.file, in.line));
  in = Source{Source::Edge, static_cast<int>(&s - f.children.data()), sp, file,
              line};
  return reinterpret_cast<void*>(uintptr_t(1) + dp);
}

void returnValues(unsigned n, const Value* values, unsigned count) {
  LaunchState& st = state();
  if (!st.active || st.frames.empty())
    throw UserError(
        "__hpvm__return called outside a node function of a launch");
  Frame& f = *st.frames.back();
  if (n != count)
    throw UserError(*f.name + ": __hpvm__return(" + std::to_string(n) +
                    ", ...) got " + std::to_string(count) + " value(s)");
  if (f.returned)
    throw UserError(*f.name + " calls __hpvm__return twice");
  f.returned = true;
  f.returnValues.assign(values, values + count);
}

void* launch(const char* file, int line, const char* rootName,
             unsigned isStream, AnyFn fn, const FnSig* sig, void* args) {
  LaunchState& st = state();
  std::string where = at(file, line) + ": __hpvm__launch(" +
                      std::to_string(isStream) + ", " + rootName + ")";
  if (isStream)
    throw UserError(where + ": streaming launches are not supported");
  if (st.active)
    throw UserError(where + ": called inside a running launch");
  if (!args)
    throw UserError(where + ": the argument struct is NULL");
  // Unpack the packed root struct with the root's parameter types.
  auto* bytes = static_cast<unsigned char*>(args);
  std::vector<Value> in(static_cast<size_t>(sig->numParams));
  size_t offset = 0;
  for (int p = 0; p < sig->numParams; ++p) {
    in[p].type = sig->params[p];
    std::memcpy(&in[p].bits, bytes + offset, sig->params[p]->size);
    offset += sig->params[p]->size;
  }
  static std::string name;
  name = rootName;
  LaunchGuard guard;
  st.active = true;
  st.frames.clear();
  traceBegin(fn, name);
  std::vector<Value> out;
  runNode(name, fn, sig, in.data(), out);
  st.frames.clear();
  st.active = false;
  traceEnd(out);
  guard.done = true;
  // The outputs form the trailing (naturally aligned) return struct.
  size_t field = 0;
  for (const Value& v : out) {
    size_t size = v.type->size;
    field = (field + size - 1) / size * size;
    std::memcpy(bytes + offset + field, &v.bits, size);
    field += size;
  }
  return args;
}

void wait(void*) {}

} // namespace api
} // namespace hpvm::rt

using namespace hpvm::rt;

extern "C" {

void __hpvm__init() { llvm_hpvm_initApproxhpvmRt(0); }

void __hpvm__cleanup() {
  llvm_hpvm_clearRuntimeController();
  llvm_hpvm_cleanupApproxhpvmRt();
}

void __hpvm__hint(hpvm::Target target) {
  if (LeafContext* leaf = currentLeafContext())
    leaf->hint = static_cast<int>(target);
}

void* __hpvm__node_id(int id) {
  tensor_set_node_id(static_cast<unsigned>(id));
  return nullptr;
}

void __hpvm__wait(void* handle) { api::wait(handle); }

void tensor_set_node_id(unsigned int id) {
  if (LeafContext* leaf = currentLeafContext()) {
    leaf->nodeId = static_cast<int>(id);
    leaf->hasNodeId = true;
  }
}

} // extern "C"
