// AnchorMaps.h - the pass that holds a detection head's per-anchor maps
// (B x A x H x W x K, YOLOv5's) as B x K x A*H x W images, so that HPVM's
// N x C x H x W ops compute them.
#ifndef TORCH2HPVM_FRONTEND_PASSES_ANCHORMAPS_H
#define TORCH2HPVM_FRONTEND_PASSES_ANCHORMAPS_H

#include "ir/Graph.h"

namespace hpvm::fe {

/// From each Reshape of a B x A*K x H x W activation to B x A x K x H x W
/// followed by a Transpose (0, 1, 3, 4, 2) to B x A x H x W x K (YOLOv5's
/// `view(bs, na, no, ny, nx).permute(0, 1, 3, 4, 2)`: K values of each of
/// A anchors at each cell), the nodes reachable before a graph output,
/// when every one of them works on such maps: activations, elementwise ops
/// with scalars, with constants of batch 1 that broadcast against the maps
/// (the grid and anchor sizes, 1 x A x H x W x 2) or with other maps,
/// Pow by a scalar, Slice and Concat along K; then each map viewed as
/// boxes, B x A*H*W x K, and those concatenated along the boxes. The maps
/// are held B x K x A*H x W (a channel_shuffle of the A groups, then a
/// reshape), the boxes B x K x 1 x A*H*W (a reshape; concatenated by
/// concat_width), written B x boxes x K at the graph output
/// (channels_last). All the heads of a graph are taken together, or none.
void makeAnchorMapsImages(Graph& g);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_PASSES_ANCHORMAPS_H
