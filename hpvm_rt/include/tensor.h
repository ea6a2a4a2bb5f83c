// tensor.h - HPVM's `struct Tensor`, source-compatible with HPVM's tensor
// runtime header: programs read host_data, num_elems, size_in_bytes and dims.
#ifndef HPVM_RT_TENSOR_H
#define HPVM_RT_TENSOR_H

#include <stddef.h>

/// Element type codes (HPVM uses cuDNN's numbering). Host data is float32.
enum Tensor_type_t {
  float_type = 0,
  double_type = 1,
  half_type = 2,
  int_type = 3,
  float2_type = 4,
  half2_type = 5,
};

/// Layout codes. Only NCHW is visible to programs.
enum Tensor_format_t { nchw = 0, nhwc = 1 };

/// Where the valid copy lives; always HOST in hpvm_rt.
enum data_location_t { HOST, DEVICE };

/// Dimensions of a tensor (outermost first).
struct Dimension {
  int num_dims;
  size_t* dim_sizes;
};

/// A 4-D float32 NCHW tensor as HPVM programs see it. The trailing `impl`
/// pointer is hpvm_rt's private state (storage, layout, trace bookkeeping);
/// programs must not touch it.
struct Tensor {
  int data_type;
  int cur_type;
  int data_format;
  enum data_location_t data_placement;
  void* host_data;
  void* gpu_data;      ///< Always NULL in hpvm_rt (no GPU).
  void* gpu_half_data; ///< Always NULL in hpvm_rt (no GPU).
  size_t num_elems;
  size_t size_in_bytes;
  struct Dimension dims;
  struct TensorImpl* impl;
};

#endif // HPVM_RT_TENSOR_H
