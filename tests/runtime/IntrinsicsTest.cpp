// IntrinsicsTest.cpp - every Ops.def operation through its __hpvm__tensor_*
// intrinsic (eagerly and inside a launch) and through HPVM's direct call,
// against the reference kernels; shape rules and their errors.
#include "GraphTestUtil.h"
#include "base/Errors.h"
#include "core/Core.h"
#include "hpvm.h"
#include "kernels/Kernels.h"
#include "kernels/Reference.h"
#include "tensor_runtime.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

namespace {

using namespace hpvm::rt::test;

using namespace hpvm::rt;

const float* hostOf(void* t) {
  hpvm_request_tensor(t, 0);
  return static_cast<const float*>(static_cast<Tensor*>(t)->host_data);
}

/// One op's test: operands, scalars, the intrinsic and direct calls, and
/// the reference result.
struct OpCase {
  std::vector<void*> in;
  Shape out;
  std::function<void*(void* const*)> intrinsic;
  std::function<void*(void* const*)> direct;
  std::vector<float> want;
};

OpCase caseFor(HpvmOp op) {
  OpCase c;
  Shape xs{2, 4, 7, 6};
  void* x = randomTensor(xs, 1, -2, 2);
  int64_t n = numElements(xs);
  c.want.resize(size_t(n));
  switch (op) {
  case HpvmOp::Conv: {
    void* w = randomTensor({3, 4, 3, 2}, 2, -1, 1);
    c.in = {x, w};
    c.out = {2, 3, 4, 7};
    c.intrinsic = [](void* const* t) {
      return __hpvm__tensor_convolution(t[0], t[1], 1, 1, 2, 1);
    };
    c.direct = [](void* const* t) {
      return tensorConvolution(t[0], t[1], 1, 1, 2, 1, 1, 1);
    };
    c.want.resize(2 * 3 * 4 * 7);
    ref::conv2d(hostOf(x), 2, 4, 7, 6, hostOf(w), 3, 3, 2,
                ConvArgs{1, 1, 2, 1, 1}, c.want.data());
    break;
  }
  case HpvmOp::GroupConv: {
    void* w = randomTensor({4, 1, 3, 3}, 3, -1, 1);
    c.in = {x, w};
    c.out = {2, 4, 7, 6};
    c.intrinsic = [](void* const* t) {
      return __hpvm__tensor_group_convolution(t[0], t[1], 1, 1, 1, 1, 1, 4);
    };
    c.direct = [](void* const* t) {
      return tensorConvolution(t[0], t[1], 1, 1, 1, 1, 1, 4);
    };
    ref::conv2d(hostOf(x), 2, 4, 7, 6, hostOf(w), 4, 3, 3,
                ConvArgs{1, 1, 1, 1, 4}, c.want.data());
    break;
  }
  case HpvmOp::DilatedConv: { // dilations 2, 3; 2 groups
    void* w = randomTensor({4, 2, 3, 2}, 3, -1, 1);
    c.in = {x, w};
    c.out = {2, 4, 5, 5};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_dilated_convolution(t[0], t[1], 1, 1, 1, 1, 2, 3,
                                                   2);
    };
    c.direct = c.intrinsic;
    c.want.resize(2 * 4 * 5 * 5);
    ConvArgs a{1, 1, 1, 1, 2};
    a.dilH = 2;
    a.dilW = 3;
    ref::conv2d(hostOf(x), 2, 4, 7, 6, hostOf(w), 4, 3, 2, a, c.want.data());
    break;
  }
  case HpvmOp::ConvTranspose: { // stride 2, pads 1 0 0 -1, 2 groups
    void* w = randomTensor({4, 3, 3, 2}, 3, -1, 1);
    c.in = {x, w};
    TransposeArgs a;
    a.padTop = 1;
    a.padRight = -1;
    a.strideH = a.strideW = 2;
    a.groups = 2;
    c.out = {2, 6, a.outH(7, 3), a.outW(6, 2)};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_conv_transpose(t[0], t[1], 1, 0, 0, -1, 2, 2, 1,
                                              1, 2);
    };
    c.direct = c.intrinsic;
    c.want.resize(size_t(2 * 6 * a.outH(7, 3) * a.outW(6, 2)));
    ref::convTranspose(hostOf(x), 2, 4, 7, 6, hostOf(w), 3, 3, 2, a,
                       c.want.data());
    break;
  }
  case HpvmOp::Mul: {
    void* w = randomTensor({1, 1, 168, 5}, 4, -1, 1);
    c.in = {x, w};
    c.out = {2, 5, 1, 1};
    c.intrinsic = [](void* const* t) { return __hpvm__tensor_mul(t[0], t[1]); };
    c.direct = [](void* const* t) { return tensorGemmGPU(t[0], t[1]); };
    c.want.resize(10);
    ref::dense(hostOf(x), 2, 168, hostOf(w), 5, c.want.data());
    break;
  }
  case HpvmOp::Add: {
    void* b = randomTensor({1, 4, 1, 1}, 5, -1, 1);
    c.in = {x, b};
    c.out = xs;
    c.intrinsic = [](void* const* t) { return __hpvm__tensor_add(t[0], t[1]); };
    c.direct = [](void* const* t) { return tensorAdd(t[0], t[1]); };
    ref::add(hostOf(x), hostOf(b), 2, 4, 42, true, c.want.data());
    break;
  }
  case HpvmOp::Multiply: { // a squeeze-and-excitation gate, per image
    void* s = randomTensor({2, 4, 1, 1}, 10, -1, 1);
    c.in = {x, s};
    c.out = xs;
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_multiply(t[0], t[1]);
    };
    c.direct = c.intrinsic;
    const int64_t sd[4] = {2, 4, 1, 1};
    ref::multiply(hostOf(x), xs.data(), hostOf(s), sd, c.want.data());
    break;
  }
  case HpvmOp::Sub:       // b broadcast over channels and columns
  case HpvmOp::Div:       // over the batch and rows
  case HpvmOp::Maximum:   // the same shape
  case HpvmOp::Minimum: { // a scalar
    const Shape bs = op == HpvmOp::Sub       ? Shape{2, 1, 7, 1}
                     : op == HpvmOp::Div     ? Shape{1, 4, 1, 6}
                     : op == HpvmOp::Maximum ? xs
                                             : Shape{1, 1, 1, 1};
    void* b = op == HpvmOp::Div ? randomTensor(bs, 12, 0.5f, 2.f)
                                : randomTensor(bs, 12, -1, 1);
    c.in = {x, b};
    c.out = xs;
    c.intrinsic =
        op == HpvmOp::Sub
            ? [](void* const*
                     t) { return __hpvm_rt__tensor_subtract(t[0], t[1]); }
        : op == HpvmOp::Div
            ? [](void* const*
                     t) { return __hpvm_rt__tensor_divide(t[0], t[1]); }
        : op == HpvmOp::Maximum
            ? [](void* const*
                     t) { return __hpvm_rt__tensor_maximum(t[0], t[1]); }
            : [](void* const* t) {
                return __hpvm_rt__tensor_minimum(t[0], t[1]);
              };
    c.direct = c.intrinsic;
    for (int64_t i = 0; i < n; ++i) {
      int64_t at = 0, rest = i, stride = 1;
      for (int d = 3; d >= 0; --d) {
        const int64_t k = rest % xs[size_t(d)];
        rest /= xs[size_t(d)];
        at += (bs[size_t(d)] == 1 ? 0 : k) * stride;
        stride *= bs[size_t(d)];
      }
      const float a = hostOf(x)[i], v = hostOf(b)[at];
      c.want[size_t(i)] = op == HpvmOp::Sub       ? a - v
                          : op == HpvmOp::Div     ? a / v
                          : op == HpvmOp::Maximum ? std::max(a, v)
                                                  : std::min(a, v);
    }
    break;
  }
  case HpvmOp::Pow: // cubes
    c.in = {x};
    c.out = xs;
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_pow(t[0], 3.f);
    };
    c.direct = c.intrinsic;
    for (int64_t i = 0; i < n; ++i)
      c.want[size_t(i)] = std::pow(hostOf(x)[i], 3.f);
    break;
  case HpvmOp::Sqrt: { // of magnitudes
    void* m = randomTensor(xs, 13, 0, 4);
    c.in = {m};
    c.out = xs;
    c.intrinsic = [](void* const* t) { return __hpvm_rt__tensor_sqrt(t[0]); };
    c.direct = c.intrinsic;
    for (int64_t i = 0; i < n; ++i)
      c.want[size_t(i)] = std::sqrt(hostOf(m)[i]);
    break;
  }
  case HpvmOp::BatchNorm: {
    void* g = randomTensor({1, 4, 1, 1}, 6, 0.5f, 1.5f);
    void* b = randomTensor({1, 4, 1, 1}, 7, -1, 1);
    void* m = randomTensor({1, 4, 1, 1}, 8, -1, 1);
    void* v = randomTensor({1, 4, 1, 1}, 9, 0.5f, 1.5f);
    c.in = {x, g, b, m, v};
    c.out = xs;
    c.intrinsic = [](void* const* t) {
      return __hpvm__tensor_batchnorm(t[0], t[1], t[2], t[3], t[4], 1e-3);
    };
    c.direct = [](void* const* t) {
      return tensorBatchNorm(t[0], t[1], t[2], t[3], t[4], 1e-3);
    };
    ref::batchNorm(hostOf(x), 2, 4, 42, hostOf(g), hostOf(b), hostOf(m),
                   hostOf(v), 1e-3, c.want.data());
    break;
  }
  case HpvmOp::Relu:
    c.in = {x};
    c.out = xs;
    c.intrinsic = [](void* const* t) { return __hpvm__tensor_relu(t[0]); };
    c.direct = [](void* const* t) { return tensorRelu(t[0]); };
    ref::act(hostOf(x), n, Act::Relu, 0, 0, c.want.data());
    break;
  case HpvmOp::ClippedRelu:
    c.in = {x};
    c.out = xs;
    c.intrinsic = [](void* const* t) {
      return __hpvm__tensor_clipped_relu(t[0], -0.5f, 1.25f);
    };
    c.direct = [](void* const* t) { return tensorRelu2(t[0], -0.5f, 1.25f); };
    ref::act(hostOf(x), n, Act::Clip, -0.5f, 1.25f, c.want.data());
    break;
  case HpvmOp::Tanh:
    c.in = {x};
    c.out = xs;
    c.intrinsic = [](void* const* t) { return __hpvm__tensor_tanh(t[0]); };
    c.direct = [](void* const* t) { return tensorTanh(t[0]); };
    ref::act(hostOf(x), n, Act::Tanh, 0, 0, c.want.data());
    break;
  case HpvmOp::Sigmoid: // (an hpvm_rt extension: its direct call is itself)
    c.in = {x};
    c.out = xs;
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_sigmoid(t[0]);
    };
    c.direct = c.intrinsic;
    ref::act(hostOf(x), n, Act::Sigmoid, 0, 0, c.want.data());
    break;
  case HpvmOp::HardSigmoid: // alpha, beta: some values clip at 0 and 1
    c.in = {x};
    c.out = xs;
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_hard_sigmoid(t[0], 0.4f, 0.45f);
    };
    c.direct = c.intrinsic;
    ref::act(hostOf(x), n, Act::HardSigmoid, 0.4f, 0.45f, c.want.data());
    break;
  case HpvmOp::HardSwish: { // x + 3 below 0 and above 6 too
    void* wide = randomTensor(xs, 10, -5, 5);
    c.in = {wide};
    c.out = xs;
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_hard_swish(t[0]);
    };
    c.direct = c.intrinsic;
    ref::act(hostOf(wide), n, Act::HardSwish, 0, 0, c.want.data());
    break;
  }
  case HpvmOp::Softmax:
    c.in = {x};
    c.out = xs;
    c.intrinsic = [](void* const* t) { return __hpvm__tensor_softmax(t[0]); };
    c.direct = [](void* const* t) { return tensorSoftmax(t[0]); };
    ref::softmax(hostOf(x), 2, 168, c.want.data());
    break;
  case HpvmOp::MaxPool:
  case HpvmOp::AvgPool: {
    bool max = op == HpvmOp::MaxPool;
    c.in = {x};
    c.out = {2, 4, 4, 3};
    c.intrinsic = [max](void* const* t) {
      return max ? __hpvm__tensor_pool_max(t[0], 3, 2, 1, 0, 2, 2)
                 : __hpvm__tensor_pool_mean(t[0], 3, 2, 1, 0, 2, 2);
    };
    c.direct = [max](void* const* t) {
      return tensorPooling(t[0], max ? 0 : 1, 3, 2, 1, 0, 2, 2);
    };
    PoolArgs a;
    a.kind = max ? PoolArgs::Max : PoolArgs::Avg;
    a.kh = 3;
    a.kw = 2;
    a.padH = 1;
    a.strideH = a.strideW = 2;
    c.want.resize(2 * 4 * 4 * 3);
    ref::pool2d(hostOf(x), 2, 4, 7, 6, a, c.want.data());
    break;
  }
  case HpvmOp::MaxPoolPads:
  case HpvmOp::AvgPoolPads: { // pads 0 top, 1 left, 2 bottom, 1 right
    bool max = op == HpvmOp::MaxPoolPads;
    c.in = {x};
    c.out = {2, 4, 4, 4};
    c.intrinsic = [max](void* const* t) {
      return max ? __hpvm_rt__tensor_pool_max_pads(t[0], 3, 2, 0, 1, 2, 1, 2, 2)
                 : __hpvm_rt__tensor_pool_mean_pads(t[0], 3, 2, 0, 1, 2, 1, 2,
                                                    2);
    };
    c.direct = c.intrinsic;
    PoolArgs a;
    a.kind = max ? PoolArgs::Max : PoolArgs::Avg;
    a.kh = 3;
    a.kw = 2;
    a.padW = 1;
    a.padBottom = 2;
    a.padRight = 1;
    a.strideH = a.strideW = 2;
    a.excludePad = !max;
    c.want.resize(2 * 4 * 4 * 4);
    ref::pool2d(hostOf(x), 2, 4, 7, 6, a, c.want.data());
    break;
  }
  case HpvmOp::LeakyRelu: // a negative slope above 1 too
    c.in = {x};
    c.out = xs;
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_leaky_relu(t[0], 1.5f);
    };
    c.direct = c.intrinsic;
    ref::act(hostOf(x), n, Act::LeakyRelu, 1.5f, 0, c.want.data());
    break;
  case HpvmOp::Gelu:
    c.in = {x};
    c.out = xs;
    c.intrinsic = [](void* const* t) { return __hpvm_rt__tensor_gelu(t[0]); };
    c.direct = c.intrinsic;
    ref::act(hostOf(x), n, Act::Gelu, 0, 0, c.want.data());
    break;
  case HpvmOp::Silu:
    c.in = {x};
    c.out = xs;
    c.intrinsic = [](void* const* t) { return __hpvm_rt__tensor_silu(t[0]); };
    c.direct = c.intrinsic;
    ref::act(hostOf(x), n, Act::Silu, 0, 0, c.want.data());
    break;
  case HpvmOp::LayerNorm: {
    void* g = randomTensor({1, 4, 1, 1}, 13, 0.5f, 1.5f);
    void* b = randomTensor({1, 4, 1, 1}, 14, -1, 1);
    c.in = {x, g, b};
    c.out = xs;
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_layer_norm(t[0], t[1], t[2], 1e-6);
    };
    c.direct = c.intrinsic;
    ref::layerNorm(hostOf(x), 2, 4, 42, hostOf(g), hostOf(b), 1e-6,
                   c.want.data());
    break;
  }
  case HpvmOp::ChannelSlice: // channels 1 .. 2
    c.in = {x};
    c.out = {2, 2, 7, 6};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_channel_slice(t[0], 1, 3);
    };
    c.direct = c.intrinsic;
    c.want.clear();
    for (int64_t b = 0; b < 2; ++b)
      c.want.insert(c.want.end(), hostOf(x) + (b * 4 + 1) * 42,
                    hostOf(x) + (b * 4 + 3) * 42);
    break;
  case HpvmOp::ChannelSoftmax: // log-softmax
    c.in = {x};
    c.out = xs;
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_channel_softmax(t[0], 1);
    };
    c.direct = c.intrinsic;
    ref::channelSoftmax(hostOf(x), 2, 4, 42, true, c.want.data());
    break;
  case HpvmOp::GroupSoftmax: // 2 groups of 2 channels
    c.in = {x};
    c.out = xs;
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_group_softmax(t[0], 2);
    };
    c.direct = c.intrinsic;
    ref::channelSoftmax(hostOf(x), 2, 4, 42, false, c.want.data(), 2);
    break;
  case HpvmOp::ChannelsLast:
    c.in = {x};
    c.out = {2, 7, 6, 4};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_channels_last(t[0]);
    };
    c.direct = c.intrinsic;
    ref::channelsLast(hostOf(x), 2, 4, 42, c.want.data());
    break;
  case HpvmOp::ChannelsFirst: // x read as 2 x 4 x 7 pixels of 6 channels
    c.in = {x};
    c.out = {2, 6, 4, 7};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_channels_first(t[0]);
    };
    c.direct = c.intrinsic;
    ref::channelsLast(hostOf(x), 2, 28, 6, c.want.data());
    break;
  case HpvmOp::ChannelShuffle:
    c.in = {x};
    c.out = xs;
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_channel_shuffle(t[0], 2);
    };
    c.direct = c.intrinsic;
    ref::channelShuffle(hostOf(x), 2, 4, 42, 2, c.want.data());
    break;
  case HpvmOp::ClassToken: { // 42 pixels become tokens 1 .. 42
    void* cls = randomTensor({1, 4, 1, 1}, 15, -1, 1);
    void* pos = randomTensor({1, 4, 43, 1}, 16, -1, 1);
    c.in = {x, cls, pos};
    c.out = {2, 4, 43, 1};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_class_token(t[0], t[1], t[2]);
    };
    c.direct = c.intrinsic;
    c.want.resize(2 * 4 * 43);
    ref::classToken(hostOf(x), 2, 4, 42, hostOf(cls), hostOf(pos),
                    c.want.data());
    break;
  }
  case HpvmOp::Attention: { // 2 heads of 2 channels, 3 x 2 = 6 tokens
    void* qkv = randomTensor({2, 12, 3, 2}, 17, -2, 2);
    c.in = {qkv};
    c.out = {2, 4, 3, 2};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_attention(t[0], 2);
    };
    c.direct = c.intrinsic;
    c.want.resize(2 * 4 * 6);
    ref::attention(hostOf(qkv), 2, 4, 6, 2, c.want.data());
    break;
  }
  case HpvmOp::WindowAttention: { // 2 heads of 2 channels, 2 x 3 windows
    void* qkv = randomTensor({2, 12, 4, 6}, 18, -2, 2);
    void* bias = randomTensor({1, 2, 6, 6}, 19, -1, 1);
    void* mask = randomTensor({1, 4, 6, 6}, 20, -3, 0);
    c.in = {qkv, bias, mask};
    c.out = {2, 4, 4, 6};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_window_attention(t[0], t[1], t[2], 2, 3, 2, 1,
                                                2);
    };
    c.direct = c.intrinsic;
    c.want.resize(2 * 4 * 24);
    ref::windowAttention(hostOf(qkv), 2, 4, 4, 6, 2, 3, 2, 1, 2, hostOf(bias),
                         hostOf(mask), 4, c.want.data());
    break;
  }
  case HpvmOp::Pad: // 1 row above, 3 below, 2 columns right, with 0.5
    c.in = {x};
    c.out = {2, 4, 11, 8};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_pad(t[0], 1.f, 0.f, 3.f, 2.f, 0.5f);
    };
    c.direct = c.intrinsic;
    c.want.resize(2 * 4 * 11 * 8);
    ref::pad(hostOf(x), 2, 4, 7, 6, 1, 0, 3, 2, 0.5f, c.want.data());
    CHECK(c.want[0] == 0.5f);
    CHECK(c.want[8] == hostOf(x)[0]);
    break;
  case HpvmOp::SpatialSlice: // rows 1, 3, 5; columns 0, 2, 4
    c.in = {x};
    c.out = {2, 4, 3, 3};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_spatial_slice(t[0], 1, 0, 2, 2, 3, 3);
    };
    c.direct = c.intrinsic;
    c.want.clear();
    for (int64_t i = 0; i < 8; ++i)
      for (int64_t r = 1; r < 7; r += 2)
        for (int64_t col = 0; col < 6; col += 2)
          c.want.push_back(hostOf(x)[i * 42 + r * 6 + col]);
    break;
  case HpvmOp::Quantize: // uint8, scale 1/64, zero point 100: x in [-2,
                         // 2] saturates below -100/64 and above 155/64
    c.in = {x};
    c.out = xs;
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_quantize(t[0], 0.015625f, 100.f, 0.f, 255.f);
    };
    c.direct = c.intrinsic;
    for (int64_t i = 0; i < n; ++i) {
      const float q =
          std::clamp(std::nearbyint(hostOf(x)[i] * 64.f) + 100.f, 0.f, 255.f);
      c.want[size_t(i)] = (q - 100.f) / 64.f;
    }
    break;
  case HpvmOp::QuantizeDynamic: { // x in [-2, 2): its own uint8 grid
    c.in = {x};
    c.out = xs;
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_quantize_dynamic(t[0]);
    };
    c.direct = c.intrinsic;
    const float* v = hostOf(x);
    const float lo = std::min(0.f, *std::min_element(v, v + n));
    const float hi = std::max(0.f, *std::max_element(v, v + n));
    const float scale = (hi - lo) / 255.f;
    const float zero = std::clamp(std::nearbyint(-lo / scale), 0.f, 255.f);
    for (int64_t i = 0; i < n; ++i)
      c.want[size_t(i)] =
          (std::clamp(std::nearbyint(v[i] / scale) + zero, 0.f, 255.f) - zero) *
          scale;
    break;
  }
  case HpvmOp::ResizeNearest: // 7 x 6 -> 10 x 4, half pixel, halves up
    c.in = {x};
    c.out = {2, 4, 10, 4};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_resize_nearest(t[0], 10.f, 4.f, 10.f / 7,
                                              4.f / 6, 0.f, 1.f);
    };
    c.direct = c.intrinsic;
    c.want.resize(2 * 4 * 10 * 4);
    ref::resize(hostOf(x), 2, 4, 7, 6, 10, 4, 10.f / 7, 4.f / 6,
                ResizeCoord::HalfPixel, false, NearestRounding::RoundPreferCeil,
                c.want.data());
    break;
  case HpvmOp::ResizeLinear: // 7 x 6 -> 14 x 9, align corners
    c.in = {x};
    c.out = {2, 4, 14, 9};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_resize_linear(t[0], 14.f, 9.f, 2.f, 1.5f, 2.f);
    };
    c.direct = c.intrinsic;
    c.want.resize(2 * 4 * 14 * 9);
    ref::resize(hostOf(x), 2, 4, 7, 6, 14, 9, 2.f, 1.5f,
                ResizeCoord::AlignCorners, true, NearestRounding::Floor,
                c.want.data());
    break;
  case HpvmOp::ResizeCubic: // 7 x 6 -> 12 x 5, half pixel, a -0.5, exclude
    c.in = {x};
    c.out = {2, 4, 12, 5};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_resize_cubic(t[0], 12.f, 5.f, 12.f / 7.f,
                                            5.f / 6.f, 0.f, -0.5f, 1.f);
    };
    c.direct = c.intrinsic;
    c.want.resize(2 * 4 * 12 * 5);
    ref::resizeCubic(hostOf(x), 2, 4, 7, 6, 12, 5, 12.f / 7.f, 5.f / 6.f,
                     ResizeCoord::HalfPixel, -0.5, true, c.want.data());
    break;
  // The crop rows: a region reaching past the image's top and right
  // (extrapolated with 0.25 there).
  case HpvmOp::ResizeNearestCrop: // 7 x 6 -> 9 x 5, halves up
    c.in = {x};
    c.out = {2, 4, 9, 5};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_resize_nearest_crop(t[0], 9.f, 5.f, -0.2f, 0.1f,
                                                   0.7f, 1.3f, 0.25f, 1.f);
    };
    c.direct = c.intrinsic;
    c.want.resize(2 * 4 * 9 * 5);
    ref::resize(hostOf(x), 2, 4, 7, 6, 9, 5, 1.f, 1.f,
                ResizeCoord::TfCropAndResize, false,
                NearestRounding::RoundPreferCeil, c.want.data(),
                ref::ResizeCrop{true, {-0.2f, 0.1f, 0.7f, 1.3f}, 0.25f});
    break;
  case HpvmOp::ResizeLinearCrop: // 7 x 6 -> 4 x 11
    c.in = {x};
    c.out = {2, 4, 4, 11};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_resize_linear_crop(t[0], 4.f, 11.f, -0.2f, 0.1f,
                                                  0.7f, 1.3f, 0.25f);
    };
    c.direct = c.intrinsic;
    c.want.resize(2 * 4 * 4 * 11);
    ref::resize(hostOf(x), 2, 4, 7, 6, 4, 11, 1.f, 1.f,
                ResizeCoord::TfCropAndResize, true, NearestRounding::Floor,
                c.want.data(),
                ref::ResizeCrop{true, {-0.2f, 0.1f, 0.7f, 1.3f}, 0.25f});
    break;
  case HpvmOp::ResizeCubicCrop: // 7 x 6 -> 8 x 8, a -0.75
    c.in = {x};
    c.out = {2, 4, 8, 8};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_resize_cubic_crop(
          t[0], 8.f, 8.f, -0.2f, 0.1f, 0.7f, 1.3f, 0.25f, -0.75f, 0.f);
    };
    c.direct = c.intrinsic;
    c.want.resize(2 * 4 * 8 * 8);
    ref::resizeCubic(hostOf(x), 2, 4, 7, 6, 8, 8, 1.f, 1.f,
                     ResizeCoord::TfCropAndResize, -0.75, false, c.want.data(),
                     ref::ResizeCrop{true, {-0.2f, 0.1f, 0.7f, 1.3f}, 0.25f});
    break;
  case HpvmOp::Reshape: // 4 x 7 x 6 values an image as 12 x 2 x 7
    c.in = {x};
    c.out = {2, 12, 2, 7};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_reshape(t[0], 12, 2, 7);
    };
    c.direct = c.intrinsic;
    std::copy(hostOf(x), hostOf(x) + n, c.want.begin());
    break;
  case HpvmOp::TokenTranspose: // 42 tokens of 4 features: 4 x 1 of 42
    c.in = {x};
    c.out = {2, 42, 4, 1};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_token_transpose(t[0], 4, 1);
    };
    c.direct = c.intrinsic;
    ref::channelsLast(hostOf(x), 2, 4, 42, c.want.data());
    break;
  case HpvmOp::TokenMatMul: { // 42 tokens of 4 features, times 4 x 5
    void* b = randomTensor({2, 5, 2, 2}, 2, -1, 1);
    c.in = {x, b};
    c.out = {2, 5, 7, 6};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_token_matmul(t[0], t[1]);
    };
    c.direct = c.intrinsic;
    c.want.resize(2 * 5 * 42);
    ref::tokenMatMul(hostOf(x), hostOf(b), 2, 4, 42, 5, c.want.data());
    break;
  }
  case HpvmOp::SelectToken: // pixel 9: row 1, column 3
    c.in = {x};
    c.out = {2, 4, 1, 1};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_select_token(t[0], 9);
    };
    c.direct = c.intrinsic;
    c.want.clear();
    for (int64_t i = 0; i < 8; ++i)
      c.want.push_back(hostOf(x)[i * 42 + 9]);
    break;
  case HpvmOp::Concat: { // variadic: the count, then the parts
    void* y = randomTensor({2, 3, 7, 6}, 11, -1, 1);
    void* z = randomTensor({2, 1, 7, 6}, 12, -1, 1);
    c.in = {x, y, z};
    c.out = {2, 8, 7, 6};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_concat(3, t[0], t[1], t[2]);
    };
    c.direct = c.intrinsic;
    const float* parts[] = {hostOf(x), hostOf(y), hostOf(z)};
    const int64_t channels[] = {4, 3, 1};
    c.want.resize(2 * 8 * 42);
    ref::concat(parts, channels, 3, 2, 42, c.want.data());
    break;
  }
  case HpvmOp::ConcatWidth: { // variadic: widths 6, 3, 1
    void* y = randomTensor({2, 4, 7, 3}, 11, -1, 1);
    void* z = randomTensor({2, 4, 7, 1}, 12, -1, 1);
    c.in = {x, y, z};
    c.out = {2, 4, 7, 10};
    c.intrinsic = [](void* const* t) {
      return __hpvm_rt__tensor_concat_width(3, t[0], t[1], t[2]);
    };
    c.direct = c.intrinsic;
    const float* parts[] = {hostOf(x), hostOf(y), hostOf(z)};
    const int64_t widths[] = {6, 3, 1};
    c.want.resize(2 * 4 * 7 * 10);
    ref::concatWidth(parts, widths, 3, 2 * 4 * 7, c.want.data());
    break;
  }
  }
  return c;
}

void checkClose(const std::vector<float>& got, const std::vector<float>& want,
                const char* what) {
  INFO(std::string(what));
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(double(got[i]) - want[i]) /
                                std::max(1.0, std::abs(double(want[i]))));
  CHECK(worst <= 1e-5);
}

// A one-leaf graph running the op under test inside a launch.
std::function<void*(void* const*)> leafCall;

void opLeaf(void* a, size_t, void* b, size_t, void* c, size_t, void* d, size_t,
            void* e, size_t) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  void* const t[] = {a, b, c, d, e};
  void* r = leafCall(t);
  __hpvm__return(2, r, (size_t)0);
}

void opRoot(void*, size_t, void*, size_t, void*, size_t, void*, size_t, void*,
            size_t) {
  __hpvm__hint(hpvm::CPU_TARGET);
  void* n = __hpvm__createNodeND(0, opLeaf);
  for (unsigned i = 0; i < 10; ++i)
    __hpvm__bindIn(n, i, i, 0);
  __hpvm__bindOut(n, 0, 0, 0);
  __hpvm__bindOut(n, 1, 1, 0);
}

struct __attribute__((__packed__)) OpIn {
  void* t[10];
  struct {
    void* tensor;
    size_t bytes;
  } r;
};

} // namespace

TEST_CASE("Intrinsics: every op matches the reference kernels eagerly, in a "
          "launch and as a direct call") {
  for (int k = 0; k < kNumHpvmOps; ++k) {
    auto op = static_cast<HpvmOp>(k);
    const OpInfo& info = opInfo(op);
    INFO("op " << std::string(info.confName));
    OpCase c = caseFor(op);
    REQUIRE(arityFits(*info.facts, int(c.in.size())));
    std::vector<float> input0 = valuesOf(c.in[0]);

    // Inside a launch: the program's tensors stay untouched.
    OpIn args{};
    for (size_t i = 0; i < 5; ++i)
      args.t[2 * i] = c.in[i < c.in.size() ? i : 0];
    leafCall = c.intrinsic;
    __hpvm__wait(__hpvm__launch(0, opRoot, (void*)&args));
    void* launched = args.r.tensor;
    CHECK(shapeOf(static_cast<Tensor*>(launched)) == c.out);
    checkClose(valuesOf(launched), c.want, "launched");
    CHECK(valuesOf(c.in[0]) == input0);

    // Eagerly, then as HPVM's direct call (in-place ops write operand 1).
    void* eager = c.intrinsic(c.in.data());
    checkClose(valuesOf(eager), c.want, "eager intrinsic");
    OpCase fresh = caseFor(op);
    void* direct = fresh.direct(fresh.in.data());
    checkClose(valuesOf(direct), fresh.want, "direct call");
  }
}

TEST_CASE("Intrinsics: shape errors name the call and the shapes") {
  auto error = [](const std::function<void()>& fn) -> std::string {
    try {
      fn();
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  };
  void* x = create4DTensor(0, nchw, 1, 3, 8, 8);
  void* w = create4DTensor(0, nchw, 4, 2, 3, 3);
  CHECK(error([&] { __hpvm__tensor_convolution(x, w, 0, 0, 1, 1); }) ==
        "__hpvm__tensor_convolution: input 1x3x8x8 does not fit filter "
        "4x2x3x3 with 1 group(s) (need input channels = filter dim 1 x "
        "groups and filter dim 0 divisible by groups)");
  CHECK(error([&] { __hpvm__tensor_pool_max(x, 9, 2, 0, 0, 1, 1); }) ==
        "__hpvm__tensor_pool_max: vertical window 9 is larger than the "
        "padded input extent 8");
  CHECK(error([&] {
          __hpvm_rt__tensor_pool_max_pads(x, 3, 3, 0, 0, 3, 0, 2, 2);
        }) == "__hpvm_rt__tensor_pool_max_pads: vertical padding 0 before, 3 "
              "after is not smaller than the window 3 (a window would see "
              "padding only)");
  CHECK(error([&] { __hpvm__tensor_pool_mean(x, 2, 2, 0, 0, 0, 1); }) ==
        "__hpvm__tensor_pool_mean: bad vertical geometry: window 2, padding "
        "0, stride 0 (window and stride must be >= 1, padding >= 0)");
  void* d = create4DTensor(0, nchw, 1, 1, 100, 10);
  CHECK(error([&] { __hpvm__tensor_mul(x, d); }) ==
        "__hpvm__tensor_mul: input 1x3x8x8 (192 features) does not fit "
        "weights 1x1x100x10 (expected 1x1x192xN)");
  CHECK(error([&] { __hpvm__tensor_batchnorm(x, x, x, x, x, 1e-5); }) ==
        "__hpvm__tensor_batchnorm: batch norm operand 2 has shape 1x3x8x8; "
        "expected 3 elements (one per channel of 1x3x8x8)");
  CHECK(error([&] { __hpvm__tensor_clipped_relu(x, 2.f, 1.f); }) ==
        "__hpvm__tensor_clipped_relu: clip bounds [2.000000, 1.000000] are "
        "empty");
  CHECK(error([&] {
          __hpvm_rt__tensor_hard_sigmoid(
              x, std::numeric_limits<float>::infinity(), 0.5f);
        }) == "__hpvm_rt__tensor_hard_sigmoid: hard sigmoid alpha inf and "
              "beta 0.500000 must be finite");
  CHECK(error([&] { tensorPooling(x, 2, 2, 2, 0, 0, 2, 2); }) ==
        "tensorPooling: pool function 2 is not supported (0 = max, 1 = "
        "mean; HPVM has no kernel for min pooling)");
  CHECK(error([&] { tensorRelu(nullptr); }) ==
        "tensorRelu: tensor operand 1 is NULL");
  void* y = create4DTensor(0, nchw, 1, 2, 8, 7);
  CHECK(error([&] { __hpvm_rt__tensor_concat(2, x, y); }) ==
        "__hpvm_rt__tensor_concat: cannot concatenate 1x2x8x7 (operand 2) to "
        "1x3x8x8 along the channels (need the same batch, height and width)");
  CHECK(error([&] { __hpvm_rt__tensor_concat(0); }) ==
        "__hpvm_rt__tensor_concat: 0 tensor operands (need 1 to 64)");
  CHECK(error([&] { __hpvm_rt__tensor_concat(2, x, nullptr); }) ==
        "__hpvm_rt__tensor_concat: tensor operand 2 is NULL");
  // Width concatenation: the same batch, channels and height.
  void* v = create4DTensor(0, nchw, 1, 3, 7, 4);
  CHECK(error([&] { __hpvm_rt__tensor_concat_width(3, x, x, v); }) ==
        "__hpvm_rt__tensor_concat_width: cannot concatenate 1x3x7x4 (operand "
        "3) to 1x3x8x8 along the width (need the same batch, channels and "
        "height)");
  CHECK(error([&] { __hpvm_rt__tensor_concat_width(2, x, y); }) ==
        "__hpvm_rt__tensor_concat_width: cannot concatenate 1x2x8x7 (operand "
        "2) to 1x3x8x8 along the width (need the same batch, channels and "
        "height)");
  // Group softmax: a group count >= 1 dividing the channels.
  void* c12 = create4DTensor(0, nchw, 2, 12, 1, 5);
  CHECK(error([&] { __hpvm_rt__tensor_group_softmax(c12, 5); }) ==
        "__hpvm_rt__tensor_group_softmax: 12 channels cannot be split into 5 "
        "softmax groups (need a group count >= 1 that divides them)");
  CHECK(error([&] { __hpvm_rt__tensor_group_softmax(c12, 0); }) ==
        "__hpvm_rt__tensor_group_softmax: 12 channels cannot be split into 0 "
        "softmax groups (need a group count >= 1 that divides them)");
  CHECK(error([&] { __hpvm_rt__tensor_group_softmax(c12, -3); }) ==
        "__hpvm_rt__tensor_group_softmax: 12 channels cannot be split into -3 "
        "softmax groups (need a group count >= 1 that divides them)");
  // Add and multiply: each dim of the second the first's or 1 (add: or
  // the first's element count, or one element per channel).
  void* wide = create4DTensor(0, nchw, 1, 3, 1, 7);
  CHECK(error([&] { __hpvm__tensor_add(x, wide); }) ==
        "__hpvm__tensor_add: cannot add 1x3x1x7 to 1x3x8x8 (need the same "
        "element count, one element per channel, or each dim the same or 1)");
  CHECK(error([&] { __hpvm_rt__tensor_multiply(x, wide); }) ==
        "__hpvm_rt__tensor_multiply: cannot multiply 1x3x8x8 by 1x3x1x7 "
        "(need each dim of the second the same or 1)");
  void* four = create4DTensor(0, nchw, 4, 3, 8, 8);
  CHECK(error([&] { __hpvm_rt__tensor_multiply(x, four); }) ==
        "__hpvm_rt__tensor_multiply: cannot multiply 1x3x8x8 by 4x3x8x8 "
        "(need each dim of the second the same or 1)");
}

namespace {

/// a (dims \p ad) <op> b (dims \p bd, each a's or 1), b's values repeated
/// along the dims where it has 1 (NumPy's broadcast), then \p act.
std::vector<float> broadcastReference(const std::vector<float>& a,
                                      const Shape& ad,
                                      const std::vector<float>& b,
                                      const Shape& bd, bool multiply, Act act,
                                      float lo, float hi) {
  std::vector<float> y(a.size());
  for (int64_t n = 0; n < ad[0]; ++n)
    for (int64_t c = 0; c < ad[1]; ++c)
      for (int64_t h = 0; h < ad[2]; ++h)
        for (int64_t w = 0; w < ad[3]; ++w) {
          const int64_t i = ((n * ad[1] + c) * ad[2] + h) * ad[3] + w;
          const int64_t j =
              (((bd[0] == 1 ? 0 : n) * bd[1] + (bd[1] == 1 ? 0 : c)) * bd[2] +
               (bd[2] == 1 ? 0 : h)) *
                  bd[3] +
              (bd[3] == 1 ? 0 : w);
          y[size_t(i)] = multiply ? a[size_t(i)] * b[size_t(j)]
                                  : a[size_t(i)] + b[size_t(j)];
        }
  ref::act(y.data(), int64_t(y.size()), act, lo, hi, y.data());
  return y;
}

} // namespace

TEST_CASE("Intrinsics: add and multiply broadcast a second operand whose "
          "dims are each the first's or 1, eagerly and as direct calls") {
  struct Case {
    Shape a, b;
  };
  unsigned seed = 300;
  // YOLO's anchors (1 x 2 x 1 x L), a row of weights, per-pixel values
  // shared by the channels, a batch-1 operand against a batch of 4, and
  // 84 values along the width of 84 channels (a broadcast, not per
  // channel).
  for (const Case& k :
       {Case{{4, 2, 1, 84}, {1, 2, 1, 84}}, Case{{4, 4, 1, 84}, {1, 1, 1, 84}},
        Case{{2, 5, 3, 4}, {1, 5, 3, 1}}, Case{{4, 3, 5, 6}, {1, 3, 5, 6}},
        Case{{2, 84, 1, 84}, {1, 1, 1, 84}}})
    for (bool multiply : {false, true}) {
      INFO((multiply ? "multiply " : "add ")
           << shapeText(k.a) << " by " << shapeText(k.b));
      void* a = randomTensor(k.a, ++seed, -2, 2);
      void* b = randomTensor(k.b, ++seed, -2, 2);
      const std::vector<float> av = valuesOf(a), bv = valuesOf(b);
      const std::vector<float> want =
          broadcastReference(av, k.a, bv, k.b, multiply, Act::None, 0.f, 0.f);
      void* y = multiply ? __hpvm_rt__tensor_multiply(a, b)
                         : __hpvm__tensor_add(a, b);
      CHECK(shapeOf(static_cast<Tensor*>(y)) == k.a);
      checkClose(valuesOf(y), want, "eager");
      if (!multiply) { // HPVM's direct call, in place
        void* a2 = randomTensor(k.a, seed - 1, -2, 2);
        CHECK(tensorAdd(a2, b) == a2);
        checkClose(valuesOf(a2), want, "direct call");
      }
    }
}

TEST_CASE("Intrinsics: in a launch, a convolution's fused bias is one value "
          "per channel, and C values along the width stay a broadcast") {
  // conv (2 x 4 x 1 x 4: as many channels as columns) + b: b 1 x 4 x 1 x 1
  // joins the convolution as its bias; b 1 x 1 x 1 x 4 is added along the
  // width, not per channel.
  void* x = randomTensor({2, 3, 1, 4}, 320, -1, 1);
  void* w = randomTensor({4, 3, 1, 1}, 321, -1, 1);
  std::vector<float> conv(2 * 4 * 4);
  ref::conv2d(hostOf(x), 2, 3, 1, 4, hostOf(w), 4, 1, 1,
              ConvArgs{0, 0, 1, 1, 1}, conv.data());
  for (const Shape& bs : {Shape{1, 4, 1, 1}, Shape{1, 1, 1, 4}}) {
    INFO("b " << shapeText(bs));
    void* b = randomTensor(bs, 322, -1, 1);
    const std::vector<float> bv = valuesOf(b);
    std::vector<float> want(conv.size());
    for (size_t i = 0; i < want.size(); ++i)
      want[i] =
          std::max(0.f, conv[i] + bv[bs[1] == 4 ? i / 4 % 4 : i % 4]); // c or w
    OpIn args{};
    args.t[0] = x;
    args.t[2] = w;
    args.t[4] = b;
    args.t[6] = args.t[8] = x;
    leafCall = [](void* const* t) {
      return __hpvm__tensor_relu(__hpvm__tensor_add(
          __hpvm__tensor_convolution(t[0], t[1], 0, 0, 1, 1), t[2]));
    };
    __hpvm__wait(__hpvm__launch(0, opRoot, (void*)&args));
    void* launched = args.r.tensor;
    CHECK(shapeOf(static_cast<Tensor*>(launched)) == Shape{2, 4, 1, 4});
    checkClose(valuesOf(launched), want, "launched");
  }
}
