// Dataflow.h - the C++ machinery behind hpvm.h's dataflow calls: type
// descriptors deduced from node functions, node creation, wiring and launch.
//
// Design (HPVM-C without HPVM's compiler):
//  * __hpvm__createNodeND and __hpvm__launch are macros that forward to the
//    templates below, adding the node function's name as written in the
//    source and the call's file and line, so that wiring errors name nodes
//    readably. The templates deduce each node function's parameter types
//    (R (*)(A...)), so the executor calls node functions with correctly typed
//    arguments and never guesses a calling convention.
//  * Values flowing along edges and bindings are Value: up to eight bytes of
//    a pointer, integer or floating-point value, with its TypeDesc.
//  * __hpvm__return stores its values (with their types) into the return
//    slot of the node being executed.
//  * launch reads the packed root-argument struct field by field using the
//    root's parameter types, runs the graph and writes the root's outputs
//    (the values bound by __hpvm__bindOut, in field order, naturally aligned
//    inside the trailing return struct) right after the parameters, where
//    HPVM writes them.
#ifndef HPVM_RT_DATAFLOW_H
#define HPVM_RT_DATAFLOW_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

namespace hpvm::rt::api {

/// What kind of scalar a node parameter or output value is.
enum class ValueKind : uint8_t { Pointer, Integer, Float };

/// The type of one node parameter or output value.
struct TypeDesc {
  ValueKind kind;
  uint8_t size; ///< Bytes, 1..8.
};

/// The descriptor of C++ type T (pointers, integers, enums, float, double).
template <class T> struct TypeOf {
  static_assert(std::is_pointer_v<T> || std::is_integral_v<T> ||
                    std::is_enum_v<T> || std::is_floating_point_v<T>,
                "hpvm_rt: node function parameters and __hpvm__return "
                "values must be pointers, integers, enums or floats");
  static_assert(sizeof(T) <= 8, "hpvm_rt: values are at most 8 bytes");
  static constexpr TypeDesc desc{std::is_pointer_v<T> ? ValueKind::Pointer
                                 : std::is_floating_point_v<T>
                                     ? ValueKind::Float
                                     : ValueKind::Integer,
                                 static_cast<uint8_t>(sizeof(T))};
};

/// One value flowing through the dataflow graph.
struct Value {
  uint64_t bits = 0;
  const TypeDesc* type = nullptr;
};

/// Packs \p v into a Value.
template <class T> Value makeValue(T v) {
  Value out;
  std::memcpy(&out.bits, &v, sizeof(T));
  out.type = &TypeOf<T>::desc;
  return out;
}

/// Unpacks a Value into T (the executor has checked the type).
template <class T> T valueAs(const Value& v) {
  T out;
  std::memcpy(&out, &v.bits, sizeof(T));
  return out;
}

/// Any node function, type-erased.
using AnyFn = void (*)();
/// Calls a type-erased node function with unpacked arguments.
using Invoker = void (*)(AnyFn fn, const Value* args);

/// A node function's signature as the executor needs it.
struct FnSig {
  int numParams;
  const TypeDesc* const* params; ///< numParams entries (may be null if 0).
  Invoker invoke;
};

template <class R, class... A, std::size_t... I>
void invokeWith(AnyFn fn, const Value* args, std::index_sequence<I...>) {
  reinterpret_cast<R (*)(A...)>(fn)(valueAs<A>(args[I])...);
}

template <class R, class... A> void invokeFn(AnyFn fn, const Value* args) {
  invokeWith<R, A...>(fn, args, std::index_sequence_for<A...>{});
}

/// The signature descriptor of function type R(A...).
template <class R, class... A> struct SigOf {
  static constexpr const TypeDesc* params[sizeof...(A) + 1] = {
      &TypeOf<A>::desc..., nullptr};
  static constexpr FnSig sig{static_cast<int>(sizeof...(A)), params,
                             &invokeFn<R, A...>};
};

// --- Entry points implemented by hpvm_rt (src/core/Dataflow.cpp) ------------

/// Creates a child of the node being executed; \p text is the source text
/// of the call's arguments after `dims` (the node function's name first).
void* createNode(const char* file, int line, const char* text, unsigned dims,
                 unsigned numExtents, AnyFn fn, const FnSig* sig);
/// __hpvm__bindIn: parent parameter \p ip feeds parameter \p ic of \p node.
void bindIn(const char* file, int line, void* node, unsigned ip, unsigned ic,
            unsigned isStream);
/// __hpvm__bindOut: output \p oc of \p node becomes parent output \p op.
void bindOut(const char* file, int line, void* node, unsigned oc, unsigned op,
             unsigned isStream);
/// __hpvm__edge: output \p sp of \p src feeds parameter \p dp of \p dst.
void* edge(const char* file, int line, void* src, void* dst, unsigned replType,
           unsigned sp, unsigned dp, unsigned isStream);
/// __hpvm__return: stores \p count values as the current node's outputs;
/// \p n is the count the program wrote.
void returnValues(unsigned n, const Value* values, unsigned count);
/// Runs the graph rooted at \p fn with the packed arguments at \p args and
/// writes the root's outputs after them. Returns a handle for __hpvm__wait.
void* launch(const char* file, int line, const char* rootName,
             unsigned isStream, AnyFn fn, const FnSig* sig, void* args);
/// __hpvm__wait.
void wait(void* handle);

// --- Templates the hpvm.h macros call ---------------------------------------

template <class R, class... A, class... Ext>
void* createNodeND(const char* file, int line, const char* text, unsigned dims,
                   R (*fn)(A...), Ext...) {
  return createNode(file, line, text, dims, sizeof...(Ext),
                    reinterpret_cast<AnyFn>(fn), &SigOf<R, A...>::sig);
}

template <class R, class... A>
void* launchRoot(const char* file, int line, const char* rootName,
                 unsigned isStream, R (*fn)(A...), void* args) {
  return launch(file, line, rootName, isStream, reinterpret_cast<AnyFn>(fn),
                &SigOf<R, A...>::sig, args);
}

template <class... T> void returnFrom(unsigned n, T... values) {
  const Value packed[sizeof...(T) + 1] = {makeValue(values)..., Value{}};
  returnValues(n, packed, sizeof...(T));
}

} // namespace hpvm::rt::api

#endif // HPVM_RT_DATAFLOW_H
