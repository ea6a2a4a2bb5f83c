// Pooling.cpp - runPool: max and average pooling on oneDNN, in the input's
// layout and data type (an int8 layer's u8 or s8 result, a bf16 one).
#include "base/Errors.h"
#include "kernels/Numerics.h"
#include "kernels/Primitives.h"
#include "kernels/TensorImpl.h"

#include <fmt/format.h>

#include <string>

namespace hpvm::rt {
using namespace kern;

void runPool(const Tensor* x, const PoolArgs& a, const KnobSpec& knob,
             Tensor* y) {
  applyThreads();
  HPVM_ASSERT(x != y, "pool output must not alias its input");
  Dims4 xd = dims4(x), yd = dims4(y);
  HPVM_ASSERT(a.kh >= 1 && a.kw >= 1 && a.strideH >= 1 && a.strideW >= 1 &&
                  a.padH >= 0 && a.padW >= 0 && a.bottom() >= 0 &&
                  a.right() >= 0 && xd[2] + a.padH + a.bottom() >= a.kh &&
                  xd[3] + a.padW + a.right() >= a.kw && a.padH < a.kh &&
                  a.padW < a.kw && a.bottom() < a.kh && a.right() < a.kw,
              fmt::format("bad pool arguments for x {}: window {}x{} pad "
                          "{}x{} (after {}x{}) stride {}x{}",
                          dimsStr(x), a.kh, a.kw, a.padH, a.padW, a.bottom(),
                          a.right(), a.strideH, a.strideW));
  int64_t Ho = 1 + (xd[2] + a.padH + a.bottom() - a.kh) / a.strideH;
  int64_t Wo = 1 + (xd[3] + a.padW + a.right() - a.kw) / a.strideW;
  HPVM_ASSERT(yd[0] == xd[0] && yd[1] == xd[1] && yd[2] == Ho && yd[3] == Wo,
              fmt::format("pool output dims wrong: x {}, y {}", dimsStr(x),
                          dimsStr(y)));
  // oneDNN's padding for the last window: the output size may leave the
  // right/bottom pad partly unused, which oneDNN needs stated exactly.
  int64_t padBottom = (Ho - 1) * a.strideH + a.kh - xd[2] - a.padH;
  int64_t padRight = (Wo - 1) * a.strideW + a.kw - xd[3] - a.padW;
  // A max pool takes an int8 layer's u8 or s8 result (or a bf16 one) as it is
  // (the maximum of rounded values is the rounded maximum) and hands it on.
  dnnl::memory src =
      a.kind == PoolArgs::Max ? storedMemory(x) : currentMemory(x);
  const dt type = src.get_desc().data_type();
  HPVM_ASSERT(type == dt::f32 || type == dt::u8 || type == dt::s8 ||
                  type == dt::bf16,
              "pool input must be f32, u8, s8 or bf16");
  dnnl::memory::desc dstAny({yd[0], yd[1], yd[2], yd[3]}, type, tag::any);
  auto alg = a.kind == PoolArgs::Max ? dnnl::algorithm::pooling_max
             : a.excludePad ? dnnl::algorithm::pooling_avg_exclude_padding
                            : dnnl::algorithm::pooling_avg_include_padding;
  std::string key = "pool";
  appendKey(key, descKey(src.get_desc()), alg, a.kh, a.kw, a.padH, a.padW,
            padBottom, padRight, a.strideH, a.strideW);
  const Prim& p = cachedPrim(key, [&] {
    dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_inference, alg,
                                     src.get_desc(), dstAny,
                                     {a.strideH, a.strideW}, {a.kh, a.kw},
                                     {a.padH, a.padW}, {padBottom, padRight});
    dnnl::pooling_forward::primitive_desc pd(desc, engine());
    return Prim{dnnl::pooling_forward(pd), pd.src_desc(), {}, pd.dst_desc()};
  });
  const float scale = implOf(x).memScale;
  // The maximum of values rounded to the knob's precision is rounded.
  const bool rounded =
      a.kind == PoolArgs::Max && alreadyRounded(x, knob.precision);
  dnnl::memory dst = outputMemory(y, p.dst);
  p.prim.execute(stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  stream().wait();
  if (type != dt::f32) {
    implOf(y).memScale = scale;
    return;
  }
  keepOrRound(rounded, knob.precision, y);
}

} // namespace hpvm::rt
