// DepthwiseInPlaceTest.cpp - exact fp32 and bf16 depthwise convolutions
// whose input is stored in another type or layout than oneDNN's kernel for
// the knob reads (fp32 or bf16, nChw16c or NHWC): our kernel
// (approx/DepthwiseConv.cpp) reads it in place and computes what oneDNN
// computes from a plain copy of the same values.
#include "KernelTestUtil.h"
#include "approx/Approx.h"
#include "approx/Isa.h"
#include "kernels/Primitives.h"
#include "kernels/TensorImpl.h"

#include <string>
#include <vector>

using namespace hpvm::rt;
using namespace hpvm::rt::test;

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

/// Stores t's values as \p type in \p layout, as a producer's kernel would
/// leave them (the host copy stale).
void storeAs(TestTensor& t, dt type, tag layout) {
  TensorImpl& impl = kern::implOf(t.get());
  const dnnl::memory from = kern::currentMemory(t.get());
  dnnl::memory to({from.get_desc().dims(), type, layout}, kern::engine());
  kern::reorder(from, to);
  impl.mem = to;
  impl.memValid = true;
  impl.hostValid = false;
}

} // namespace

TEST_CASE("Kernels: a depthwise convolution reads an input stored in "
          "another type or layout in place, with oneDNN's results") {
  struct Shape {
    size_t N, C, H, W, KH, KW;
    int stride, pad;
  };
  struct Form {
    dt type;
    tag layout;
  };
  const bool amx = approx::isaLevel() >= approx::IsaLevel::Amx;
  const bool native = approx::isaLevel() >= approx::IsaLevel::Avx512Bf16;
  unsigned seed = 7300;
  for (const Shape& s : {Shape{2, 16, 32, 32, 3, 3, 1, 1}, // 8-pixel tiles
                         Shape{1, 64, 9, 9, 3, 3, 2, 1},   // stride, tails
                         Shape{2, 32, 7, 6, 3, 3, 1, 1},
                         Shape{1, 48, 11, 13, 5, 5, 2, 2}, // 5x5 window
                         Shape{1, 32, 12, 12, 5, 5, 1, 2},
                         Shape{2, 16, 9, 9, 7, 7, 1, 3},    // other windows
                         Shape{3, 16, 4, 4, 3, 3, 1, 3}}) { // all-pad rows
    for (const Precision precision : {Precision::FP32, Precision::BF16}) {
      for (const Act act :
           {Act::None, Act::Relu, Act::Clip, Act::LeakyRelu, Act::HardSwish}) {
        for (const Form form :
             {Form{dt::f32, tag::nChw16c}, Form{dt::f32, tag::nhwc},
              Form{dt::bf16, tag::nhwc}, Form{dt::bf16, tag::nChw16c}}) {
          ++seed;
          const bool chained = precision == Precision::BF16 && native &&
                               form.layout == tag::nhwc && seed % 2 == 0;
          const std::string what =
              "C " + std::to_string(s.C) + " " + std::to_string(s.KH) + "x" +
              std::to_string(s.KW) + " stride " + std::to_string(s.stride) +
              (precision == Precision::BF16 ? " bf16" : " fp32") + " act " +
              std::to_string(int(act)) + " input " +
              (form.type == dt::bf16 ? "bf16 " : "f32 ") +
              (form.layout == tag::nhwc ? "NHWC" : "nChw16c") +
              (chained ? ", bf16 out" : "");
          ConvArgs a{s.pad, s.pad, s.stride, s.stride, int(s.C)};
          const size_t Ho = 1 + (s.H + 2 * s.pad - s.KH) / s.stride,
                       Wo = 1 + (s.W + 2 * s.pad - s.KW) / s.stride;
          // bf16 values, so that every form holds the same ones.
          std::vector<float> xv = randomVec(s.N * s.C * s.H * s.W, seed, -2, 2);
          approx::roundToBf16(xv.data(), int64_t(xv.size()));
          TestTensor x({s.N, s.C, s.H, s.W}), plain({s.N, s.C, s.H, s.W}),
              w({s.C, 1, s.KH, s.KW}), y({s.N, s.C, Ho, Wo}),
              want({s.N, s.C, Ho, Wo});
          x.set(xv);
          plain.set(xv);
          w.set(randomVec(w.size(), seed + 1, -0.5f, 0.5f));
          storeAs(x, form.type, form.layout);
          TestPost post(2, int64_t(s.C), {s.N, s.C, Ho, Wo}, seed + 2);
          post.ops.act = act;
          post.ops.actLo = act == Act::Clip ? -0.25f : 0.1f;
          post.ops.actHi = 0.5f;
          post.ops.bf16Out = chained;
          const KnobSpec knob = knobOf(Variant::Exact, precision);
          runConv(x.get(), w.get(), a, post.ops, knob, y.get());
          const std::string ran = lastConvVariant();
          // oneDNN's form for the knob: fp32 nChw16c; native bf16: NHWC on
          // AMX, else nChw16c; emulated bf16 rounds a copy of any.
          const bool onednnForm =
              precision == Precision::FP32
                  ? form.type == dt::f32 && form.layout == tag::nChw16c
                  : native && form.type == dt::bf16 &&
                        (form.layout == tag::nhwc) == amx;
          CHECK_MESSAGE((ran == "exact-depthwise-in-place") ==
                            (approx::haveAvx512() && !onednnForm),
                        what << ": ran " << ran);
          // The reference: oneDNN on the plain copy.
          PostOps plainPost = post.ops;
          plainPost.bf16Out = false;
          runConv(plain.get(), w.get(), a, plainPost, knob, want.get());
          std::vector<float> got = y.values(), ref = want.values();
          if (chained) {
            // fp32 sums in another order may round to the next bf16.
            approx::roundToBf16(ref.data(), int64_t(ref.size()));
            checkClose(got, ref, 1.0 / 128, 1e-6, what);
          } else {
            checkClose(got, ref, 1e-5, 1e-5, what);
          }
        }
      }
    }
  }
}
