// FeatureSequences.h - the pass that holds sequences of features (B x C x
// L, the pixels of feature maps flattened) as B x C x 1 x L images, so that
// HPVM's N x C x H x W ops compute them: a detection head's anchors.
#ifndef TORCH2HPVM_FRONTEND_PASSES_FEATURESEQUENCES_H
#define TORCH2HPVM_FRONTEND_PASSES_FEATURESEQUENCES_H

#include "ir/Graph.h"

namespace hpvm::fe {

/// From each Reshape of a B x C x H x W activation to B x C x H*W (a
/// sequence of L = H*W positions of C features, as YOLOv8's head flattens
/// each scale), the nodes reachable before a graph output, when every one
/// of them works on such sequences: Concat along the features or the
/// positions (other Reshapes' sequences join the region there), Slice of
/// either, elementwise ops whose other operands are sequences or constants
/// that broadcast against them (up to 1 x C x L), activations, Softmax over
/// the features, and YOLOv8's box decoding (DFL: a Reshape to B x G x K x
/// L, Transpose (0, 2, 1, 3), Softmax over K, a 1 x 1 Conv of K to one
/// channel and a Reshape to B x G x L), taken whole as a group_softmax
/// over G groups of K features and a grouped 1 x 1 Conv. The sequences are
/// then held B x C x 1 x L: the Reshapes become memory reshapes, positions
/// the width. Regions with another node are left alone (the token stages
/// try them next).
void makeSequencesImages(Graph& g);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_PASSES_FEATURESEQUENCES_H
