// QuantizeTest.cpp - quantize (a pre-quantized model's QuantizeLinear and
// DequantizeLinear) against ONNX's definition, on every layout a producer
// may leave, in place or not: round half to even, saturation, and a
// blocked layout's padding kept zero.
#include "KernelTestUtil.h"

using namespace hpvm::rt;
using namespace hpvm::rt::test;
using namespace hpvm::rt::kern;

TEST_CASE("Kernels: quantize puts values on the model's grid as ONNX "
          "defines it") {
  const size_t N = 2, H = 5, W = 3;
  struct Grid {
    float scale, zero, lo, hi;
  };
  // uint8 with a zero point, int8 symmetric, uint8 from zero (after ReLU).
  const Grid grids[] = {{0.0078125f, 128.f, 0.f, 255.f},
                        {0.01f, 0.f, -128.f, 127.f},
                        {0.03f, 0.f, 0.f, 255.f}};
  unsigned seed = 1200;
  for (tag layout : {tag::nchw, tag::nhwc, tag::nChw16c})
    for (size_t C : {size_t(20), size_t(32)})
      for (const Grid& g : grids)
        for (bool inPlace : {false, true}) {
          const std::string what = fmt::format(
              "layout {} C {} scale {} zero {} {}", static_cast<int>(layout), C,
              g.scale, g.zero, inPlace ? "in place" : "out of place");
          INFO(what);
          TestTensor x({N, C, H, W}), y({N, C, H, W});
          std::vector<float> v = randomVec(x.size(), ++seed, -2.f, 2.f);
          // Exact ties (k + 1/2 steps): rounded to the even k.
          for (size_t i = 0; i < v.size(); i += 7)
            v[i] = (std::floor(v[i] / g.scale) + 0.5f) * g.scale;
          place(x, v, layout);
          Tensor* out = inPlace ? x.get() : y.get();
          const double scalars[] = {g.scale, g.zero, g.lo, g.hi};
          Tensor* in[] = {x.get()};
          runQuantize(OpCall{in, 1, scalars, {}, KnobSpec{}, out});
          std::vector<float> want(v.size());
          int saturated = 0;
          for (size_t i = 0; i < v.size(); ++i) {
            const float r = std::nearbyint(v[i] / g.scale) + g.zero;
            const float q = std::clamp(r, g.lo, g.hi);
            saturated += q != r;
            want[i] = (q - g.zero) * g.scale;
          }
          CHECK(saturated > 0);
          CHECK((inPlace ? x.values() : y.values()) == want);
          // The padded channels of the last block still hold zeros.
          CHECK(paddingNonzeros(out) == 0);
        }
}
