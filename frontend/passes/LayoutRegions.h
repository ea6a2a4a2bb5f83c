// LayoutRegions.h - the pass that makes channel-last regions
// channel-first.
#ifndef TORCH2HPVM_FRONTEND_PASSES_LAYOUTREGIONS_H
#define TORCH2HPVM_FRONTEND_PASSES_LAYOUTREGIONS_H

#include "ir/Graph.h"

namespace hpvm::fe {

/// Makes channel-last regions channel-first: between a Transpose of an
/// N x C x H x W activation to N x H x W x C (perm [0, 2, 3, 1]) and the
/// Transposes back ([0, 3, 1, 2]), where every op works per pixel on the
/// last axis (LayerNormalization, MatMul by a constant matrix - a Linear
/// layer, elementwise ops and constants over the channels), the ops are
/// rewritten for N x C x H x W (LayerNormalization over axis 1, a 1 x 1
/// Conv, constants C x 1 x 1) and the Transposes disappear (ConvNeXt).
void makeChannelFirst(Graph& g);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_PASSES_LAYOUTREGIONS_H
