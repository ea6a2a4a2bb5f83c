// DerivedWeights.h - weights derived from a layer's filter and cached on
// it until it changes: bias and batch norm folded in, reordered into a
// primitive's layout, rounded to a knob's precision.
#ifndef HPVM_RT_KERNELS_DERIVEDWEIGHTS_H
#define HPVM_RT_KERNELS_DERIVEDWEIGHTS_H

#include "kernels/TensorImpl.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace hpvm::rt::kern {

/// An optional tensor's address and version (raw bytes, fixed length), for
/// keys of derived weights.
std::string tensorKey(const Tensor* t);

/// The part of a derived-weights key naming what is folded into them.
std::string foldKey(const PostOps& post);

/// w's derived entry named \p key, or null.
const TensorImpl::Derived* findDerived(TensorImpl& impl,
                                       const std::string& key);

/// A derived entry's request in raw form (TensorImpl::Derived::raw): the
/// folded tensors of \p post with their versions, matched before any key
/// is built (a layer call at batch 1 must not pay for strings).
struct RawRequest {
  std::array<const Tensor*, 5> folded;
  std::array<uint64_t, 5> versions{};
  double eps;
  explicit RawRequest(const PostOps& post)
      : folded{post.bias, post.bnGamma, post.bnBeta, post.bnMean, post.bnVar},
        eps(post.bnEps) {
    for (size_t i = 0; i < folded.size(); ++i)
      versions[i] = folded[i] ? implOf(folded[i]).version : 0;
  }
  /// The request entry \p d was recorded with (d.raw): what entries
  /// derived from it in turn record.
  explicit RawRequest(const TensorImpl::Derived& d)
      : folded(d.folded), versions(d.foldedVersions), eps(d.eps) {}
  bool matches(const TensorImpl::Derived& d) const {
    return d.raw && d.folded == folded && d.foldedVersions == versions &&
           d.eps == eps;
  }
  void record(TensorImpl::Derived& d) const {
    d.raw = true;
    d.folded = folded;
    d.foldedVersions = versions;
    d.eps = eps;
  }
};

/// Derived entries a filter keeps: a handful (the knobs a tuner tries on
/// a layer), and the 9 cropped filters of a window split into live-tap
/// regions (ConvLiveTaps.h).
constexpr size_t kMaxDerived = 12;

/// Keeps \p d with w's derived entries, kMaxDerived at most: the oldest one
/// (other than \p keep) makes room. Entries move: references taken before
/// are invalid afterwards.
const TensorImpl::Derived& storeDerived(TensorImpl& impl, TensorImpl::Derived d,
                                        const TensorImpl::Derived* keep = {});

/// The filter (OIHW, or K x N for dense) and the bias after folding the
/// batch norm of \p post: w'[k,...] = w[k,...] * s[k], b'[k] = beta[k] +
/// (b[k] - mean[k]) * s[k], s[k] = gamma[k] / sqrt(eps + var[k]).
/// \p kStride and \p kStep locate element e of output channel k at
/// w[k * kStride + e * kStep] (conv: kStride = C*KH*KW, kStep = 1; dense:
/// kStride = 1, kStep = N).
void foldPostOps(const PostOps& post, int64_t K, int64_t perK, int64_t kStride,
                 int64_t kStep, std::vector<float>& w, std::vector<float>& b);

/// A convolution filter packed for one of our own kernels: w (K output
/// channels of perK values) with the bias and batch norm of \p post
/// folded in, handed to \p pack with the weights to fill (\p packedElems
/// elements of \p packedType); the folded bias (f32, K elements) rounded
/// to \p roundBias. Found under \p name (a string literal naming the
/// packing) and post's fold, else derived once and cached on w until any
/// of the tensors involved changes.
const TensorImpl::Derived&
packedFilter(const Tensor* w, const PostOps& post, const char* name, int64_t K,
             int64_t perK, dnnl::memory::data_type packedType,
             int64_t packedElems,
             const std::function<void(const float* folded, void* packed)>& pack,
             Precision roundBias = Precision::FP32);

/// Returns the weights (in layout \p want) and bias (f32, K elements) for
/// a conv or dense layer, derived from w and the post-ops once and cached
/// on w until any of the tensors involved changes.
const TensorImpl::Derived& derivedWeights(const Tensor* w, const PostOps& post,
                                          const dnnl::memory::desc& plain,
                                          const dnnl::memory::desc& want,
                                          int64_t K, int64_t perK,
                                          int64_t kStride, int64_t kStep,
                                          Precision roundOperands);

/// w's values (NCHW) rounded to precision p, computed once per version of
/// w and cached with its other derived weights.
const float* roundedWeights(const Tensor* w, Precision p);

/// A filter derived from w, of dims \p dims, that a layer computes with
/// in w's place (a sampled or cropped filter): \p fill writes it from w's
/// host data. Found under \p key, else derived once and cached on w until
/// w changes.
std::shared_ptr<const Tensor>
derivedTensor(const Tensor* w, const std::string& key, const Dims4& dims,
              const std::function<void(const float* from, float* to)>& fill);

} // namespace hpvm::rt::kern

#endif // HPVM_RT_KERNELS_DERIVEDWEIGHTS_H
