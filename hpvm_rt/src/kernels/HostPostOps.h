// HostPostOps.h - a convolution's post-ops computed on the host in the
// reference order: the output pass of the approximate convolutions.
#ifndef HPVM_RT_KERNELS_HOSTPOSTOPS_H
#define HPVM_RT_KERNELS_HOSTPOSTOPS_H

#include "approx/Epilogue.h"
#include "base/Errors.h"
#include "kernels/Numerics.h"
#include "kernels/PostOps.h"
#include "kernels/TensorImpl.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace hpvm::rt::kern {

/// Applies act to n floats in place with ref::act's arithmetic, the
/// activation chosen outside the loop so that the loop vectorises.
inline void actInPlace(float* v, int64_t n, Act act, float lo, float hi) {
  switch (act) {
  case Act::None:
    return;
  case Act::Relu:
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      v[i] = v[i] < 0.f ? 0.f : v[i];
    return;
  case Act::Clip:
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      v[i] = v[i] < lo ? lo : (v[i] > hi ? hi : v[i]);
    return;
  case Act::Tanh:
    for (int64_t i = 0; i < n; ++i)
      v[i] = std::tanh(v[i]);
    return;
  case Act::Sigmoid:
    for (int64_t i = 0; i < n; ++i)
      v[i] = 1.f / (1.f + std::exp(-v[i]));
    return;
  case Act::HardSigmoid:
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      v[i] = hardSigmoid(v[i], lo, hi);
    return;
  case Act::HardSwish:
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      v[i] = hardSwish(v[i]);
    return;
  case Act::Gelu:
    for (int64_t i = 0; i < n; ++i)
      v[i] = gelu(v[i]);
    return;
  case Act::LeakyRelu:
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      v[i] = v[i] > 0.f ? v[i] : v[i] * lo;
    return;
  case Act::Silu:
    for (int64_t i = 0; i < n; ++i)
      v[i] = silu(v[i]);
    return;
  }
}

/// The post-ops of a convolution computed unfused on the host (NCHW):
/// bias, batch norm, act, residual, act2 in the reference order (bit for
/// bit ref::add, ref::batchNorm and ref::act), then the rounding to
/// `roundOutput`. The approximate convolutions run it on their output
/// while it is in cache. `part` selects the steps: all of them, the head
/// (bias and batch norm: the steps before the activation) or the tail
/// (residual, act2 and rounding: the steps after it).
class HostPostOps final : public approx::Epilogue,
                          public approx::BlockedEpilogue {
public:
  enum class Part : uint8_t { All, Head, Tail };

  /// With `blocked`, the output (and the residual, given later by
  /// setBlockedResidual) is nChw16c and applyRow() is the entry point.
  HostPostOps(const PostOps& post, int64_t N, int64_t K, int64_t HW,
              Precision roundOutput, Part part, bool blocked = false)
      : post_(post), k_(K), hw_(HW), round_(roundOutput), part_(part) {
    if (post.bias) {
      checkPerChannel(post.bias, K, "bias");
      bias_ = hostData(post.bias);
    }
    if (hasBn(post)) {
      checkPerChannel(post.bnGamma, K, "batch norm gamma");
      checkPerChannel(post.bnBeta, K, "batch norm beta");
      checkPerChannel(post.bnMean, K, "batch norm mean");
      checkPerChannel(post.bnVar, K, "batch norm variance");
      gamma_ = hostData(post.bnGamma);
      beta_ = hostData(post.bnBeta);
      mean_ = hostData(post.bnMean);
      const float* var = hostData(post.bnVar);
      den_.resize(K);
      for (int64_t k = 0; k < K; ++k)
        den_[k] = static_cast<float>(std::sqrt(post.bnEps + var[k]));
    }
    if (post.residual) {
      HPVM_ASSERT(numElems(post.residual) == N * K * HW,
                  "residual must have the output's shape, has " +
                      dimsStr(post.residual));
      if (!blocked)
        residual_ = hostData(post.residual);
    }
  }

  /// The residual's values in the output's nChw16c layout.
  void setBlockedResidual(const float* r) { residual_ = r; }

  /// True when apply() changes nothing.
  bool empty() const {
    const bool head =
        bias_ || gamma_ || (part_ == Part::All && post_.act != Act::None);
    const bool tail = post_.residual || round_ != Precision::FP32;
    return !(part_ != Part::Tail && head) && !(part_ != Part::Head && tail);
  }

  void apply(int64_t n, int64_t k, int64_t off, float* v,
             int64_t len) const override {
    if (part_ != Part::Tail)
      applyHead(k, v, len);
    if (part_ != Part::Head)
      applyTail(n, k, off, v, len);
  }

  void applyRow(int64_t n, int64_t cb, int64_t h, float* v,
                int64_t wo) const override {
    const int64_t k0 = cb * 16, len = wo * 16;
    if (part_ != Part::Tail) {
      if (bias_) {
        const float* b = bias_ + k0;
        for (int64_t x = 0; x < wo; ++x)
#pragma omp simd
          for (int64_t l = 0; l < 16; ++l)
            v[x * 16 + l] = v[x * 16 + l] + b[l];
      }
      if (gamma_) {
        const float *g = gamma_ + k0, *be = beta_ + k0, *m = mean_ + k0;
        const float* den = den_.data() + k0;
        for (int64_t x = 0; x < wo; ++x)
#pragma omp simd
          for (int64_t l = 0; l < 16; ++l)
            v[x * 16 + l] = be[l] + g[l] * (v[x * 16 + l] - m[l]) / den[l];
      }
      if (part_ == Part::All)
        actInPlace(v, len, post_.act, post_.actLo, post_.actHi);
    }
    if (part_ != Part::Head) {
      if (residual_) {
        const float* r = residual_ + ((n * (k_ / 16) + cb) * hw_ + h * wo) * 16;
#pragma omp simd
        for (int64_t i = 0; i < len; ++i)
          v[i] = v[i] + r[i];
        actInPlace(v, len, post_.act2, post_.act2Lo, post_.act2Hi);
      }
      roundTo(round_, v, len);
    }
  }

private:
  void applyHead(int64_t k, float* v, int64_t len) const {
    if (bias_) {
      const float b = bias_[k];
#pragma omp simd
      for (int64_t i = 0; i < len; ++i)
        v[i] = v[i] + b;
    }
    if (gamma_) {
      const float g = gamma_[k], be = beta_[k], m = mean_[k], den = den_[k];
#pragma omp simd
      for (int64_t i = 0; i < len; ++i)
        v[i] = be + g * (v[i] - m) / den;
    }
    if (part_ == Part::All)
      actInPlace(v, len, post_.act, post_.actLo, post_.actHi);
  }

  void applyTail(int64_t n, int64_t k, int64_t off, float* v,
                 int64_t len) const {
    if (residual_) {
      const float* r = residual_ + (n * k_ + k) * hw_ + off;
#pragma omp simd
      for (int64_t i = 0; i < len; ++i)
        v[i] = v[i] + r[i];
      actInPlace(v, len, post_.act2, post_.act2Lo, post_.act2Hi);
    }
    roundTo(round_, v, len);
  }

  const PostOps& post_;
  int64_t k_, hw_;
  Precision round_;
  Part part_;
  const float* bias_ = nullptr;
  const float *gamma_ = nullptr, *beta_ = nullptr, *mean_ = nullptr;
  std::vector<float> den_;
  const float* residual_ = nullptr;
};

} // namespace hpvm::rt::kern

#endif // HPVM_RT_KERNELS_HOSTPOSTOPS_H
