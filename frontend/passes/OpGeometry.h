// OpGeometry.h - what ONNX operators' attributes and constant operands mean
// for shapes (slices, windows, pads, reshapes), shared by the passes and the
// lowering.
#ifndef TORCH2HPVM_FRONTEND_PASSES_OPGEOMETRY_H
#define TORCH2HPVM_FRONTEND_PASSES_OPGEOMETRY_H

#include "ir/Graph.h"

#include "hpvm_rt/Resize.h"

#include <string>
#include <vector>

namespace hpvm::fe {

class OpAttrs;

/// HPVM's 4-D form of an ONNX activation shape: rank 4 as is, (N, K) as
/// (N, K, 1, 1); empty for every other rank.
std::vector<int64_t> form4d(const std::vector<int64_t>& shape);

/// Axes from attribute "axes" or constant input 1; false if unknown.
bool axesOf(Node* n, OpAttrs& a, std::vector<int64_t>& axes);

/// Resolves ONNX Reshape target \p target (0 copies, -1 infers) against
/// \p in; {} when it cannot be resolved.
std::vector<int64_t> resolveReshape(const std::vector<int64_t>& in,
                                    std::vector<int64_t> target);

// \p opset, the model's default-domain opset, selects attribute defaults
// (OpAttrs).

/// Why Pad node \p pad cannot be folded into its consumer, or "" if it can.
std::string padFoldBlocker(const Node& pad, int64_t opset);

/// The pads of ONNX Pad \p pad (every axis's begin, then every end), from
/// its attribute or constant input; false if they are computed at run time.
bool constantPads(const Node& pad, int64_t opset, std::vector<int64_t>& pads);

/// The pads (N, C, H, W begins, then ends) and padding value of ONNX Pad
/// \p pad: "" if they are constants padding only H and W of a 4-D input
/// by >= 0, else why not. \p channelLast: the input is N x H x W x C.
std::string padGeometry(const Node& pad, int64_t opset,
                        std::vector<int64_t>& pads, double& value,
                        bool channelLast = false);

/// Why Flatten/Reshape node \p r cannot be aliased away, or "" if it can.
std::string reshapeAliasBlocker(const Node& r, int64_t opset);

/// The shape the ONNX-level Flatten/Reshape \p r produces, {} if unknown.
std::vector<int64_t> reshapeTarget(const Node& r, int64_t opset);

/// The begin, step and output extent of each axis of ONNX Slice \p n over
/// an input of dims \p dims (ONNX's clamping rules); false if its starts,
/// ends, axes or steps are not constants or are invalid.
bool sliceGeometry(const Node& n, int64_t opset,
                   const std::vector<int64_t>& dims,
                   std::vector<int64_t>& begin, std::vector<int64_t>& step,
                   std::vector<int64_t>& extent);

/// Spatial geometry of a window op (conv or pool) along one axis.
struct Axis {
  int64_t in = 0, kernel = 0, stride = 1, padBegin = 0, padEnd = 0;
  int64_t pad = 0; ///< Symmetric pad chosen for HPVM.
  int64_t out = 0;
  /// The pad after the input the last window reaches into (ceil_mode's
  /// partial window included; at most padEnd without ceil_mode).
  int64_t padEndUsed = 0;
  /// HPVM's symmetric pad computes the same windows (see resolveAxis).
  bool symmetric = true;
  /// ceil_mode's last window reaches past the end padding.
  bool overhang = false;
};

/// Computes pads (explicit or auto_pad) and output size of \p axis and
/// whether HPVM's symmetric pad padBegin computes the same outputs; returns
/// why the window does not fit, or "".
std::string resolveAxis(Axis& a, const std::string& autoPad, bool ceilMode,
                        const char* axisName);

/// Reads kernel/stride/pad attributes of a Conv or pool over the spatial
/// dims of \p x into \p h and \p w; returns why they do not fit, or "".
std::string windowGeometry(OpAttrs& attrs, const std::vector<int64_t>& x,
                           int64_t kh, int64_t kw, bool ceilMode, Axis& h,
                           Axis& w);

/// What an ONNX ConvTranspose of a 4-D input computes: the pads the
/// output keeps of the full scatter (begin; end less output_padding, so
/// possibly negative), strides, dilations, groups, and the output size.
struct TransposeGeometry {
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  int64_t strideH = 1, strideW = 1, dilH = 1, dilW = 1, groups = 1;
  int64_t outH = 0, outW = 0;
};

/// Reads ConvTranspose node \p n over input dims \p x and filter dims \p w
/// (C x K/groups x KH x KW); returns why it cannot be computed, or "".
std::string transposeGeometry(const Node& n, int64_t opset,
                              const std::vector<int64_t>& x,
                              const std::vector<int64_t>& w,
                              TransposeGeometry& g);

/// What an ONNX Resize (opsets 10-19) or Upsample (7-9) of a 4-D input
/// computes: its output size, the scales its coordinates map with, and
/// the modes (hpvm_rt/Resize.h).
struct ResizeGeometry {
  bool linear = false;
  bool cubic = false;    ///< (neither: nearest)
  float cubicA = -0.75f; ///< cubic_coeff_a
  bool excludeOutside = false;
  int64_t outH = 0, outW = 0;
  float scaleH = 1.f, scaleW = 1.f;
  hpvm::rt::ResizeCoord coord = hpvm::rt::ResizeCoord::HalfPixel;
  hpvm::rt::NearestRounding rounding =
      hpvm::rt::NearestRounding::RoundPreferFloor;
  /// tf_crop_and_resize: the region (top, left, bottom, right; roi's
  /// starts and ends of the height and width) and extrapolation_value.
  bool crop = false;
  float roi[4] = {0.f, 0.f, 1.f, 1.f};
  float extrapolation = 0.f;
};

/// Reads Resize or Upsample node \p n over input dims \p x (batch may be
/// unknown); returns every reason it cannot be computed ("; "-separated),
/// or "". Its scales or sizes must be constants (folded from shapes).
std::string resizeGeometry(const Node& n, int64_t opset,
                           const std::vector<int64_t>& x, ResizeGeometry& g);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_PASSES_OPGEOMETRY_H
