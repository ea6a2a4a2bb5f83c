// BinaryLayoutTest.cpp - the binary ops (multiply, add) on every layout a
// producer may leave: right values, and oneDNN's vectorised kernel, never its
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

/// t holds \p v in layout \p layout (its device buffer; the host copy stale).
void place(TestTensor& t, const std::vector<float>& v, tag layout) {
  t.set(v);
  const Dims4 d = dims4(t.get());
  const dnnl::memory::desc want({d[0], d[1], d[2], d[3]}, dt::f32, layout);
  if (want == nchwDesc(t.get()))
    return;
  dnnl::memory tmp(want, engine());
  reorder(currentMemory(t.get()), tmp);
  dnnl::memory out = outputMemory(t.get(), want);
  std::memcpy(out.get_data_handle(), tmp.get_data_handle(), want.get_size());
}

/// Keys of the cached binary primitives that are oneDNN's reference code.
std::set<std::string> referenceBinaries() {
  std::set<std::string> found;
  std::lock_guard<std::mutex> lock(primMutex);
  for (const auto& [key, prim] : primCache())
    if (key.rfind("binary", 0) == 0 && prim.reference)
      found.insert(key);
  return found;
}

} // namespace

TEST_CASE("Kernels: multiply by an N x C x 1 x 1 gate runs vectorised on "
          "every layout of the activation") {
  const size_t N = 2, C = 32, H = 7, W = 5;
  unsigned seed = 900;
  // The layouts convolutions leave: plain, NHWC (int8, bf16) and the
  // ISA's channel blocks (16 with AVX-512, 8 below).
  const tag blocked = approx::haveAvx512() ? tag::nChw16c : tag::nChw8c;
  for (tag layout : {tag::nchw, tag::nhwc, blocked})
    for (size_t gateN : {size_t(1), N}) {
      TestTensor a({N, C, H, W}), g({gateN, C, 1, 1}), y({N, C, H, W});
      const std::vector<float> av = randomVec(a.size(), ++seed);
      const std::vector<float> gv = randomVec(g.size(), ++seed);
      place(a, av, layout);
      g.set(gv);
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
