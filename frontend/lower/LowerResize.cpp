// LowerResize.cpp - lowering of ONNX Resize and Upsample to resize_nearest,
// resize_linear or resize_cubic, or (tf_crop_and_resize) their *_crop rows
// (their geometry: OpGeometry's resizeGeometry).
#include "lower/LoweringState.h"

namespace hpvm::fe {

namespace {

std::string lowerResizing(Lowering& L, Node* n) {
  Value* x = n->inputs[0];
  if (auto r = needActivation(x, "input"); !r.empty())
    return r;
  ResizeGeometry geo;
  if (auto r = resizeGeometry(*n, L.g.source.opset, x->shape, geo); !r.empty())
    return r;
  // size h, w; then scale h, w and coord, or (tf_crop_and_resize) the
  // region and the extrapolation value; then the mode's own.
  std::vector<Scalar> scalars = {Scalar::integer(geo.outH),
                                 Scalar::integer(geo.outW)};
  if (geo.crop) {
    for (float v : geo.roi)
      scalars.push_back(Scalar::real(shortestFloat(v)));
    scalars.push_back(Scalar::real(shortestFloat(geo.extrapolation)));
  } else {
    scalars.push_back(Scalar::real(geo.scaleH));
    scalars.push_back(Scalar::real(geo.scaleW));
    scalars.push_back(Scalar::integer(static_cast<int64_t>(geo.coord)));
  }
  if (geo.cubic) {
    scalars.push_back(Scalar::real(shortestFloat(geo.cubicA)));
    scalars.push_back(Scalar::integer(geo.excludeOutside ? 1 : 0));
  } else if (!geo.linear) {
    scalars.push_back(Scalar::integer(static_cast<int64_t>(geo.rounding)));
  }
  const OpKind kind =
      geo.cubic ? (geo.crop ? OpKind::ResizeCubicCrop : OpKind::ResizeCubic)
      : geo.linear
          ? (geo.crop ? OpKind::ResizeLinearCrop : OpKind::ResizeLinear)
          : (geo.crop ? OpKind::ResizeNearestCrop : OpKind::ResizeNearest);
  int pos = L.position(n);
  L.finish(n, L.emit(kind, {x}, std::move(scalars),
                     {x->shape[0], x->shape[1], geo.outH, geo.outW},
                     n->output->name, *n, pos));
  return "";
}

} // namespace

std::string lowerResize(Lowering& L, Node* n) { return lowerResizing(L, n); }

std::string lowerUpsample(Lowering& L, Node* n) { return lowerResizing(L, n); }

} // namespace hpvm::fe
