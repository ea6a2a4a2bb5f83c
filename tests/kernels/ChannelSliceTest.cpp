// ChannelSliceTest.cpp - channel slices of a convolution's blocked output:
// on block boundaries the blocks are copied as they lie and the slice
// stays blocked; elsewhere (or from host values) it goes through NCHW. The
// values equal the input's channels either way.
#include "KernelTestUtil.h"
#include "kernels/TensorImpl.h"

using namespace hpvm::rt;
using namespace hpvm::rt::test;

namespace {

/// Channels [begin, end) of \p x's NCHW values \p v (N x C x HW).
std::vector<float> channels(const std::vector<float>& v, const kern::Dims4& d,
                            int64_t begin, int64_t end) {
  std::vector<float> out;
  const int64_t hw = d[2] * d[3];
  for (int64_t b = 0; b < d[0]; ++b)
    out.insert(out.end(), v.begin() + (b * d[1] + begin) * hw,
               v.begin() + (b * d[1] + end) * hw);
  return out;
}

} // namespace

TEST_CASE("Kernels: a channel slice of a blocked convolution output on "
          "block boundaries stays blocked and equals the channels") {
  // 32 and 20 output channels (20: the last block padded), batch 1 and 3.
  for (const int64_t K : {int64_t{32}, int64_t{20}})
    for (const size_t N : {size_t{1}, size_t{3}}) {
      CAPTURE(K);
      CAPTURE(N);
      TestTensor x({N, 8, 5, 7}), w({size_t(K), 8, 3, 3}),
          y({N, size_t(K), 5, 7}), ref({N, size_t(K), 5, 7});
      x.set(randomVec(x.size(), 21));
      w.set(randomVec(w.size(), 22, -0.3f, 0.3f));
      ConvArgs pad1;
      pad1.padH = pad1.padW = 1;
      runConv(x.get(), w.get(), pad1, PostOps{}, KnobSpec{}, y.get());
      runConv(x.get(), w.get(), pad1, PostOps{}, KnobSpec{}, ref.get());
      const int64_t block = kern::heldChannelBlock(y.get());
      REQUIRE(block != 0); // oneDNN's convolutions write nChw8c or 16c
      const kern::Dims4 yd = {int64_t(N), K, 5, 7};
      // On boundaries: [block, K) (to the end, padded when K is 20) and
      // [0, block); then off them: [1, K - 1).
      const std::vector<std::pair<int64_t, int64_t>> slices = {
          {block, K}, {0, block}, {1, K - 1}};
      const std::vector<float> all = ref.values();
      for (const auto& slice : slices) {
        // (Not a structured binding: clang's C++17 cannot capture one.)
        const int64_t begin = slice.first, end = slice.second;
        CAPTURE(begin);
        CAPTURE(end);
        TestTensor s({N, size_t(end - begin), 5, 7});
        runChannelSlice(y.get(), begin, end, KnobSpec{}, s.get());
        const bool aligned =
            begin % block == 0 && (end % block == 0 || end == K);
        CHECK((kern::heldChannelBlock(s.get()) == block) == aligned);
        CHECK(s.values() == channels(all, yd, begin, end));
      }
    }
}
