// ConvTransposeTest.cpp - conv_transpose against the scatter reference on
// U-Net's, FPN's and odd geometries (strides, pads, output padding as a
// negative end pad, dilations, groups), in fp32, fp16 and bf16.
#include "KernelTestUtil.h"

#include <fmt/format.h>

namespace hpvm::rt::test {
namespace {

struct TransposeCase {
  const char* name;
  int64_t n, c, h, w, kg, kh, kw;
  TransposeArgs a;
};

TransposeArgs args(int pt, int pl, int pb, int pr, int s, int d, int g) {
  TransposeArgs a;
  a.padTop = pt;
  a.padLeft = pl;
  a.padBottom = pb;
  a.padRight = pr;
  a.strideH = a.strideW = s;
  a.dilH = a.dilW = d;
  a.groups = g;
  return a;
}

TransposeArgs withStrides(TransposeArgs a, int sh, int sw) {
  a.strideH = sh;
  a.strideW = sw;
  return a;
}

std::vector<float> runTranspose(const TransposeCase& t, TestTensor& x,
                                TestTensor& w, const KnobSpec& knob) {
  const TransposeArgs& a = t.a;
  TestTensor y({size_t(t.n), size_t(t.kg * a.groups), size_t(a.outH(t.h, t.kh)),
                size_t(a.outW(t.w, t.kw))});
  const double scalars[] = {
      double(a.padTop),   double(a.padLeft), double(a.padBottom),
      double(a.padRight), double(a.strideH), double(a.strideW),
      double(a.dilH),     double(a.dilW),    double(a.groups)};
  Tensor* operands[] = {x.get(), w.get()};
  runConvTranspose(OpCall{operands, 2, scalars, PostAct{}, knob, y.get()});
  return y.values();
}

TEST_CASE("ConvTranspose: every geometry matches the scatter reference, in "
          "fp32, fp16 and bf16") {
  const TransposeCase cases[] = {
      // One tap per output pixel (a 1x1 convolution and an interleave).
      {"unet_k2s2", 2, 32, 8, 8, 16, 2, 2, args(0, 0, 0, 0, 2, 1, 1)},
      {"k3s3_odd_channels", 1, 7, 5, 4, 5, 3, 3, args(0, 0, 0, 0, 3, 1, 1)},
      {"k2s2_rect", 3, 12, 3, 6, 9, 2, 2, args(0, 0, 0, 0, 2, 1, 1)},
      {"k3s2p1_outpad1", 1, 16, 7, 9, 16, 3, 3, args(1, 1, 0, 0, 2, 1, 1)},
      {"k4s2p1", 2, 8, 6, 6, 8, 4, 4, args(1, 1, 1, 1, 2, 1, 1)},
      {"stride1_same", 1, 12, 10, 10, 20, 3, 3, args(1, 1, 1, 1, 1, 1, 1)},
      {"dilated2", 1, 8, 9, 7, 4, 3, 3, args(2, 2, 2, 2, 1, 2, 1)},
      {"grouped4", 1, 16, 6, 6, 3, 3, 2, args(1, 0, 1, 0, 2, 1, 4)},
      {"depthwise", 2, 24, 5, 5, 1, 4, 4, args(1, 1, 1, 1, 2, 1, 24)},
      {"rect_k2x3", 1, 5, 4, 6, 7, 2, 3, args(0, 1, 0, 1, 3, 1, 1)},
      // output_padding past the pads: a negative end pad (a zero row and
      // column beyond the last tap).
      {"k2s2_outpad1", 1, 8, 5, 5, 8, 2, 2, args(0, 0, -1, -1, 2, 1, 1)},
      // Split by output phase (a forward convolution per phase): windows
      // larger than the stride, pads past a phase's taps, output padding.
      {"k5s2p2_outpad1", 2, 6, 7, 5, 5, 5, 5, args(2, 2, 1, 1, 2, 1, 1)},
      {"k5s3p3", 1, 9, 6, 8, 4, 5, 5, args(3, 3, 3, 3, 3, 1, 1)},
      {"k3s2_unpadded", 1, 32, 4, 6, 24, 3, 3, args(0, 0, 0, 0, 2, 1, 1)},
      {"k4s2p2_grouped2", 2, 12, 5, 4, 3, 4, 4, args(2, 2, 2, 2, 2, 1, 2)},
      {"k3s2p1_pads_past_input", 1, 4, 2, 2, 3, 3, 3,
       args(2, 2, 2, 2, 2, 1, 1)},
      {"k3x5_s2x3", 1, 8, 5, 4, 8, 3, 5,
       withStrides(args(1, 2, 0, -1, 2, 1, 1), 2, 3)},
  };
  unsigned seed = 900;
  for (const TransposeCase& t : cases) {
    const TransposeArgs& a = t.a;
    TestTensor x({size_t(t.n), size_t(t.c), size_t(t.h), size_t(t.w)});
    TestTensor w({size_t(t.c), size_t(t.kg), size_t(t.kh), size_t(t.kw)});
    x.set(randomVec(x.size(), ++seed));
    w.set(randomVec(w.size(), ++seed, -0.3f, 0.3f));
    std::vector<float> want(
        size_t(t.n * t.kg * a.groups * a.outH(t.h, t.kh) * a.outW(t.w, t.kw)));
    ref::convTranspose(x.values().data(), t.n, t.c, t.h, t.w, w.values().data(),
                       t.kg, t.kh, t.kw, a, want.data());
    checkClose(runTranspose(t, x, w, KnobSpec{}), want, 1e-5, 1e-5,
               fmt::format("{} fp32", t.name));
    // fp16: operands and result rounded to binary16.
    checkClose(runTranspose(t, x, w, knobOf(Variant::Exact, Precision::FP16)),
               want, 4e-3, 4e-3, fmt::format("{} fp16", t.name));
    checkClose(runTranspose(t, x, w, knobOf(Variant::Exact, Precision::BF16)),
               want, 3e-2, 3e-2, fmt::format("{} bf16", t.name));
  }
}

} // namespace
} // namespace hpvm::rt::test
