// TokenMatMul.cpp - token_matmul: the batched matrix product of two token
// sequences held channel-first, one oneDNN matmul per call.
#include "base/Errors.h"
#include "kernels/Kernels.h"
#include "kernels/Numerics.h"
#include "kernels/Primitives.h"
#include "kernels/TensorImpl.h"

#include <fmt/format.h>

#include <cstdint>

namespace hpvm::rt {
using namespace kern;

void runTokenMatMul(const OpCall& c) {
  applyThreads();
  const Tensor *a = c.in[0], *b = c.in[1];
  const Dims4 ad = dims4(a), bd = dims4(b);
  // a holds A^T (K x T per image: T tokens of K features), b holds B^T
  // (M x K), and y = A B holds (A B)^T = B^T A^T: per image, b's matrix
  // times a's, every operand row-major as it lies.
  const int64_t N = ad[0], K = ad[1], T = ad[2] * ad[3], M = bd[1];
  HPVM_ASSERT(bd[0] == N && bd[2] * bd[3] == K && numElems(c.out) == N * M * T,
              fmt::format("token matmul shapes wrong: a {}, b {}, y {}",
                          dimsStr(a), dimsStr(b), dimsStr(c.out)));
  const dnnl::memory::desc src({N, M, K}, dt::f32, tag::abc);
  const dnnl::memory::desc wts({N, K, T}, dt::f32, tag::abc);
  const dnnl::memory::desc dst({N, M, T}, dt::f32, tag::abc);
  const Prim& mm = cachedPrim(
      fmt::format(FMT_COMPILE("token_matmul|{}|{}|{}|{}"), N, M, K, T), [&] {
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wts, dst),
                                        engine());
        return Prim{dnnl::matmul(pd), src, wts, dst};
      });
  allocHost(c.out);
  dnnl::memory bm(src, engine(), const_cast<float*>(hostData(b)));
  dnnl::memory am(wts, engine(), const_cast<float*>(hostData(a)));
  dnnl::memory ym(dst, engine(), c.out->impl->host);
  mm.prim.execute(
      stream(),
      {{DNNL_ARG_SRC, bm}, {DNNL_ARG_WEIGHTS, am}, {DNNL_ARG_DST, ym}});
  stream().wait();
  markHostWritten(c.out);
  roundResult(c.knob.precision, c.out);
}

} // namespace hpvm::rt
