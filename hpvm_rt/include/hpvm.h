// hpvm.h - the HPVM-C API for stock clang++: dataflow graph calls, the
// hpvm:: target enum and every __hpvm__tensor_* intrinsic, source-compatible
// with HPVM's hpvm.h for tensor programs.
//
// How it works (details in hpvm_rt/Dataflow.h): node functions are ordinary
// C++ functions. __hpvm__createNodeND, __hpvm__bindIn, __hpvm__bindOut,
// __hpvm__edge and __hpvm__launch are macros over templates that deduce each
// node function's parameter types and remember its name and the call's
// source line. A launch runs the root function, which records its children
// and their wiring; the wiring is checked (every input bound once, positions
// in range, types equal, no cycle, no output bound twice; errors name the
// node functions and positions), then children run in topological order,
// internal nodes nesting. Inside a launch the tensor intrinsics do not
// compute: they record the op and return a tensor of the right shape. When
// the graph has run, hpvm_rt groups the recorded ops into HPVM's fused
// nodes, applies the active approximation configuration per fused node and
// executes fused groups on oneDNN kernels, caching the plan for the next
// launch. Outside a launch the intrinsics compute eagerly.
//
// Configurations apply to hpvm::TENSOR_TARGET leaves, as in HPVM; a program
// whose leaves use other targets (HPVM's cudnn variants) runs exact FP32.
//
// Leaves must touch tensors only through the intrinsics (as in HPVM, where
// leaves are compiled into runtime calls); in-place intrinsics (add, relu,
// tanh, clipped_relu, batchnorm, softmax) never modify a tensor another
// node still reads.
#ifndef HPVM_RT_HPVM_H
#define HPVM_RT_HPVM_H

#include "hpvm_rt/Dataflow.h"

#include <stddef.h>
#include <unistd.h>

namespace hpvm {
/// Execution targets, with HPVM's values.
enum Target {
  None = 0,
  CPU_TARGET = 1,
  GPU_TARGET = 2,
  CUDNN_TARGET = 3,
  TENSOR_TARGET = 4,
  CPU_OR_GPU_TARGET = 5,
  NUM_TARGETS = 6,
};
} // namespace hpvm

/// Deprecated HPVM alias for the cuDNN target (`hpvm::DEVICE`).
#ifndef DEVICE
#define DEVICE CUDNN_TARGET
#endif

extern "C" {
/// Starts the runtime (HPVM also initialises its runtime controller here).
void __hpvm__init();
/// Ends the runtime: clears the runtime controller (writes profile_info.txt).
void __hpvm__cleanup();
/// Declares the preferred target of the node function being executed.
void __hpvm__hint(hpvm::Target target);
/// Tags the node being executed with configuration id \p id (1-based).
void* __hpvm__node_id(int id);
/// Waits for a launched graph (graphs run synchronously in hpvm_rt).
void __hpvm__wait(void* handle);
}

/// Declares which parameters are inputs and outputs; no runtime effect.
inline void __hpvm__attributes(unsigned, ...) {}

/// Stores the node's output values (tensor programs: tensor, (size_t)0).
template <class... T> void __hpvm__return(unsigned n, T... values) {
  ::hpvm::rt::api::returnFrom(n, values...);
}

/// Creates a child node running \p fn (dims 0: a single instance).
#define __hpvm__createNodeND(dims, ...)                                        \
  ::hpvm::rt::api::createNodeND(__FILE__, __LINE__, #__VA_ARGS__, (dims),      \
                                __VA_ARGS__)
/// Parent parameter ip feeds child parameter ic.
#define __hpvm__bindIn(node, ip, ic, isStream)                                 \
  ::hpvm::rt::api::bindIn(__FILE__, __LINE__, (node), (ip), (ic), (isStream))
/// Child output oc becomes parent output op.
#define __hpvm__bindOut(node, oc, op, isStream)                                \
  ::hpvm::rt::api::bindOut(__FILE__, __LINE__, (node), (oc), (op), (isStream))
/// Output sp of src feeds parameter dp of dst.
#define __hpvm__edge(src, dst, replType, sp, dp, isStream)                     \
  ::hpvm::rt::api::edge(__FILE__, __LINE__, (src), (dst), (replType), (sp),    \
                        (dp), (isStream))
/// Runs the graph rooted at \p root on the packed argument struct \p args.
#define __hpvm__launch(isStream, root, args)                                   \
  ::hpvm::rt::api::launchRoot(__FILE__, __LINE__, #root, (isStream), (root),   \
                              (args))

// --- Tensor intrinsics, one per Ops.def HPVM_OP row -------------------------

#define HPVM_RT_TENSORS_1 void*
#define HPVM_RT_TENSORS_2 void*, void*
#define HPVM_RT_TENSORS_3 void*, void*, void*
#define HPVM_RT_TENSORS_5 void*, void*, void*, void*, void*
// A variadic op: the count, then that many tensors.
#define HPVM_RT_TENSORS_N int, ...
#define HPVM_RT_SCALARS_0(T)
#define HPVM_RT_SCALARS_1(T) , T
#define HPVM_RT_SCALARS_2(T) , T, T
#define HPVM_RT_SCALARS_3(T) , T, T, T
#define HPVM_RT_SCALARS_4(T) , T, T, T, T
#define HPVM_RT_SCALARS_5(T) , T, T, T, T, T
#define HPVM_RT_SCALARS_6(T) , T, T, T, T, T, T
#define HPVM_RT_SCALARS_7(T) , T, T, T, T, T, T, T
#define HPVM_RT_SCALARS_9(T) , T, T, T, T, T, T, T, T, T
#define HPVM_RT_SCALARS_8(T) , T, T, T, T, T, T, T, T

extern "C" {
#define HPVM_OP(Kind, ConfName, JsonType, Intrinsic, RtCall, TensorArgs,       \
                ScalarArgs, Knobs, FlopsPerElem, FlopsPerReduce, Fuse, Act,    \
                InPlace, ReduceOver, Scalar, Hpvm, ScalarNames, Batch)         \
  void* Intrinsic(                                                             \
      HPVM_RT_TENSORS_##TensorArgs HPVM_RT_SCALARS_##ScalarArgs(Scalar));
#include "hpvm_rt/Ops.def"
}

#undef HPVM_RT_TENSORS_1
#undef HPVM_RT_TENSORS_2
#undef HPVM_RT_TENSORS_3
#undef HPVM_RT_TENSORS_5
#undef HPVM_RT_TENSORS_N
#undef HPVM_RT_SCALARS_0
#undef HPVM_RT_SCALARS_1
#undef HPVM_RT_SCALARS_2
#undef HPVM_RT_SCALARS_4
#undef HPVM_RT_SCALARS_5
#undef HPVM_RT_SCALARS_6
#undef HPVM_RT_SCALARS_7
#undef HPVM_RT_SCALARS_9
#undef HPVM_RT_SCALARS_8

#endif // HPVM_RT_HPVM_H
