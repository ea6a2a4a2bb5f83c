// LowerResize.cpp - lowering of ONNX Resize and Upsample to resize_nearest,
// resize_linear or resize_cubic (their geometry: OpGeometry's
// resizeGeometry).
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
  std::vector<Scalar> scalars = {
      Scalar::integer(geo.outH), Scalar::integer(geo.outW),
      Scalar::real(geo.scaleH), Scalar::real(geo.scaleW),
      Scalar::integer(static_cast<int64_t>(geo.coord))};
  if (geo.cubic) {
    scalars.push_back(Scalar::real(shortestFloat(geo.cubicA)));
    scalars.push_back(Scalar::integer(geo.excludeOutside ? 1 : 0));
  } else if (!geo.linear) {
    scalars.push_back(Scalar::integer(static_cast<int64_t>(geo.rounding)));
  }
  const OpKind kind = geo.cubic    ? OpKind::ResizeCubic
                      : geo.linear ? OpKind::ResizeLinear
                                   : OpKind::ResizeNearest;
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
