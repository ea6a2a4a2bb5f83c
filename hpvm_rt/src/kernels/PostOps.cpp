// PostOps.cpp - post-ops fused into the oneDNN convolutions and inner
// products, and the residual they add (PostOps.h).
#include "kernels/PostOps.h"

#include "base/Errors.h"
#include "kernels/Elementwise.h"

#include <fmt/format.h>

namespace hpvm::rt::kern {

namespace {

/// Loads the residual into the output memory ahead of a sum post-op.
void preloadResidual(const PostOps& post, const dnnl::memory& dst) {
  if (!post.residual)
    return;
  const dims dd = dst.get_desc().dims();
  if (storedInOtherType(post.residual, dst.get_desc())) {
    // Quantized (or bf16) values: one scaled reorder into dst.
    const TensorImpl& ri = implOf(post.residual);
    reorderScaled(ri.mem, dst, ri.memScale);
    return;
  }
  // bf16 (chains) into a bf16 dst: copied or reordered as it is.
  dnnl::memory res = storedInType(post.residual, dst.get_desc())
                         ? storedMemory(post.residual)
                         : currentMemory(post.residual);
  int64_t count = 1;
  for (int64_t d : dd)
    count *= d;
  HPVM_ASSERT(numElems(post.residual) == count,
              "residual " + dimsStr(post.residual) +
                  " has not the output's element count");
  if (res.get_desc().dims() != dd) {
    // Same element count, other dims (say 2-D vs 4-D): view the NCHW
    // values with the output's dims, row-major, and reorder from there.
    dnnl::memory plain({dd, dt::f32, dd.size() == 2 ? tag::nc : tag::nchw},
                       engine(), const_cast<float*>(hostData(post.residual)));
    reorder(plain, dst);
    return;
  }
  if (sameBytes(res.get_desc(), dst.get_desc())) {
    // Same layout: a parallel copy (oneDNN's reorder would take its slow
    // generic path for an identity reorder of a blocked layout).
    parallelCopy(dst.get_data_handle(), res.get_data_handle(),
                 dst.get_desc().get_size());
    return;
  }
  reorder(res, dst);
}

} // namespace

void checkPerChannel(const Tensor* t, int64_t C, const char* what) {
  HPVM_ASSERT(t != nullptr && numElems(t) == C,
              fmt::format("{} must have {} elements, has {}", what, C,
                          t ? numElems(t) : 0));
}

dnnl::primitive_attr postOpsAttr(const PostOps& post, ResidualAs how,
                                 const dnnl::memory::desc& dst,
                                 bool runtimeScale, float outScale,
                                 float sumScale) {
  dnnl::post_ops ops;
  // A scale known only at run time (int8_dyn's input scale): a binary
  // multiply by a 1x1x1x1 tensor before everything else.
  if (runtimeScale)
    ops.append_binary(dnnl::algorithm::binary_mul,
                      dnnl::memory::desc({1, 1, 1, 1}, dt::f32, tag::nchw));
  const bool residual = post.residual && how != ResidualAs::Split;
  appendAct(ops, post.act, post.actLo, post.actHi, residual ? 1.f : outScale);
  if (residual) {
    if (how == ResidualAs::Binary)
      ops.append_binary(dnnl::algorithm::binary_add, dst);
    else
      ops.append_sum(sumScale);
    appendAct(ops, post.act2, post.act2Lo, post.act2Hi, outScale);
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  return attr;
}

int residualPostOpIndex(const dnnl::primitive_attr& attr) {
  const dnnl::post_ops ops = attr.get_post_ops();
  int index = 0;
  for (int i = 0; i < ops.len(); ++i)
    if (ops.kind(i) == dnnl::primitive::kind::binary)
      index = i;
  return index;
}

std::string postKey(const PostOps& post) {
  std::string key = actKey(post.act, post.actLo, post.actHi);
  appendKey(key, post.residual != nullptr);
  if (post.residual)
    key += actKey(post.act2, post.act2Lo, post.act2Hi);
  return key;
}

void executeLayer(const Prim& p, const PostOps& post,
                  std::unordered_map<int, dnnl::memory> args) {
  if (post.residual && p.residual == ResidualAs::Sum)
    preloadResidual(post, args.at(DNNL_ARG_DST));
  std::unique_ptr<PoolBuffer> residualHold;
  if (post.residual && p.residual == ResidualAs::Binary)
    args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(p.binaryIndex) | DNNL_ARG_SRC_1] =
        memoryAs(post.residual, p.dst, residualHold);
  p.prim.execute(stream(), args);
  stream().wait();
}

} // namespace hpvm::rt::kern
