// Numerics.cpp - the layers' reduced-precision numerics (Numerics.h).
#include "kernels/Numerics.h"

#include "approx/Isa.h"
#include "base/Errors.h"
#include "kernels/Primitives.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace hpvm::rt::kern {

bool haveNativeBf16() {
  return approx::isaLevel() >= approx::IsaLevel::Avx512Bf16;
}

void roundResult(Precision p, Tensor* y) {
  if (p == Precision::FP32)
    return;
  TensorImpl& impl = implOf(y);
  if (impl.memValid) {
    // Rounding is elementwise: round the (blocked) oneDNN copy in place,
    // padding included (zeros stay zeros), without a layout round trip.
    roundTo(
        p, static_cast<float*>(impl.mem.get_data_handle()),
        static_cast<int64_t>(impl.mem.get_desc().get_size() / sizeof(float)));
    impl.hostValid = false;
    newValues(impl);
    impl.roundedTo = p;
    return;
  }
  ensureHost(y);
  roundTo(p, y->impl->host, numElems(y));
  markHostWritten(y);
  impl.roundedTo = p;
}

bool alreadyRounded(const Tensor* x, Precision p) {
  return p != Precision::FP32 && implOf(x).roundedTo == p;
}

void keepOrRound(bool rounded, Precision p, Tensor* y) {
  if (rounded)
    implOf(y).roundedTo = p;
  else
    roundResult(p, y);
}

void markHostCopied(const Tensor* x, Precision p, Tensor* y) {
  const bool rounded = alreadyRounded(x, p);
  markHostWritten(y);
  keepOrRound(rounded, p, y);
}

void roundCopy(Precision p, const float* from, float* to, int64_t n) {
  constexpr int64_t kBlock = 4096;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t len = std::min(kBlock, n - b);
    std::memcpy(to + b, from + b, static_cast<size_t>(len) * sizeof(float));
    roundTo(p, to + b, len);
  }
}

Numerics numericsOf(const KnobSpec& knob) {
  Numerics nm;
  if (knob.precision == Precision::FP16) {
    nm.roundOperands = nm.roundOutput = Precision::FP16;
  } else if (knob.precision == Precision::BF16) {
    if (haveNativeBf16()) {
      nm.nativeBf16 = true;
    } else {
      static std::once_flag warned;
      std::call_once(warned, [] {
        reportWarning("hpvm_rt", "this CPU lacks avx512_bf16; bf16 knobs "
                                 "are emulated by rounding");
      });
      nm.roundOperands = Precision::BF16;
    }
  }
  return nm;
}

dnnl::memory sourceFor(const Tensor* x, const dnnl::memory::desc& want,
                       Precision roundOperands, std::vector<float>& scratch,
                       std::unique_ptr<PoolBuffer>& hold) {
  // The reorder into the wanted layout goes to a pooled buffer (no fresh
  // allocation and page faults per call), held until the caller returns.
  auto reorderedInto = [&](const dnnl::memory& from) {
    hold = std::make_unique<PoolBuffer>(want.get_size());
    dnnl::memory out(want, engine(), hold->get());
    reorder(from, out);
    return out;
  };
  // The same bytes described in the wanted layout (sameBytes()).
  auto viewAs = [&](const dnnl::memory& m) {
    return m.get_desc() == want
               ? m
               : dnnl::memory(want, engine(), m.get_data_handle());
  };
  // bf16 chains: the previous bf16 layer stored x as bf16 already.
  const dnnl::memory stored = storedMemory(x);
  const dt storedType = stored.get_desc().data_type();
  if (storedType == dt::bf16 && want.data_type() == dt::bf16)
    return sameBytes(stored.get_desc(), want) ? viewAs(stored)
                                              : reorderedInto(stored);
  if (roundOperands == Precision::FP32 || alreadyRounded(x, roundOperands)) {
    const dnnl::memory cur = currentMemory(x);
    return sameBytes(cur.get_desc(), want) ? viewAs(cur) : reorderedInto(cur);
  }
  // Rounded in x's current layout (elementwise, padding stays zero), then
  // reordered only if the primitive wants another.
  const dnnl::memory cur = currentMemory(x);
  const int64_t n =
      static_cast<int64_t>(cur.get_desc().get_size() / sizeof(float));
  scratch.resize(static_cast<size_t>(n));
  roundCopy(roundOperands, static_cast<const float*>(cur.get_data_handle()),
            scratch.data(), n);
  dnnl::memory rounded(cur.get_desc(), engine(), scratch.data());
  return sameBytes(rounded.get_desc(), want) ? viewAs(rounded)
                                             : reorderedInto(rounded);
}

} // namespace hpvm::rt::kern
