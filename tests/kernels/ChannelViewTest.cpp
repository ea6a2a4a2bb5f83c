// ChannelViewTest.cpp - zero-copy concatenation in the kernels: producers
// write into channel views of a concatenation's buffer (bindChannelView),
// runConcat copies only the parts not found there, and the results equal
// the copying concatenation's bit for bit.
#include "KernelTestUtil.h"
#include "kernels/TensorImpl.h"

using namespace hpvm::rt;
using namespace hpvm::rt::test;

namespace {

/// The oneDNN buffer t's valid copy lives in (nullptr when the host's).
const void* validBuffer(TestTensor& t) {
  const TensorImpl& impl = kern::implOf(t.get());
  return impl.memValid ? impl.mem.get_data_handle() : nullptr;
}

} // namespace

TEST_CASE("Kernels: convolutions write into channel views and runConcat "
          "copies only the parts not in place") {
  TestTensor x({1, 16, 6, 6}), wA({32, 16, 3, 3}), wB({16, 16, 1, 1});
  x.set(randomVec(x.size(), 1));
  wA.set(randomVec(wA.size(), 2, -0.2f, 0.2f));
  wB.set(randomVec(wB.size(), 3, -0.3f, 0.3f));
  ConvArgs pad1;
  pad1.padH = pad1.padW = 1;
  // The copying reference: a, b and an NCHW host part c, concatenated.
  TestTensor a0({1, 32, 6, 6}), b0({1, 16, 6, 6}), c({1, 16, 6, 6});
  c.set(randomVec(c.size(), 4));
  runConv(x.get(), wA.get(), pad1, PostOps{}, KnobSpec{}, a0.get());
  runConv(x.get(), wB.get(), ConvArgs{}, PostOps{}, KnobSpec{}, b0.get());
  TestTensor y0({1, 64, 6, 6}), p0({1, 48, 6, 6});
  Tensor* parts0[] = {a0.get(), b0.get(), c.get()};
  runConcat(parts0, 3, KnobSpec{}, y0.get());
  runConcat(parts0, 2, KnobSpec{}, p0.get());

  // a and b written straight into channels 0..31 and 32..47 of y; p is
  // a view of y's first 48 channels.
  TestTensor y({1, 64, 6, 6}), a({1, 32, 6, 6}), b({1, 16, 6, 6}),
      p({1, 48, 6, 6});
  bindChannelView(y.get(), y.get(), 0);
  bindChannelView(a.get(), y.get(), 0);
  bindChannelView(b.get(), y.get(), 32);
  bindChannelView(p.get(), y.get(), 0);
  runConv(x.get(), wA.get(), pad1, PostOps{}, KnobSpec{}, a.get());
  runConv(x.get(), wB.get(), ConvArgs{}, PostOps{}, KnobSpec{}, b.get());
  const auto* base = static_cast<const float*>(kern::implOf(y.get()).memBuf);
  // (In place: the views are blocked as the convolutions write, nChw16c
  // with AVX-512, nChw8c below it; viewChannelBlock().)
  CHECK(validBuffer(a) == base);
  CHECK(validBuffer(b) == base + 32 * 36);
  Tensor* parts[] = {a.get(), b.get(), c.get()};
  runConcat(parts, 2, KnobSpec{}, p.get());
  CHECK(validBuffer(p) == base);
  runConcat(parts, 3, KnobSpec{}, y.get());
  CHECK(validBuffer(y) == base);
  CHECK(p.values() == p0.values());
  CHECK(y.values() == y0.values());
  CHECK(a.values() == a0.values());
  CHECK(b.values() == b0.values());

  // b written on the host (a channel slice): runConcat copies it in.
  runChannelSlice(x.get(), 0, 16, KnobSpec{}, b.get());
  runChannelSlice(x.get(), 0, 16, KnobSpec{}, b0.get());
  CHECK(validBuffer(b) == nullptr);
  runConcat(parts0, 3, KnobSpec{}, y0.get());
  runConcat(parts, 3, KnobSpec{}, y.get());
  CHECK(y.values() == y0.values());
  CHECK(validBuffer(y) == base);
  // The next convolution writes into the view again.
  runConv(x.get(), wB.get(), ConvArgs{}, PostOps{}, KnobSpec{}, b.get());
  CHECK(validBuffer(b) == base + 32 * 36);
}

TEST_CASE("Kernels: a concatenation into a view rounds nothing and a fp16 "
          "one copies as before") {
  TestTensor u({1, 16, 3, 3}), v({1, 16, 3, 3});
  u.set(randomVec(u.size(), 10));
  v.set(randomVec(v.size(), 11));
  Tensor* parts[] = {u.get(), v.get()};
  const KnobSpec fp16 = knobOf(Variant::Exact, Precision::FP16);
  TestTensor want({1, 32, 3, 3}), got({1, 32, 3, 3});
  runConcat(parts, 2, fp16, want.get());
  bindChannelView(got.get(), got.get(), 0);
  runConcat(parts, 2, fp16, got.get());
  CHECK(got.values() == want.values());
  // The parts keep their unrounded values.
  CHECK(u.values() == randomVec(u.size(), 10));
}
