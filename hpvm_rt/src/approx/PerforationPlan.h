// PerforationPlan.h - how a perforated convolution is split into strided
// convolutions, one per class of kept output rows, shared by the NCHW engine
// (ConvPerforation.cpp) and the blocked one (PerforationBlocked.cpp).
//
// With rate r and offset s, the kept rows are the residues c != s modulo r,
// and the rows of one residue class (c, c + r, c + 2r, ...) are the output
// of a convolution with vertical stride r * strideH whose first window
// starts at input row c * strideH - padH. Column perforation is the same
// along the other axis.
#ifndef HPVM_RT_APPROX_PERFORATIONPLAN_H
#define HPVM_RT_APPROX_PERFORATIONPLAN_H

#include "approx/ConvGeometry.h"
#include "approx/Epilogue.h"
#include "approx/Scratch.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <vector>

namespace hpvm::rt::approx::detail {

/// Output rows start, start + step, ... (count of them): the rows one
/// strided convolution computes.
struct OutputClass {
  int64_t start = 0, step = 1, count = 0;
};

/// How the kept rows of an axis are computed, with as few convolutions as
/// possible: the residue classes modulo the rate (all but the offset's),
/// or, on short axes where that is fewer, the maximal runs of consecutive
/// kept rows. The whole axis is one class when nothing is skipped.
std::vector<OutputClass> keptClasses(const std::vector<bool>& kept, int rate,
                                     int offset);

/// The rows of one class's convolution (a row problem; column perforation
/// plans on the transposed geometry).
struct ClassPlan {
  int64_t shift = 0;  ///< Input row the class's input view starts at.
  int64_t viewH = 0;  ///< Input rows in the view.
  int64_t stride = 1; ///< Row stride: strideH * step.
  int64_t padT = 0, padB = 0;
  int64_t first = 0;  ///< Computed rows before the class's first.
  int64_t outLen = 0; ///< Rows the convolution computes (count + first).
};

/// Plans the convolution computing class `c` of g's output rows: where its
/// input view starts (a shifted view, or extra top padding whose first
/// rows are computed and dropped, whichever costs less given that one
/// input element costs `flopsPerShiftedElement` flops to shift), its
/// padding and its row count.
ClassPlan planClass(const ConvGeometry& g, const OutputClass& c,
                    int64_t flopsPerShiftedElement);

/// Right (bottom) padding of a full, non-perforated axis, trimmed to what
/// the last window reads.
int64_t padRight(int64_t len, int64_t k, int64_t s, int64_t pad, int64_t out);

/// g with rows and columns swapped.
ConvGeometry transposed(const ConvGeometry& g);

/// Where output row a comes from: a kept row reads class `cls` at row `t`
/// (counting dropped first rows); a skipped one averages rows lo and hi
/// (lo == hi: copy).
struct Source {
  int cls = -1;
  int64_t t = 0;
  int64_t lo = 0, hi = 0;
};

/// The source of every output row, given each class's dropped first rows.
std::vector<Source> sourcesOf(const std::vector<bool>& kept,
                              const std::vector<OutputClass>& classes,
                              const std::vector<int64_t>& firsts);

/// The skipped indices of a perforated axis.
std::vector<int64_t> skippedOf(const std::vector<bool>& kept);

/// The engine of the approximate convolutions.
dnnl::engine& cpuEngine();

/// True if a primitive descriptor fell back to oneDNN's reference code.
bool isRefImpl(const dnnl::primitive_desc_base& pd);

/// The weights dims of g (GOIHW when grouped).
dnnl::memory::dims weightsDims(const ConvGeometry& g);

/// The blocked engines' input: bc.x's values in layout `dense` (bc.x
/// itself when it already is, else a reorder into scratch slot 0), copied
/// into slot 1 and rounded when bc.roundInput is set. Returns the data.
const float* blockedInput(const BlockedConv& bc,
                          const dnnl::memory::desc& dense,
                          ScratchPool::Lease& lease, dnnl::stream& strm);

/// A 64-bit hash of n floats' bits (a filter's contents, a layer's output
/// scales), read in parallel.
uint64_t contentHash(const float* data, int64_t n);

/// Counts one convolution computed by a blocked engine (blockedRuns()).
void countBlockedRun();

/// The filter `user` (n floats at `data`) in layout `want`, reordered once
/// and then served from a process-wide cache while its contents are
/// unchanged.
dnnl::memory cachedFilter(const dnnl::memory& user, const float* data,
                          int64_t n, const dnnl::memory::desc& want,
                          dnnl::stream& strm);

} // namespace hpvm::rt::approx::detail

#endif // HPVM_RT_APPROX_PERFORATIONPLAN_H
