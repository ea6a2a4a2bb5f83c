// tensor_runtime.h - HPVM's tensor runtime C API: tensor creation, memory
// tracking, runtime initialisation, the runtime controller entry points and
// the direct tensor calls of HPVM's `tensor`/cudnn target.
//
// Every function here is safe to call outside a launch (it computes
// eagerly); the direct op calls inside a node function of a launch are
// recorded like the equivalent __hpvm__tensor_* intrinsic. User errors (bad
// shapes, bad files) print "hpvm_rt: error: ..." and exit with status 1.
#ifndef HPVM_RT_TENSOR_RUNTIME_H
#define HPVM_RT_TENSOR_RUNTIME_H

#include "tensor.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// --- Runtime lifetime -------------------------------------------------------

/// Initialises the tensor runtime (threads from HPVM_NUM_THREADS). The
/// argument (HPVM's GPU id) is ignored.
void llvm_hpvm_initTensorRt(int gpuId);
/// Shuts the tensor runtime down: every tensor the program created and
/// did not free (its weights, say) is freed.
void llvm_hpvm_cleanupTensorRt(void);
/// HPVM's approximation-runtime start (inserted by HPVM before
/// __hpvm__init): same as llvm_hpvm_initTensorRt.
void llvm_hpvm_initApproxhpvmRt(int gpuId);
/// HPVM's approximation-runtime end.
void llvm_hpvm_cleanupApproxhpvmRt(void);

/// Reads configuration file \p confPath and makes its first block active
/// (errors are reported with path:line:col and exit 1).
void llvm_hpvm_initializeRuntimeController(const char* confPath);
/// Drops the runtime controller and writes profile_info.txt as HPVM does.
void llvm_hpvm_clearRuntimeController(void);
/// HPVM's per-batch control call: accuracy of \p result against labels
/// [start, end) of \p labelsFile, running mean written to final_accuracy.
void llvm_hpvm_invokeRtControl(void* result, const char* labelsFile, int start,
                               int end);

/// Sets the node id used to find the next ops' configuration (HPVM's
/// currentTensorID); emitted by HPVM for __hpvm__node_id.
void tensor_set_node_id(unsigned int id);

// --- Tensors ----------------------------------------------------------------

/// Creates an uninitialised n x c x h x w float32 tensor.
void* create4DTensor(int data_type, int data_format, size_t n, size_t c,
                     size_t h, size_t w);
/// Creates an uninitialised d1 x d2 x d3 tensor (viewed as d1 x d2 x d3 x 1).
void* create3DTensor(int data_type, size_t d1, size_t d2, size_t d3);
/// Creates an uninitialised d1 x d2 tensor (viewed as d1 x d2 x 1 x 1).
void* create2DTensor(int data_type, size_t d1, size_t d2);
/// Copies \p bytes bytes of float32 NCHW data into tensor \p t; the size
/// must equal the tensor's.
void initTensorData(void* t, void* data, size_t bytes);
/// Frees a tensor and its storage.
void freeTensor(void* t);
/// Makes the tensor's NCHW host copy valid (\p destination 0 host, 1 device;
/// both mean host here).
void hpvm_request_tensor(void* t, int destination);

/// From now on every tensor created is freed by the next freeBatchMemory.
void startMemTracking(void);
/// Frees every tensor created since startMemTracking/freeBatchMemory.
void freeBatchMemory(void);

// --- Direct tensor calls (HPVM's cudnn/tensor target) -----------------------

/// Convolution; \p conv_groups <= 1 is an ordinary convolution, more is a
/// grouped (e.g. depthwise) one. \p conv_mode is ignored (always
/// cross-correlation).
void* tensorConvolution(void* input, void* filter, int vertical_pad,
                        int horizontal_pad, int vertical_stride,
                        int horizontal_stride, int conv_mode, int conv_groups);
/// Pooling: \p poolFunction 0 max, 1 mean.
void* tensorPooling(void* input, int poolFunction, int window_height,
                    int window_width, int vertical_pad, int horizontal_pad,
                    int vertical_stride, int horizontal_stride);
/// Matrix multiply of x (M x K, flattened) by w (1 x 1 x K x N).
void* tensorGemmGPU(void* lhs, void* rhs);
/// Same as tensorGemmGPU.
void* tensorGemmCPU(void* lhs, void* rhs);
/// x += b in place (elementwise, or per-channel when b is 1 x C x 1 x 1).
void* tensorAdd(void* x, void* bias);
/// max(x, 0) in place.
void* tensorRelu(void* x);
/// clamp(x, min, max) in place.
void* tensorRelu2(void* x, float min, float max);
/// tanh(x) in place.
void* tensorTanh(void* x);
/// Softmax over dim 1 in place.
void* tensorSoftmax(void* x);
/// Inference batch normalisation in place.
void* tensorBatchNorm(void* x, void* scale, void* bias, void* mean,
                      void* variance, double epsilon);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // HPVM_RT_TENSOR_RUNTIME_H
