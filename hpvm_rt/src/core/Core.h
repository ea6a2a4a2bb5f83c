// Core.h - internals shared by hpvm_rt's core (dataflow executor, tracing,
// tensor C API) and its tests: tensor helpers, op dispatch.
#ifndef HPVM_RT_CORE_CORE_H
#define HPVM_RT_CORE_CORE_H

#include "hpvm_rt/OpTable.h"
#include "kernels/Kernels.h"
#include "tensor.h"

#include <array>
#include <cstdint>
#include <string>

namespace hpvm::rt {

// --- Tensors ----------------------------------------------------------------

/// NCHW extents of a tensor (missing trailing dims are 1).
using Shape = std::array<int64_t, 4>;

/// Shape of \p t (dims beyond num_dims count as 1).
Shape shapeOf(const Tensor* t);
/// Number of elements of \p s.
inline int64_t numElements(const Shape& s) { return s[0] * s[1] * s[2] * s[3]; }
/// "1x28x28"-style text of a shape.
std::string shapeText(const Shape& s);

/// Creates a tensor struct of shape \p s with \p numDims visible dims and no
/// storage; \p tracked registers it for freeBatchMemory when tracking is on.
Tensor* newTensor(const Shape& s, int numDims, bool tracked);
/// Frees storage, dims and the struct of a tensor made by newTensor.
void deleteTensor(Tensor* t);

// --- Ops --------------------------------------------------------------------

/// Entry point of every intrinsic and direct call: inside a launch records
/// the op and returns its symbolic result; outside computes it eagerly.
/// \p api names the called function for messages; \p numTensors is the
/// op's TensorArgs, or a variadic op's count (checked here).
void* tensorOp(HpvmOp op, const char* api, int numTensors, void* const* tensors,
               const double* scalars);

/// The output shape of \p op on \p numIn operands of shapes \p in with
/// \p scalars; throws UserError for shape errors, naming \p api and,
/// inside a launch, the node function \p node (else null).
Shape inferShape(HpvmOp op, const Shape* in, int numIn, const double* scalars,
                 const char* api, const std::string* node);

/// FLOPs of one call (Ops.def FlopsPerElem/FlopsPerReduce).
double opFlops(HpvmOp op, const Shape* in, const Shape& out,
               const double* scalars);

/// True for the ops whose kernel applies OpCall::post, so that the
/// executor fuses the activation that follows them.
bool fusesActivation(HpvmOp op);

/// Runs \p op's kernel (run<Kind>) on \p call: eager mode, and every
/// executor group but the convolutions' and mul's.
void runSingleOp(HpvmOp op, const OpCall& call);

/// Convolution geometry of a convolution row's scalar operands
/// (isConvOp).
ConvArgs convArgs(HpvmOp op, const double* scalars);
/// Pooling geometry of a pooling op's scalar operands.
PoolArgs poolArgs(HpvmOp op, const double* scalars);

/// The exact FP32 knob (kKnobFp32).
const KnobSpec& exactKnob();

} // namespace hpvm::rt

#endif // HPVM_RT_CORE_CORE_H
