// ConvPerforatedExact.cpp - perforation as the exact convolution and a
// copy (ConvPerforatedExact.h).
#include "kernels/ConvPerforatedExact.h"

#include "approx/ConvGeometry.h"
#include "kernels/Primitives.h"

#include <array>
#include <cstring>
#include <vector>

namespace hpvm::rt::kern {

namespace {

/// Which of the two positions of an axis of two perforation computes.
std::array<bool, 2> keptOfTwo(const KnobSpec& knob) {
  const std::vector<bool> kept =
      approx::perforationKept(2, knob.rate, knob.offset);
  return {kept[0], kept[1]};
}

} // namespace

bool perforationIsCopy(const KnobSpec& knob, const PostOps& post,
                       const Dims4& yd) {
  if ((knob.variant != Variant::PerfRow && knob.variant != Variant::PerfCol) ||
      knob.rate <= 1 || post.residual)
    return false;
  const int64_t len = knob.variant == Variant::PerfRow ? yd[2] : yd[3];
  if (len != 2)
    return false;
  const std::array<bool, 2> kept = keptOfTwo(knob);
  return kept[0] != kept[1];
}

void copySkipped(Tensor* y, const KnobSpec& knob) {
  const Dims4 d = dims4(y);
  const int64_t N = d[0], C = d[1], H = d[2], W = d[3];
  const bool rows = knob.variant == Variant::PerfRow;
  const int64_t to = keptOfTwo(knob)[0] ? 1 : 0, from = 1 - to;
  TensorImpl& impl = implOf(y);
  // In place in y's stored layout where it is one of the activations'
  // (fp32 or bf16; NCHW, NHWC or nChw16c), else on the host copy.
  if (impl.memValid && impl.memScale == 1.f) {
    const dnnl::memory::desc have = impl.mem.get_desc();
    const dnnl::memory::dims dims{N, C, H, W};
    const int64_t CB = (C + 15) / 16;
    for (const dt type : {dt::f32, dt::bf16})
      for (const tag layout : {tag::nchw, tag::nhwc, tag::nChw16c}) {
        if (have != dnnl::memory::desc(dims, type, layout))
          continue;
        const size_t bytes = type == dt::f32 ? 4 : 2;
        auto* base = static_cast<char*>(impl.mem.get_data_handle());
        auto at = [&](int64_t n, int64_t c, int64_t h, int64_t w) {
          int64_t e = 0;
          if (layout == tag::nchw)
            e = ((n * C + c) * H + h) * W + w;
          else if (layout == tag::nhwc)
            e = ((n * H + h) * W + w) * C + c;
          else
            e = (((n * CB + c / 16) * H + h) * W + w) * 16 + c % 16;
          return base + e * int64_t(bytes);
        };
#pragma omp parallel for schedule(static)
        for (int64_t n = 0; n < N; ++n)
          for (int64_t c = 0; c < C; ++c)
            for (int64_t i = 0; i < (rows ? W : H); ++i)
              std::memcpy(rows ? at(n, c, to, i) : at(n, c, i, to),
                          rows ? at(n, c, from, i) : at(n, c, i, from), bytes);
        const Precision rounded = impl.roundedTo; // (a copy keeps it)
        markInPlace(y, impl.mem);
        impl.roundedTo = rounded;
        return;
      }
  }
  const Precision rounded = impl.roundedTo;
  ensureHost(y);
  float* p = impl.host;
  for (int64_t plane = 0; plane < N * C; ++plane)
    for (int64_t i = 0; i < (rows ? W : H); ++i) {
      float* q = p + plane * H * W;
      if (rows)
        q[to * W + i] = q[from * W + i];
      else
        q[i * W + to] = q[i * W + from];
    }
  markHostWritten(y);
  impl.roundedTo = rounded;
}

} // namespace hpvm::rt::kern
