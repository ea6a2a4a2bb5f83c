// SubBatch.h - running a launch's graph over sub-batches that fit the
// cache: where a batch's activations overflow it (MobileNet on 32x32
// images, batch 64 in fp32: 16 MB per layer on a 2 MB L2), the executor
// runs the plan of a smaller batch over slices of the input, so that each
// layer's output is still in cache when the next reads it. Only graphs
// whose every op computes each image on its own are split.
#ifndef HPVM_RT_CORE_SUBBATCH_H
#define HPVM_RT_CORE_SUBBATCH_H

#include "core/Plan.h"

#include <cstdint>
#include <vector>

namespace hpvm::rt {

/// Images per sub-batch at least: below it, fixed per-launch costs and
/// kernels' small-batch paths cost more than the cache saves
/// (EfficientNet-B0 at 224x224: 99 images/s at 4 or more, 84-94 at 1-2).
constexpr int64_t kMinSubBatch = 4;

/// The facts of trace \p t (batch = dim 0 of its ops' outputs) under \p p's
/// schedule.
BatchFacts batchFactsOf(const Plan& p, const Trace& t);

/// Images per sub-batch for a batch of \p batch images on \p threads
/// threads: the batch itself when it fits the cache budget
/// (subBatchBudgetBytes() per thread) or when it cannot be split; equal
/// slices that fit it where kMinSubBatch images per thread do. Where not
/// even those fit (the 224x224 nets): on one thread one image at a time,
/// unless a layer is batch-bound (BatchFacts::batchBound), else the whole
/// batch. Batch 16, one thread, Intel Xeon (AMX), against the whole batch:
/// EfficientNet-B0 1.09x (fp32) and 1.18x (int8), MobileNet v3 1.09x and
/// 1.10x, DenseNet-121 and ResNet-50 int8 1.31x and 1.16x; on two threads,
/// one image per thread ran 0.76-1.12x (DenseNet-121 int8 the lowest), and
/// ResNet-50 in fp32 0.82x (its Winograd layers). HPVM_RT_SUB_BATCH fixes
/// it (0: never split).
int64_t subBatchSize(const BatchFacts& f, int64_t batch, int threads);

/// Bytes of activations one thread's sub-batch may touch per layer: four
/// times the L2 cache (one layer's input and output, twice over, stay in
/// L2 and the part of L3 next to it).
int64_t subBatchBudgetBytes();

/// \p t with its batch set to \p n: shapes of the batch inputs and of
/// every op re-inferred. False (\p out unusable) where inference fails.
bool traceWithBatch(const Trace& t, const BatchFacts& f, int64_t n, Trace& out);

} // namespace hpvm::rt

#endif // HPVM_RT_CORE_SUBBATCH_H
