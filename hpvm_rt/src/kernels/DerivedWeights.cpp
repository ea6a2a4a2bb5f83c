// DerivedWeights.cpp - weights derived from a layer's filter, cached on it
// (DerivedWeights.h).
#include "kernels/DerivedWeights.h"

#include "kernels/Numerics.h"
#include "kernels/PostOps.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

namespace hpvm::rt::kern {

namespace {
/// Appends tensorKey(t) to \p key.
void appendTensorKey(std::string& key, const Tensor* t) {
  appendKey(key, static_cast<const void*>(t),
            t ? uint64_t(implOf(t).version) : uint64_t(0));
}

} // namespace

std::string tensorKey(const Tensor* t) {
  // Raw bytes of a fixed length (address, version): keys built on every
  // layer call stay cheap and their concatenations unambiguous.
  std::string key;
  appendTensorKey(key, t);
  return key;
}

std::string foldKey(const PostOps& post) {
  std::string key;
  key.reserve(5 * 16 + sizeof(double));
  for (const Tensor* t :
       {post.bias, post.bnGamma, post.bnBeta, post.bnMean, post.bnVar})
    appendTensorKey(key, t);
  appendKey(key, post.bnEps);
  return key;
}

const TensorImpl::Derived* findDerived(TensorImpl& impl,
                                       const std::string& key) {
  for (const auto& d : impl.derived)
    if (d.key == key)
      return &d;
  return nullptr;
}

const TensorImpl::Derived& storeDerived(TensorImpl& impl, TensorImpl::Derived d,
                                        const TensorImpl::Derived* keep) {
  auto oldest =
      std::find_if(impl.derived.begin(), impl.derived.end(),
                   [&](const TensorImpl::Derived& e) { return &e != keep; });
  if (impl.derived.size() >= kMaxDerived && oldest != impl.derived.end())
    impl.derived.erase(oldest);
  impl.derived.push_back(std::move(d));
  return impl.derived.back();
}

std::shared_ptr<const Tensor>
derivedTensor(const Tensor* w, const std::string& key, const Dims4& dims,
              const std::function<void(const float* from, float* to)>& fill) {
  TensorImpl& impl = implOf(w);
  if (const TensorImpl::Derived* found = findDerived(impl, key))
    return std::shared_ptr<const Tensor>(
        found->buffer, &static_cast<OwnedTensor*>(found->buffer.get())->t);
  auto owned = std::make_shared<OwnedTensor>(dims);
  fill(hostData(w), static_cast<float*>(owned->t.host_data));
  hostModified(&owned->t);
  TensorImpl::Derived d;
  d.key = key;
  d.buffer = owned;
  storeDerived(impl, std::move(d));
  return std::shared_ptr<const Tensor>(owned, &owned->t);
}

const TensorImpl::Derived&
packedFilter(const Tensor* w, const PostOps& post, const char* name, int64_t K,
             int64_t perK, dnnl::memory::data_type packedType,
             int64_t packedElems,
             const std::function<void(const float* folded, void* packed)>& pack,
             Precision roundBias) {
  TensorImpl& impl = implOf(w);
  const RawRequest request(post);
  const dnnl::memory::desc packed({packedElems}, packedType, tag::x);
  for (const TensorImpl::Derived& d : impl.derived)
    if (request.matches(d) && d.name && std::strcmp(d.name, name) == 0 &&
        d.round == roundBias && d.want == packed)
      return d;
  const float* wp = hostData(w);
  std::vector<float> wf(wp, wp + numElems(w)), bf;
  foldPostOps(post, K, perK, perK, 1, wf, bf);
  roundTo(roundBias, bf.data(), K);
  TensorImpl::Derived d;
  d.key = std::string(name) + "|" + foldKey(post);
  request.record(d);
  d.name = name;
  d.round = roundBias;
  d.want = packed;
  d.weights = dnnl::memory(packed, engine());
  pack(wf.data(), d.weights.get_data_handle());
  d.bias = dnnl::memory({{K}, dt::f32, tag::x}, engine());
  std::copy(bf.begin(), bf.end(),
            static_cast<float*>(d.bias.get_data_handle()));
  return storeDerived(impl, std::move(d));
}

void foldPostOps(const PostOps& post, int64_t K, int64_t perK, int64_t kStride,
                 int64_t kStep, std::vector<float>& w, std::vector<float>& b) {
  b.assign(K, 0.f);
  if (post.bias) {
    checkPerChannel(post.bias, K, "bias");
    const float* bp = hostData(post.bias);
    std::copy(bp, bp + K, b.begin());
  }
  if (!hasBn(post))
    return;
  checkPerChannel(post.bnGamma, K, "batch norm gamma");
  checkPerChannel(post.bnBeta, K, "batch norm beta");
  checkPerChannel(post.bnMean, K, "batch norm mean");
  checkPerChannel(post.bnVar, K, "batch norm variance");
  const float* g = hostData(post.bnGamma);
  const float* be = hostData(post.bnBeta);
  const float* m = hostData(post.bnMean);
  const float* v = hostData(post.bnVar);
  for (int64_t k = 0; k < K; ++k) {
    double s = g[k] / std::sqrt(post.bnEps + v[k]);
    for (int64_t e = 0; e < perK; ++e) {
      float& wv = w[k * kStride + e * kStep];
      wv = static_cast<float>(wv * s);
    }
    b[k] = static_cast<float>(be[k] + (b[k] - m[k]) * s);
  }
}

const TensorImpl::Derived& derivedWeights(const Tensor* w, const PostOps& post,
                                          const dnnl::memory::desc& plain,
                                          const dnnl::memory::desc& want,
                                          int64_t K, int64_t perK,
                                          int64_t kStride, int64_t kStep,
                                          Precision roundOperands) {
  TensorImpl& impl = implOf(w);
  const RawRequest request(post);
  for (const TensorImpl::Derived& d : impl.derived)
    if (request.matches(d) && d.name == nullptr && d.round == roundOperands &&
        d.want == want && d.plain == plain)
      return d;
  std::string key = descKey(want);
  appendKey(key, descKey(plain), roundOperands, foldKey(post));
  if (const TensorImpl::Derived* found = findDerived(impl, key))
    return *found;
  // Fold bias and batch norm into a host copy of the weights.
  const float* wp = hostData(w);
  std::vector<float> wf(wp, wp + numElems(w)), bf;
  foldPostOps(post, K, perK, kStride, kStep, wf, bf);
  roundTo(roundOperands, wf.data(), static_cast<int64_t>(wf.size()));
  if (roundOperands == Precision::FP16)
    roundTo(roundOperands, bf.data(), K);
  // Reorder the folded weights into the layout the primitive wants.
  TensorImpl::Derived d;
  d.key = std::move(key);
  d.weights = weightMemory(want, d);
  reorder(dnnl::memory(plain, engine(), wf.data()), d.weights);
  d.bias = dnnl::memory({{K}, dt::f32, tag::x}, engine());
  std::memcpy(d.bias.get_data_handle(), bf.data(), K * sizeof(float));
  request.record(d);
  d.want = want;
  d.plain = plain;
  d.round = roundOperands;
  return storeDerived(impl, std::move(d));
}

const float* roundedWeights(const Tensor* w, Precision p) {
  TensorImpl& impl = implOf(w);
  const std::string key =
      fmt::format(FMT_COMPILE("approx-rounded|p{}"), static_cast<int>(p));
  if (const TensorImpl::Derived* found = findDerived(impl, key))
    return static_cast<const float*>(found->weights.get_data_handle());
  const float* wp = hostData(w);
  const int64_t n = numElems(w);
  TensorImpl::Derived d;
  d.key = key;
  d.weights = dnnl::memory({{n}, dt::f32, tag::x}, engine());
  float* out = static_cast<float*>(d.weights.get_data_handle());
  std::copy(wp, wp + n, out);
  roundTo(p, out, n);
  storeDerived(impl, std::move(d));
  return out;
}

} // namespace hpvm::rt::kern
