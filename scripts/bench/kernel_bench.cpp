// kernel_bench.cpp - times HPVM's benchmark architectures run layer by
// layer through hpvm_rt's kernels (Kernels.h), without the executor: the
// kernel-level half of scripts/bench/bench_vs_pytorch.py.
//
// Usage: kernel_bench --net NAME [--batch N] [--threads N] [--repeat N]
//                     [--warmup N] [--knobs K1,K2,...] [--json]
// Nets: lenet_mnist, alexnet_cifar10, alexnet2_cifar10, vgg16_cifar10,
// vgg16_cifar100, resnet18_cifar10, mobilenet_cifar10, alexnet_imagenet,
// vgg16_imagenet, resnet50_imagenet (the layer lists of reference section 9;
// random weights, fixed seed). Prints per-batch times and images/s.
// --knobs (configuration names of Ops.def: fp32, fp16, bf16, int8_dyn):
// one copy of the net per knob, the knob on every convolution and dense
// layer (the other layers fp32), bf16 results chained as bf16 as the
// executor chains them (Groups.cpp); the copies' batches interleaved, and
// each knob's speedup over the first.
#include "hpvm_rt/OpTable.h"
#include "kernels/Kernels.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <time.h>

using namespace hpvm::rt;

namespace {

/// A tensor owned by the benchmark.
struct Buf {
  std::vector<size_t> dims;
  Tensor t{};
  explicit Buf(std::vector<size_t> d) : dims(std::move(d)) {
    t.dims.num_dims = static_cast<int>(dims.size());
    t.dims.dim_sizes = dims.data();
    allocHost(&t);
  }
  Buf(const Buf&) = delete;
  ~Buf() { releaseStorage(&t); }
  void random(std::mt19937& gen, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    auto* p = static_cast<float*>(t.host_data);
    for (size_t i = 0; i < t.num_elems; ++i)
      p[i] = dist(gen);
    hostModified(&t);
  }
};

/// A network as a list of steps over owned buffers; build() allocates the
/// weights, run() executes one batch.
class Net {
public:
  Net(int64_t batch, int64_t c, int64_t h, int64_t w, KnobSpec knob)
      : gen_(42), knob_(knob) {
    input_ = make({size_t(batch), size_t(c), size_t(h), size_t(w)});
    input_->random(gen_, -1.f, 1.f);
    cur_ = input_;
  }

  /// conv KxKHxKW (+bias) (+BN) + act, fused as the executor fuses them.
  void conv(int64_t K, int kh, int stride, int pad, Act act, bool bias = true,
            bool bn = false, int groups = 1) {
    Dims d = dimsOf(cur_);
    int64_t Ho = 1 + (d[2] + 2 * pad - kh) / stride;
    int64_t Wo = 1 + (d[3] + 2 * pad - kh) / stride;
    Buf* w = weight({size_t(K), size_t(d[1] / groups), size_t(kh), size_t(kh)},
                    d[1] / groups * kh * kh);
    auto post = std::make_shared<PostOps>();
    if (bias)
      post->bias = perChannel(K, -0.1f, 0.1f);
    if (bn)
      addBn(*post, K);
    post->act = act;
    post->actHi = 6.f;
    ConvArgs a;
    a.padH = a.padW = pad;
    a.strideH = a.strideW = stride;
    a.groups = groups;
    Buf* x = cur_;
    Buf* y = make({size_t(d[0]), size_t(K), size_t(Ho), size_t(Wo)});
    chainInto();
    const KnobSpec k = knob_;
    steps_.push_back([=] { runConv(&x->t, &w->t, a, *post, k, &y->t); });
    cur_ = y;
    chainFrom_ = post.get();
  }
  /// Residual basic block of the CIFAR ResNet: relu(main + shortcut).
  void basicBlock(int64_t out, bool down) {
    chainFrom_ = nullptr; // the block's input has two readers
    Buf* in = cur_;
    conv(out, 3, down ? 2 : 1, 1, Act::Relu);
    Buf* mid = cur_;
    Buf* shortcut = in;
    if (down) {
      cur_ = in;
      conv(out, 1, 2, 0, Act::None);
      shortcut = cur_;
    }
    cur_ = mid;
    convResidual(out, 3, 1, 1, shortcut, false);
  }
  /// ResNet-50 bottleneck with batch norms.
  void bottleneck(int64_t planes, int stride) {
    chainFrom_ = nullptr; // the block's input has two readers
    Buf* in = cur_;
    Dims d = dimsOf(in);
    conv(planes, 1, stride, 0, Act::Relu, true, true);
    conv(planes, 3, 1, 1, Act::Relu, true, true);
    Buf* mid = cur_;
    Buf* shortcut = in;
    if (stride != 1 || d[1] != 4 * planes) {
      cur_ = in;
      conv(4 * planes, 1, stride, 0, Act::None, true, true);
      shortcut = cur_;
    }
    cur_ = mid;
    convResidual(4 * planes, 1, 1, 0, shortcut, true);
  }
  void pool(PoolArgs::Kind kind, int k, int stride, int pad = 0) {
    Dims d = dimsOf(cur_);
    PoolArgs a;
    a.kind = kind;
    a.kh = a.kw = k;
    a.strideH = a.strideW = stride;
    a.padH = a.padW = pad;
    int64_t Ho = 1 + (d[2] + 2 * pad - k) / stride;
    int64_t Wo = 1 + (d[3] + 2 * pad - k) / stride;
    Buf* x = cur_;
    Buf* y = make({size_t(d[0]), size_t(d[1]), size_t(Ho), size_t(Wo)});
    steps_.push_back([=] { runPool(&x->t, a, KnobSpec{}, &y->t); });
    cur_ = y;
    if (kind != PoolArgs::Max)
      chainFrom_ = nullptr; // (a max pool commutes with the rounding)
  }
  void batchNorm(Act act) {
    Dims d = dimsOf(cur_);
    auto post = std::make_shared<PostOps>();
    addBn(*post, d[1]);
    Buf* x = cur_;
    chainFrom_ = nullptr;
    steps_.push_back([=] {
      runBatchNorm(&x->t, post->bnGamma, post->bnBeta, post->bnMean,
                   post->bnVar, post->bnEps, act, 0.f, 6.f, KnobSpec{}, &x->t);
    });
  }
  void dense(int64_t N, Act act) {
    Dims d = dimsOf(cur_);
    int64_t K = d[1] * d[2] * d[3];
    Buf* w = weight({1, 1, size_t(K), size_t(N)}, K);
    auto post = std::make_shared<PostOps>();
    post->bias = perChannel(N, -0.1f, 0.1f);
    post->act = act;
    Buf* x = cur_;
    Buf* y = make({size_t(d[0]), size_t(N), 1, 1});
    chainInto();
    const KnobSpec k = knob_;
    steps_.push_back([=] { runDense(&x->t, &w->t, *post, k, &y->t); });
    cur_ = y;
  }
  void softmax() {
    chainFrom_ = nullptr;
    Buf* x = cur_;
    steps_.push_back([=] {
      runSoftmax(&x->t, KnobSpec{}, &x->t);
      ensureHost(&x->t);
    });
  }

  /// One batch: the input is rewritten (as the driver does) and every
  /// step runs.
  void run() {
    hostModified(&input_->t);
    for (auto& s : steps_)
      s();
  }

private:
  using Dims = std::vector<int64_t>;
  Dims dimsOf(Buf* b) { return Dims(b->dims.begin(), b->dims.end()); }
  /// The layer that wrote cur_, read next by the layer being added, stores
  /// its result as bf16 when both are bf16 (as Groups.cpp decides).
  void chainInto() {
    if (chainFrom_ && knob_.precision == Precision::BF16 &&
        knob_.variant == Variant::Exact && !chainFrom_->residual)
      chainFrom_->bf16Out = true;
    chainFrom_ = nullptr;
  }
  Buf* make(std::vector<size_t> d) {
    bufs_.push_back(std::make_unique<Buf>(std::move(d)));
    return bufs_.back().get();
  }
  Buf* weight(std::vector<size_t> d, int64_t fanIn) {
    Buf* w = make(std::move(d));
    float s = std::sqrt(3.f / float(fanIn));
    w->random(gen_, -s, s);
    return w;
  }
  const Tensor* perChannel(int64_t C, float lo, float hi) {
    Buf* b = make({1, size_t(C), 1, 1});
    b->random(gen_, lo, hi);
    return &b->t;
  }
  void addBn(PostOps& p, int64_t C) {
    p.bnGamma = perChannel(C, 0.5f, 1.5f);
    p.bnBeta = perChannel(C, -0.1f, 0.1f);
    p.bnMean = perChannel(C, -0.1f, 0.1f);
    p.bnVar = perChannel(C, 0.5f, 1.5f);
    p.bnEps = 1e-3;
  }
  void convResidual(int64_t K, int kh, int stride, int pad, Buf* residual,
                    bool bn) {
    Dims d = dimsOf(cur_);
    int64_t Ho = 1 + (d[2] + 2 * pad - kh) / stride;
    Buf* w = weight({size_t(K), size_t(d[1]), size_t(kh), size_t(kh)},
                    d[1] * kh * kh);
    auto post = std::make_shared<PostOps>();
    post->bias = perChannel(K, -0.1f, 0.1f);
    if (bn)
      addBn(*post, K);
    post->residual = &residual->t;
    post->act2 = Act::Relu;
    ConvArgs a;
    a.padH = a.padW = pad;
    a.strideH = a.strideW = stride;
    Buf* x = cur_;
    Buf* y = make({size_t(d[0]), size_t(K), size_t(Ho), size_t(Ho)});
    chainInto();
    const KnobSpec k = knob_;
    steps_.push_back([=] { runConv(&x->t, &w->t, a, *post, k, &y->t); });
    cur_ = y;
  }

  std::mt19937 gen_;
  KnobSpec knob_;
  PostOps* chainFrom_ = nullptr; ///< The layer that wrote cur_, if chainable.
  std::vector<std::unique_ptr<Buf>> bufs_;
  std::vector<std::function<void()>> steps_;
  Buf* input_ = nullptr;
  Buf* cur_ = nullptr;
};

void vgg16(Net& n, int64_t classes, bool imagenet) {
  const int64_t cfg[] = {64, 64,  0,   128, 128, 0,   256, 256, 256,
                         0,  512, 512, 512, 0,   512, 512, 512, 0};
  for (int64_t c : cfg) {
    if (c == 0)
      n.pool(PoolArgs::Max, 2, 2);
    else
      n.conv(c, 3, 1, 1, Act::Relu);
  }
  if (imagenet) {
    n.dense(4096, Act::Relu);
    n.dense(4096, Act::Relu);
  } else {
    n.dense(512, Act::Relu);
  }
  n.dense(classes, Act::None);
  n.softmax();
}

std::unique_ptr<Net> buildNet(const std::string& name, int64_t batch,
                              const KnobSpec& knob) {
  bool imagenet = name.find("imagenet") != std::string::npos;
  std::unique_ptr<Net> n;
  if (name == "lenet_mnist")
    n = std::make_unique<Net>(batch, 1, 28, 28, knob);
  else
    n = std::make_unique<Net>(batch, 3, imagenet ? 224 : 32,
                              imagenet ? 224 : 32, knob);
  if (name == "lenet_mnist") {
    n->conv(32, 5, 1, 2, Act::Tanh);
    n->pool(PoolArgs::Max, 2, 2);
    n->conv(64, 5, 1, 2, Act::Tanh);
    n->pool(PoolArgs::Max, 2, 2);
    n->dense(1024, Act::Tanh);
    n->dense(10, Act::Tanh);
    n->softmax();
  } else if (name == "alexnet_cifar10") {
    n->conv(64, 11, 1, 5, Act::Tanh);
    n->pool(PoolArgs::Max, 2, 2);
    n->conv(192, 5, 1, 2, Act::Tanh);
    n->pool(PoolArgs::Max, 2, 2);
    n->conv(384, 3, 1, 1, Act::Tanh);
    n->conv(256, 3, 1, 1, Act::Tanh);
    n->conv(256, 3, 1, 1, Act::Tanh);
    n->pool(PoolArgs::Max, 2, 2);
    n->dense(10, Act::None);
    n->softmax();
  } else if (name == "alexnet2_cifar10") {
    for (int64_t c : {32, 64, 128}) {
      n->conv(c, 3, 1, 1, Act::Tanh);
      n->conv(c, 3, 1, 1, Act::Tanh);
      n->pool(PoolArgs::Max, 2, 2);
    }
    n->dense(10, Act::None);
    n->softmax();
  } else if (name == "vgg16_cifar10" || name == "vgg16_cifar100") {
    vgg16(*n, name == "vgg16_cifar10" ? 10 : 100, false);
  } else if (name == "vgg16_imagenet") {
    vgg16(*n, 1000, true);
  } else if (name == "resnet18_cifar10") {
    n->conv(16, 3, 1, 1, Act::Relu);
    for (int64_t c : {16, 32, 64})
      for (int b = 0; b < 3; ++b)
        n->basicBlock(c, b == 0 && c != 16);
    n->pool(PoolArgs::Avg, 8, 8);
    n->dense(10, Act::None);
    n->softmax();
  } else if (name == "mobilenet_cifar10") {
    n->conv(32, 3, 1, 1, Act::Relu, false, true);
    int64_t c = 32;
    const int pairs[][2] = {{1, 64},  {2, 128},  {1, 128}, {2, 256}, {1, 256},
                            {2, 512}, {1, 512},  {1, 512}, {1, 512}, {1, 512},
                            {1, 512}, {2, 1024}, {1, 1024}};
    for (const auto& p : pairs) {
      n->conv(c, 3, p[0], 1, Act::Relu, false, true, int(c));
      n->conv(p[1], 1, 1, 0, Act::Relu, false, true);
      c = p[1];
    }
    n->pool(PoolArgs::Avg, 2, 2);
    n->dense(10, Act::None);
    n->softmax();
  } else if (name == "alexnet_imagenet") {
    n->conv(64, 11, 4, 2, Act::Relu);
    n->pool(PoolArgs::Max, 3, 2);
    n->conv(192, 5, 1, 2, Act::Relu);
    n->pool(PoolArgs::Max, 3, 2);
    n->conv(384, 3, 1, 1, Act::Relu);
    n->conv(256, 3, 1, 1, Act::Relu);
    n->conv(256, 3, 1, 1, Act::Relu);
    n->pool(PoolArgs::Max, 3, 2);
    n->dense(4096, Act::Relu);
    n->dense(4096, Act::Relu);
    n->dense(1000, Act::None);
    n->softmax();
  } else if (name == "resnet50_imagenet") {
    n->conv(64, 7, 2, 3, Act::Relu);
    n->pool(PoolArgs::Max, 3, 2);
    n->batchNorm(Act::None);
    const int stages[][3] = {{64, 3, 1}, {128, 4, 2}, {256, 6, 2}, {512, 3, 2}};
    for (const auto& s : stages)
      for (int b = 0; b < s[1]; ++b)
        n->bottleneck(s[0], b == 0 ? s[2] : 1);
    n->pool(PoolArgs::Avg, 7, 7);
    n->dense(1000, Act::None);
    n->softmax();
  } else {
    throw std::runtime_error("unknown net '" + name + "'");
  }
  return n;
}

/// CPU time of the whole process (all threads), in seconds.
double cpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

int usage(const char* msg) {
  std::fprintf(stderr,
               "kernel_bench: %s\nusage: kernel_bench --net NAME [--batch N] "
               "[--threads N] [--repeat N] [--warmup N] [--knobs K1,K2,...] "
               "[--json]\n",
               msg);
  return 2;
}

/// One knob's copy of the net and its timings.
struct Run {
  std::string knob;
  std::unique_ptr<Net> net;
  std::vector<double> secs, cpus;
};

} // namespace

int main(int argc, char** argv) {
  std::string net, knobList = "fp32";
  long batch = 64, threads = 0, repeat = 5, warmup = 1;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](long& v) {
      if (i + 1 >= argc)
        return false;
      char* end = nullptr;
      v = std::strtol(argv[++i], &end, 10);
      return *end == '\0' && v >= 0;
    };
    if (a == "--net" && i + 1 < argc)
      net = argv[++i];
    else if (a == "--knobs" && i + 1 < argc)
      knobList = argv[++i];
    else if (a == "--json")
      json = true;
    else if (!((a == "--batch" && value(batch) && batch > 0) ||
               (a == "--threads" && value(threads)) ||
               (a == "--repeat" && value(repeat) && repeat > 0) ||
               (a == "--warmup" && value(warmup))))
      return usage(("bad argument '" + a + "'").c_str());
  }
  if (net.empty())
    return usage("--net is required");
  setNumThreads(int(threads));
  std::vector<Run> runs;
  for (size_t b = 0; b <= knobList.size();) {
    size_t e = knobList.find(',', b);
    if (e == std::string::npos)
      e = knobList.size();
    const std::string name = knobList.substr(b, e - b);
    b = e + 1;
    const KnobInfo* info = knobByName(name);
    if (!info || info->spec.variant != Variant::Exact ||
        info->spec.precision == Precision::INT8)
      return usage(("--knobs takes fp32, fp16, bf16, int8_dyn; got '" + name +
                    "'")
                       .c_str());
    try {
      runs.push_back(Run{name, buildNet(net, batch, info->spec), {}, {}});
    } catch (const std::exception& e) {
      return usage(e.what());
    }
  }
  for (long i = 0; i < warmup; ++i)
    for (Run& r : runs)
      r.net->run();
  // Wall time per batch, and the process CPU time (all threads) of the
  // fastest batch: on a shared machine CPU time is the steadier figure.
  // The knobs' batches interleave, so that a slow spell hits them all.
  for (long i = 0; i < repeat; ++i)
    for (Run& r : runs) {
      double c0 = cpuSeconds();
      auto t0 = std::chrono::steady_clock::now();
      r.net->run();
      auto t1 = std::chrono::steady_clock::now();
      r.cpus.push_back(cpuSeconds() - c0);
      r.secs.push_back(std::chrono::duration<double>(t1 - t0).count());
    }
  auto medianOf = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double base = medianOf(runs.front().secs);
  for (const Run& r : runs) {
    double bestCpu = *std::min_element(r.cpus.begin(), r.cpus.end());
    double meanCpu =
        std::accumulate(r.cpus.begin(), r.cpus.end(), 0.0) / r.cpus.size();
    double mean =
        std::accumulate(r.secs.begin(), r.secs.end(), 0.0) / r.secs.size();
    double median = medianOf(r.secs);
    double best = *std::min_element(r.secs.begin(), r.secs.end());
    if (json)
      std::printf("{\"net\": \"%s\", \"knob\": \"%s\", \"batch\": %ld, "
                  "\"threads\": %d, \"mean_s\": %.6f, \"median_s\": %.6f, "
                  "\"min_s\": %.6f, \"images_per_s\": %.3f, "
                  "\"min_cpu_s\": %.6f, \"mean_cpu_s\": %.6f, "
                  "\"speedup\": %.3f}\n",
                  net.c_str(), r.knob.c_str(), batch, numThreads(), mean,
                  median, best, batch / best, bestCpu, meanCpu, base / median);
    else
      std::printf("%s %s batch %ld threads %d: mean %.4f s, median %.4f s, "
                  "min %.4f s per batch, %.1f images/s (min CPU time %.4f "
                  "s), %.2fx %s\n",
                  net.c_str(), r.knob.c_str(), batch, numThreads(), mean,
                  median, best, batch / best, bestCpu, base / median,
                  runs.front().knob.c_str());
  }
  return 0;
}
