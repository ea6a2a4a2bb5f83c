// DirectCall.h - Programs called from Python without TorchScript's method
// dispatch (the _direct module, DirectCall.cpp).
//
// A Program's handle (its TorchScript method handle()) is a number given
// once per Program and never reused; a call by a handle whose Program is
// gone is an error, not a dangling pointer. The calls run the Program as
// its forward() and forward_one() do, and throw what they throw (c10
// errors).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace torch2hpvm {

/// The outputs of the Program with \p handle for images \p x.
std::vector<at::Tensor> callAll(int64_t handle, const at::Tensor& x);
/// Its single output for images \p x.
at::Tensor callOne(int64_t handle, const at::Tensor& x);

} // namespace torch2hpvm
