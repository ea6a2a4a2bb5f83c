// Bf16DepthwiseTest.cpp - exact bf16 depthwise convolutions (on an AMX
// CPU oneDNN's NHWC kernel, between AMX layers; elsewhere its nChw16c
// ones, or emulation): the convolution of bf16-rounded operands with fp32
// sums, the post-ops folded, the result stored as bf16 when chained.
#include "KernelTestUtil.h"
#include "approx/Approx.h"
#include "approx/Isa.h"
#include "kernels/Reference.h"
#include "kernels/TensorImpl.h"

#include <string>
#include <vector>

using namespace hpvm::rt;
using namespace hpvm::rt::test;

TEST_CASE("Kernels: bf16 depthwise convolutions are the "
          "convolution of bf16-rounded operands, post-ops folded") {
  struct Shape {
    size_t N, C, H, W, KH, KW;
    int stride, pad;
  };
  struct Post {
    Act act;
    float lo, hi;
    bool bias, bn;
  };
  const bool amx = approx::isaLevel() >= approx::IsaLevel::Amx;
  const bool native = approx::isaLevel() >= approx::IsaLevel::Avx512Bf16;
  unsigned seed = 2400;
  for (const Shape& s : {Shape{2, 32, 16, 16, 3, 3, 1, 1},
                         Shape{1, 64, 9, 9, 3, 3, 2, 1},    // stride, tails
                         Shape{2, 80, 7, 6, 3, 3, 1, 1},    // 4 + 1 vectors
                         Shape{1, 48, 11, 11, 5, 5, 2, 2},  // 5x5 window
                         Shape{3, 16, 4, 4, 3, 3, 1, 2}}) { // all-pad rows
    for (const Post& p : {Post{Act::None, 0, 0, false, false},
                          Post{Act::Relu, 0, 0, true, false},
                          Post{Act::Clip, 0.f, 0.5f, true, false},
                          Post{Act::LeakyRelu, 0.1f, 0, false, false},
                          Post{Act::Relu, 0, 0, true, true}}) {
      for (bool chained : {false, true}) {
        ++seed;
        const std::string what =
            "C " + std::to_string(s.C) + " " + std::to_string(s.KH) + "x" +
            std::to_string(s.KW) + " stride " + std::to_string(s.stride) +
            " act " + std::to_string(int(p.act)) + (p.bn ? " bn" : "") +
            (chained ? " bf16 out" : "");
        ConvArgs a{s.pad, s.pad, s.stride, s.stride, int(s.C)};
        const size_t Ho = 1 + (s.H + 2 * s.pad - s.KH) / s.stride,
                     Wo = 1 + (s.W + 2 * s.pad - s.KW) / s.stride;
        TestTensor x({s.N, s.C, s.H, s.W}), w({s.C, 1, s.KH, s.KW}),
            b({1, s.C, 1, 1}), g({1, s.C, 1, 1}), be({1, s.C, 1, 1}),
            m({1, s.C, 1, 1}), v({1, s.C, 1, 1}), y({s.N, s.C, Ho, Wo});
        x.set(randomVec(x.size(), seed));
        w.set(randomVec(w.size(), seed + 1, -0.5f, 0.5f));
        b.set(randomVec(b.size(), seed + 2, -0.5f, 0.5f));
        g.set(randomVec(g.size(), seed + 3, 0.5f, 1.5f));
        be.set(randomVec(be.size(), seed + 4, -0.5f, 0.5f));
        m.set(randomVec(m.size(), seed + 5, -0.5f, 0.5f));
        v.set(randomVec(v.size(), seed + 6, 0.1f, 1.f));
        PostOps post;
        post.act = p.act;
        post.actLo = p.lo;
        post.actHi = p.hi;
        post.bf16Out = chained;
        if (p.bias)
          post.bias = b.get();
        if (p.bn) {
          post.bnGamma = g.get();
          post.bnBeta = be.get();
          post.bnMean = m.get();
          post.bnVar = v.get();
          post.bnEps = 1e-3;
        }
        runConv(x.get(), w.get(), a, post,
                knobOf(Variant::Exact, Precision::BF16), y.get());
        if (amx)
          CHECK_MESSAGE(std::string(lastConvVariant()) == "exact-amx",
                        what << ": ran " << lastConvVariant());
        if (native)
          CHECK_MESSAGE((kern::storedMemory(y.get()).get_desc().data_type() ==
                         dnnl::memory::data_type::bf16) == chained,
                        what);
        // The reference: bf16-rounded input and (folded) filter, fp32 sums.
        std::vector<float> xv = x.values(), wv = w.values(), bias(s.C, 0.f);
        if (p.bias)
          bias = b.values();
        if (p.bn) {
          const std::vector<float> gv = g.values(), bev = be.values(),
                                   mv = m.values(), vv = v.values();
          for (size_t k = 0; k < s.C; ++k) {
            const double sc = gv[k] / std::sqrt(1e-3 + vv[k]);
            for (size_t e = 0; e < s.KH * s.KW; ++e)
              wv[k * s.KH * s.KW + e] =
                  static_cast<float>(wv[k * s.KH * s.KW + e] * sc);
            bias[k] = static_cast<float>(bev[k] + (bias[k] - mv[k]) * sc);
          }
        }
        approx::roundToBf16(xv.data(), int64_t(xv.size()));
        approx::roundToBf16(wv.data(), int64_t(wv.size()));
        std::vector<float> want(y.size());
        ref::conv2d(xv.data(), s.N, s.C, s.H, s.W, wv.data(), s.C, s.KH, s.KW,
                    a, want.data());
        for (size_t i = 0; i < want.size(); ++i)
          want[i] += bias[(i / (Ho * Wo)) % s.C];
        ref::act(want.data(), int64_t(want.size()), p.act, p.lo, p.hi,
                 want.data());
        std::vector<float> got = y.values();
        if (chained && native) {
          std::vector<float> rounded = got;
          approx::roundToBf16(rounded.data(), int64_t(rounded.size()));
          CHECK_MESSAGE(rounded == got, what << ": not bf16 values");
          approx::roundToBf16(want.data(), int64_t(want.size()));
          // fp32 sums in another order may round to the neighbouring bf16.
          checkClose(got, want, 1.0 / 128, 1e-6, what);
        } else {
          // Exact products, fp32 sums in another order.
          checkClose(got, want, 1e-5, 1e-5, what);
        }
      }
    }
  }
}
