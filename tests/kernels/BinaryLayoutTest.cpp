// BinaryLayoutTest.cpp - the binary ops (multiply, add, the arithmetic) on
// every layout a producer may leave, with second operands of the same shape
// or broadcast: right values, and oneDNN's vectorised kernel, never its
// reference one (an N x C x 1 x 1 gate described in another layout than the
// activation made oneDNN fall back to it, 100 times slower).
#include "KernelTestUtil.h"
#include "approx/Isa.h"
#include "kernels/Primitives.h"
#include "kernels/TensorImpl.h"

#include <set>

using namespace hpvm::rt;
using namespace hpvm::rt::test;
using namespace hpvm::rt::kern;

namespace {

/// Keys of the cached binary primitives that are oneDNN's reference code.
std::set<std::string> referenceBinaries() {
  std::set<std::string> found;
  std::lock_guard<std::mutex> lock(primMutex);
  for (const auto& [key, prim] : primCache())
    if (key.rfind("binary", 0) == 0 && prim.reference)
      found.insert(key);
  return found;
}

/// The layouts convolutions leave: plain, NHWC (int8, bf16) and the ISA's
/// channel blocks (16 with AVX-512, 8 below).
std::vector<tag> producerLayouts() {
  return {tag::nchw, tag::nhwc,
          approx::haveAvx512() ? tag::nChw16c : tag::nChw8c};
}

/// An activation a (N x C x H x W, values in [lo, hi], held in \p layout)
/// and a gate g (gateN x C x 1 x 1, values in [gLo, gHi]), with their
/// values, and an output y.
struct GateCase {
  TestTensor a, g, y;
  std::vector<float> av, gv;
  GateCase(size_t N, size_t C, size_t H, size_t W, size_t gateN, tag layout,
           unsigned seed, float lo, float hi, float gLo, float gHi)
      : a({N, C, H, W}), g({gateN, C, 1, 1}), y({N, C, H, W}),
        av(randomVec(a.size(), seed, lo, hi)),
        gv(randomVec(g.size(), seed + 1, gLo, gHi)) {
    place(a, av, layout);
    g.set(gv);
  }
};

} // namespace

TEST_CASE("Kernels: multiply by an N x C x 1 x 1 gate runs vectorised on "
          "every layout of the activation") {
  const size_t N = 2, C = 32, H = 7, W = 5;
  unsigned seed = 900;
  for (tag layout : producerLayouts())
    for (size_t gateN : {size_t(1), N}) {
      GateCase t(N, C, H, W, gateN, layout, seed += 2, -1.f, 1.f, -1.f, 1.f);
      TestTensor &a = t.a, &g = t.g, &y = t.y;
      const std::vector<float>&av = t.av, &gv = t.gv;
      const std::set<std::string> before = referenceBinaries();
      runMultiply(a.get(), g.get(), Act::None, 0, 0, KnobSpec{}, y.get());
      std::vector<float> want(a.size());
      for (size_t n = 0; n < N; ++n)
        for (size_t c = 0; c < C; ++c)
          for (size_t i = 0; i < H * W; ++i) {
            const size_t at = (n * C + c) * H * W + i;
            want[at] = av[at] * gv[(gateN == 1 ? 0 : n) * C + c];
          }
      const std::string what = fmt::format("layout {} gate batch {}",
                                           static_cast<int>(layout), gateN);
      checkClose(y.values(), want, 1e-6f, 1e-6f, what);
      INFO(what);
      for (const std::string& k : referenceBinaries())
        CHECK_MESSAGE(before.count(k), k);
    }
}

TEST_CASE("Kernels: a gate's product asked for int8 readers is stored as "
          "the s8 or u8 codes quantizing it would give, in its layout") {
  // (The multiply of a squeeze-and-excitation gate ahead of an int8
  // projection: the codes the int8 layer would make of the fp32 product,
  // rounded to nearest even and saturated, one pass instead of two.)
  const size_t N = 2, C = 48, H = 7, W = 5;
  unsigned seed = 950;
  for (tag layout : producerLayouts())
    for (bool s8 : {true, false}) {
      GateCase t(N, C, H, W, N, layout, seed += 2, -2.f, 2.f, 0.f, 1.f);
      TestTensor &a = t.a, &g = t.g, &y = t.y;
      const std::vector<float>&av = t.av, &gv = t.gv;
      // A scale that saturates the largest products.
      const float scale = 1.5f / (s8 ? 127.f : 255.f);
      runMultiply(a.get(), g.get(), Act::None, 0, 0, KnobSpec{}, y.get(), scale,
                  s8);
      const dnnl::memory stored = storedMemory(y.get());
      const std::string what = fmt::format(
          "layout {}, {}", static_cast<int>(layout), s8 ? "s8" : "u8");
      INFO(what);
      CHECK(stored.get_desc().data_type() == (s8 ? dt::s8 : dt::u8));
      CHECK(implOf(y.get()).memScale == scale);
      std::vector<float> want(a.size());
      int saturated = 0;
      for (size_t n = 0; n < N; ++n)
        for (size_t c = 0; c < C; ++c)
          for (size_t i = 0; i < H * W; ++i) {
            const size_t at = (n * C + c) * H * W + i;
            const float p = av[at] * gv[n * C + c];
            const float q = std::nearbyint(std::clamp(
                p * (1.f / scale), s8 ? -128.f : 0.f, s8 ? 127.f : 255.f));
            saturated += q == (s8 ? 127.f : 255.f) || q == (s8 ? -128.f : 0.f);
            want[at] = q * scale;
          }
      CHECK(y.values() == want);
      CHECK(saturated > 0);
      // In place (y is a): the product stays fp32.
      runMultiply(a.get(), g.get(), Act::None, 0, 0, KnobSpec{}, a.get(), scale,
                  s8);
      CHECK(storedMemory(a.get()).get_desc().data_type() == dt::f32);
    }
}

TEST_CASE("Kernels: add with an activation is right on every blocked "
          "layout, in place or not, and keeps the channel padding zero") {
  // oneDNN 2.6's binary kernel with an eltwise post-op is wrong on aBcd4b
  // and nChw8c (a grouped convolution's output) and on a padded nChw16c in
  // place: runAdd combines operands of one layout as flat arrays.
  const size_t N = 2, H = 5, W = 3;
  unsigned seed = 990;
  for (tag layout :
       {tag::nchw, tag::nhwc, tag::aBcd4b, tag::nChw8c, tag::nChw16c})
    for (size_t C : {size_t(6), size_t(8), size_t(20), size_t(32)})
      for (Act act : {Act::None, Act::Relu, Act::Sigmoid})
        for (bool inPlace : {false, true}) {
          const std::string what = fmt::format(
              "layout {} C {} act {} {}", static_cast<int>(layout), C,
              static_cast<int>(act), inPlace ? "in place" : "out of place");
          INFO(what);
          TestTensor a({N, C, H, W}), b({N, C, H, W}), y({N, C, H, W});
          const std::vector<float> av = randomVec(a.size(), ++seed),
                                   bv = randomVec(b.size(), ++seed);
          place(a, av, layout);
          place(b, bv, layout);
          Tensor* out = inPlace ? a.get() : y.get();
          runAdd(a.get(), b.get(), act, 0.f, 0.f, KnobSpec{}, out);
          std::vector<float> want(av.size());
          for (size_t i = 0; i < want.size(); ++i)
            want[i] = av[i] + bv[i];
          ref::act(want.data(), int64_t(want.size()), act, 0.f, 0.f,
                   want.data());
          checkClose(inPlace ? a.values() : y.values(), want, 1e-6f, 1e-6f,
                     what);
          // The padded channels of the last block still hold zeros.
          CHECK(paddingNonzeros(out) == 0);
        }
}

TEST_CASE("Kernels: subtract, divide, maximum and minimum are right on every "
          "layout, the second operand the same shape or broadcast") {
  const size_t N = 2, C = 20, H = 5, W = 3;
  unsigned seed = 1100;
  const std::vector<std::vector<size_t>> seconds = {
      {N, C, H, W}, {N, C, 1, 1}, {1, C, 1, 1}, {N, 1, H, 1}, {1, 1, 1, 1}};
  for (tag layout : {tag::nchw, tag::nhwc, tag::aBcd4b, tag::nChw16c})
    for (const std::vector<size_t>& bd : seconds)
      for (Arith op : {Arith::Sub, Arith::Div, Arith::Max, Arith::Min})
        for (bool inPlace : {false, true}) {
          const std::string what = fmt::format(
              "layout {} second {}x{}x{}x{} op {} {}", static_cast<int>(layout),
              bd[0], bd[1], bd[2], bd[3], static_cast<int>(op),
              inPlace ? "in place" : "out of place");
          INFO(what);
          TestTensor a({N, C, H, W}), b(bd), y({N, C, H, W});
          const std::vector<float> av = randomVec(a.size(), ++seed),
                                   bv = randomVec(b.size(), ++seed, 0.5f, 2.f);
          place(a, av, layout);
          if (bd[1] == C && bd[2] == H)
            place(b, bv, layout);
          else
            b.set(bv);
          Tensor* out = inPlace ? a.get() : y.get();
          runArith(op, a.get(), b.get(), KnobSpec{}, out);
          std::vector<float> want(av.size());
          for (size_t i = 0; i < want.size(); ++i) {
            const size_t w = i % W, h = i / W % H, c = i / (W * H) % C,
                         n = i / (W * H * C);
            const size_t at =
                ((std::min(n, bd[0] - 1) * bd[1] + std::min(c, bd[1] - 1)) *
                     bd[2] +
                 std::min(h, bd[2] - 1)) *
                    bd[3] +
                std::min(w, bd[3] - 1);
            const float x = av[i], v = bv[at];
            want[i] = op == Arith::Sub   ? x - v
                      : op == Arith::Div ? x / v
                      : op == Arith::Max ? std::max(x, v)
                                         : std::min(x, v);
          }
          checkClose(inPlace ? a.values() : y.values(), want, 1e-6f, 1e-6f,
                     what);
        }
}

TEST_CASE("Kernels: add and multiply broadcast a second operand whose dims "
          "are each the first's or 1 on every layout, with a fused "
          "activation, the new broadcasts vectorised") {
  struct Case {
    std::vector<size_t> a, b;
  };
  // YOLO's anchors 1 x 2 x 1 x L, a row 1 x 1 x 1 x W, per-pixel values
  // 1 x C x H x 1, a batch-1 operand against a batch of 4, 84 values along
  // the width of 84 channels (a broadcast, not one per channel), and the
  // paths kept: the same shape, one value per channel, an N x C x 1 x 1
  // gate.
  const std::vector<Case> cases = {
      {{4, 2, 1, 84}, {1, 2, 1, 84}},  {{4, 4, 1, 84}, {1, 1, 1, 84}},
      {{2, 20, 3, 5}, {1, 20, 3, 1}},  {{4, 20, 3, 5}, {1, 20, 3, 5}},
      {{2, 84, 1, 84}, {1, 1, 1, 84}}, {{2, 20, 3, 5}, {2, 20, 3, 5}},
      {{2, 20, 3, 5}, {1, 20, 1, 1}},  {{2, 20, 3, 5}, {2, 20, 1, 1}}};
  unsigned seed = 1200;
  for (const Case& k : cases)
    for (tag layout : {tag::nchw, tag::nhwc, tag::aBcd4b, tag::nChw16c})
      for (bool multiply : {false, true})
        for (Act act : {Act::None, Act::Relu, Act::Clip, Act::Sigmoid})
          for (bool inPlace : {false, true}) {
            const std::vector<size_t>&ad = k.a, &bd = k.b;
            const std::string what = fmt::format(
                "{} {}x{}x{}x{} by {}x{}x{}x{} layout {} act {} {}",
                multiply ? "multiply" : "add", ad[0], ad[1], ad[2], ad[3],
                bd[0], bd[1], bd[2], bd[3], static_cast<int>(layout),
                static_cast<int>(act), inPlace ? "in place" : "out of place");
            INFO(what);
            TestTensor a(ad), b(bd), y(ad);
            const std::vector<float> av = randomVec(a.size(), ++seed, -2, 2),
                                     bv = randomVec(b.size(), ++seed, -2, 2);
            place(a, av, layout);
            if (bd == ad)
              place(b, bv, layout);
            else
              b.set(bv);
            const float lo = act == Act::Clip ? -0.5f : 0.f,
                        hi = act == Act::Clip ? 1.5f : 0.f;
            const std::set<std::string> before = referenceBinaries();
            Tensor* out = inPlace ? a.get() : y.get();
            if (multiply)
              runMultiply(a.get(), b.get(), act, lo, hi, KnobSpec{}, out);
            else
              runAdd(a.get(), b.get(), act, lo, hi, KnobSpec{}, out);
            // The reference: b's value at each index, its dims of 1 read
            // at 0.
            std::vector<float> want(av.size());
            for (size_t i = 0; i < want.size(); ++i) {
              const size_t w = i % ad[3], h = i / ad[3] % ad[2],
                           c = i / (ad[3] * ad[2]) % ad[1],
                           n = i / (ad[3] * ad[2] * ad[1]);
              const size_t at =
                  (((bd[0] == 1 ? 0 : n) * bd[1] + (bd[1] == 1 ? 0 : c)) *
                       bd[2] +
                   (bd[2] == 1 ? 0 : h)) *
                      bd[3] +
                  (bd[3] == 1 ? 0 : w);
              want[i] = multiply ? av[i] * bv[at] : av[i] + bv[at];
            }
            ref::act(want.data(), int64_t(want.size()), act, lo, hi,
                     want.data());
            checkClose(inPlace ? a.values() : y.values(), want, 1e-6f, 1e-6f,
                       what);
            // The broadcasts beyond a gate or a value per channel run on
            // oneDNN's vectorised kernel. (Those two keep their paths: on
            // a padded channel block with an activation, oneDNN's
            // reference kernel.)
            if (bd != ad && (bd[2] != 1 || bd[3] != 1))
              for (const std::string& key : referenceBinaries())
                CHECK_MESSAGE(before.count(key), key);
          }
}

TEST_CASE("Kernels: addForm tells a broadcast from one value per channel") {
  using D = std::array<int64_t, 4>;
  CHECK(addForm(D{2, 5, 3, 4}, D{2, 5, 3, 4}) == AddForm::Elementwise);
  CHECK(addForm(D{2, 5, 3, 4}, D{1, 1, 1, 120}) == AddForm::Elementwise);
  CHECK(addForm(D{2, 5, 3, 4}, D{1, 5, 1, 1}) == AddForm::PerChannel);
  // C values in dims that do not broadcast: one per channel, as before.
  CHECK(addForm(D{2, 5, 3, 4}, D{1, 1, 5, 1}) == AddForm::PerChannel);
  CHECK(addForm(D{2, 5, 3, 4}, D{5, 1, 1, 1}) == AddForm::PerChannel);
  // C values that broadcast along another dim: that broadcast.
  CHECK(addForm(D{2, 4, 3, 4}, D{1, 1, 1, 4}) == AddForm::Broadcast);
  CHECK(addForm(D{2, 5, 3, 4}, D{1, 5, 3, 1}) == AddForm::Broadcast);
  CHECK(addForm(D{2, 5, 3, 4}, D{1, 5, 3, 4}) == AddForm::Broadcast);
  CHECK(addForm(D{2, 5, 3, 4}, D{2, 5, 1, 1}) == AddForm::Broadcast);
  CHECK(addForm(D{2, 5, 3, 4}, D{1, 1, 1, 1}) == AddForm::Broadcast);
  CHECK(addForm(D{2, 1, 3, 4}, D{1, 1, 1, 1}) == AddForm::PerChannel);
  CHECK(addForm(D{2, 5, 3, 4}, D{1, 5, 1, 7}) == AddForm::None);
  CHECK(broadcastsTo(D{1, 5, 1, 4}, D{2, 5, 3, 4}));
  CHECK(!broadcastsTo(D{1, 5, 1, 2}, D{2, 5, 3, 4}));
}
