// GemmConv.h - convolution as reduced im2col + GEMM (oneDNN's sgemm), over
// a subset of filter elements and a subset of output positions: the engine
// of filter sampling, and of perforation on tiny outputs.
#ifndef HPVM_RT_APPROX_GEMMCONV_H
#define HPVM_RT_APPROX_GEMMCONV_H

#include "approx/ConvGeometry.h"
#include "approx/Scratch.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace hpvm::rt::approx {

/// Work on one finished output plane: (image n, channel k, plane).
using PlaneFinish = std::function<void(int64_t n, int64_t k, float* plane)>;

/// Computes the NCHW output y of convolution g at output rows `rows` x
/// output columns `cols` (each ascending), using only the filter elements
/// `elems` (indices into one output channel's flattened cg x kh x kw
/// filter, ascending) with weights `wr` (K x elems.size(), row k for output
/// channel k). Other output positions are left untouched. The im2col matrix
/// holds only the selected elements and positions, so the arithmetic is
/// proportional to elems.size() * rows.size() * cols.size(). Scratch
/// buffers come from `lease`, slots firstSlot and up. `finish` (if set)
/// runs on each output plane (image n, channel k, NCHW plane pointer) right
/// after its selected positions are written, while the plane is in cache.
/// Uses omp_get_max_threads() threads.
void gemmConv(const float* x, const ConvGeometry& g,
              const std::vector<int64_t>& elems, const float* wr,
              const std::vector<int64_t>& rows,
              const std::vector<int64_t>& cols, float* y,
              ScratchPool::Lease& lease, size_t firstSlot,
              const PlaneFinish& finish = {});

} // namespace hpvm::rt::approx

#endif // HPVM_RT_APPROX_GEMMCONV_H
