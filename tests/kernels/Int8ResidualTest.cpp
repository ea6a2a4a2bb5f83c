// Int8ResidualTest.cpp - int8 convolutions that add a residual and hand
// their result on as u8 (PostOps::quantizeOut with a residual): the u8
// residual of the layer before through oneDNN's sum post-op, an fp32 one
// through a binary add, ReLU as the u8 saturation.
#include "KernelTestUtil.h"
#include "kernels/TensorImpl.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace hpvm::rt;
using namespace hpvm::rt::test;

namespace {

using dt = dnnl::memory::data_type;

/// The largest value of v.
float maxOf(const std::vector<float>& v) {
  return *std::max_element(v.begin(), v.end());
}

} // namespace

TEST_CASE("Kernels: an int8 conv adding a u8 or fp32 residual hands on a u8 "
          "result equal to quantizing its fp32 one") {
  // A: x -> int8 conv + bias + ReLU, stored u8 at scale sA (as the next
  // layers take it) or fp32. B: y = relu(conv(x2) + bias + A's result),
  // stored u8 at scale sB. B's u8 codes must be those of quantizing B's
  // fp32 result computed from the same residual values (a near tie may
  // round either way: one code), and ReLU is the u8 saturation.
  const ConvArgs args{1, 1, 1, 1, 1};
  const size_t N = 2, C = 16, K = 32, H = 10;
  TestTensor x({N, C, H, H}), x2({N, K, H, H}), wA({K, C, 3, 3}),
      wB({K, K, 3, 3}), bA({1, K, 1, 1}), bB({1, K, 1, 1});
  x.set(randomVec(x.size(), 2100));
  x2.set(randomVec(x2.size(), 2101, 0.f, 1.f));
  wA.set(randomVec(wA.size(), 2102, -1.f / 12, 1.f / 12));
  wB.set(randomVec(wB.size(), 2103, -1.f / 17, 1.f / 17));
  bA.set(randomVec(bA.size(), 2104, -0.2f, 0.2f));
  bB.set(randomVec(bB.size(), 2105, -0.4f, 0.1f));
  const KnobSpec knobA = int8Knob(false, -1.f, 1.f),
                 knobB = int8Knob(false, 0.f, 1.f);

  PostOps postA;
  postA.bias = bA.get();
  postA.act = Act::Relu;
  TestTensor a32({N, K, H, H});
  runConv(x.get(), wA.get(), args, postA, knobA, a32.get());
  const float sA = maxOf(a32.values()) * 0.9f / 255.f; // a few saturate

  for (bool u8Residual : {true, false}) {
    for (Act act : {Act::None, Act::Relu}) {
      const std::string what = std::string(u8Residual ? "u8" : "fp32") +
                               " residual, activation before the add " +
                               (act == Act::Relu ? "relu" : "none");
      INFO(what);
      TestTensor a({N, K, H, H});
      PostOps chainA = postA;
      if (u8Residual)
        chainA.quantizeOut = sA;
      runConv(x.get(), wA.get(), args, chainA, knobA, a.get());
      REQUIRE((kern::storedMemory(a.get()).get_desc().data_type() == dt::u8) ==
              u8Residual);
      // The residual's values as B reads them (q * sA when u8).
      const std::vector<float> res = a.values();
      TestTensor resF({N, K, H, H});
      resF.set(res);

      PostOps postB;
      postB.bias = bB.get();
      postB.act = act;
      postB.residual = resF.get();
      postB.act2 = Act::Relu;
      TestTensor y32({N, K, H, H});
      runConv(x2.get(), wB.get(), args, postB, knobB, y32.get());
      const std::vector<float> want = y32.values();
      const float sB = maxOf(want) * 0.8f / 255.f;

      postB.residual = a.get();
      postB.quantizeOut = sB;
      TestTensor y({N, K, H, H});
      runConv(x2.get(), wB.get(), args, postB, knobB, y.get());
      CHECK(kern::storedMemory(y.get()).get_desc().data_type() == dt::u8);
      CHECK(kern::implOf(y.get()).memScale == sB);
      const std::vector<float> got = y.values();
      int saturated = 0, zero = 0, off = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        const double q = std::nearbyint(got[i] / sB);
        REQUIRE(got[i] == static_cast<float>(q) * sB);
        const double exact =
            std::min(255.0, std::max(0.0, double(want[i]) / sB));
        INFO("element " << i << ": " << got[i] << " vs " << want[i]);
        REQUIRE(std::fabs(q - exact) <= 1.0);
        off += q != std::nearbyint(exact);
        saturated += q == 255;
        zero += q == 0;
      }
      // The cases the test means: both ends of the u8 range reached, and
      // near ties rare.
      CHECK(saturated > 0);
      CHECK(zero > 0);
      CHECK(off * 100 < static_cast<int>(got.size()));
    }
  }
}

TEST_CASE("Kernels: an int8 conv adding a residual keeps an fp32 result when "
          "no ReLU follows the add") {
  // A negative sum cannot be u8: quantizeOut is ignored, the result is the
  // fp32 one.
  const ConvArgs args{1, 1, 1, 1, 1};
  TestTensor x({1, 16, 6, 6}), w({16, 16, 3, 3}), r({1, 16, 6, 6});
  x.set(randomVec(x.size(), 2200, 0.f, 1.f));
  w.set(randomVec(w.size(), 2201, -0.1f, 0.1f));
  r.set(randomVec(r.size(), 2202));
  PostOps post;
  post.residual = r.get();
  const KnobSpec knob = int8Knob(false, 0.f, 1.f);
  TestTensor want({1, 16, 6, 6}), got({1, 16, 6, 6});
  runConv(x.get(), w.get(), args, post, knob, want.get());
  post.quantizeOut = 0.01f;
  runConv(x.get(), w.get(), args, post, knob, got.get());
  CHECK(kern::implOf(got.get()).memScale == 1.f);
  CHECK(got.values() == want.values());
}
