// ConvPerforatedExact.h - convolution perforation (reference section 6.2)
// computed as the exact convolution at the knob's precision, the skipped
// rows (columns) then overwritten with copies of their computed
// neighbours: where every skipped one is a copy (an axis of two) and the
// exact kernel is much the faster. On an AMX CPU, bf16 on outputs too
// small for oneDNN's brgconv runs as im2col and an AMX inner product over
// the whole batch, while the perforation engine's one strided convolution
// per kept row runs on the direct bf16 kernels (VGG16-CIFAR's 2x2
// layers, batch 64: 3.8-4.3x fp32 this way, 0.88-0.99x on the engine).
#ifndef HPVM_RT_KERNELS_CONVPERFORATEDEXACT_H
#define HPVM_RT_KERNELS_CONVPERFORATEDEXACT_H

#include "kernels/Kernels.h"
#include "kernels/TensorImpl.h"

namespace hpvm::rt::kern {

/// True where every output row (PerfRow) or column (PerfCol) that \p knob
/// skips is a copy of a computed one (the axis has two; one of them is
/// skipped) and the post-ops commute with that copy (no residual): the
/// exact convolution followed by copySkipped() gives the perforated
/// result.
bool perforationIsCopy(const KnobSpec& knob, const PostOps& post,
                       const Dims4& yd);

/// Overwrites y's output row (column) that \p knob skips with its computed
/// neighbour, as perforation fills it (row 0 from row 1, the last row from
/// the one before; reference 6.2), in the layout y is stored in.
void copySkipped(Tensor* y, const KnobSpec& knob);

} // namespace hpvm::rt::kern

#endif // HPVM_RT_KERNELS_CONVPERFORATEDEXACT_H
