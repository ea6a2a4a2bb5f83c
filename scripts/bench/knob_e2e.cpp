// knob_e2e.cpp - per-layer time of every convolution knob as a generated
// program sees it: runConv on Tensors (knob dispatch, operand rounding,
// post-ops bias + ReLU, output layout) against the exact knob 11, on LeNet
// (batch 100, as `<binary> test --profile`), VGG16-CIFAR and
// ResNet-18-CIFAR layers. Built and run by knob_e2e.sh (issue #4).
//
// Usage: knob_e2e [--batch N] [--reps N] [--knobs 121,123,...]
//                 [--layer SUBSTRING] [--blocked-input]
//   --batch          images of the CIFAR layers (default 64)
//   --blocked-input  the input comes from an exact convolution (oneDNN's
//                    blocked layout) instead of a host NCHW buffer
// Threads: OMP_NUM_THREADS. Prints the best of --reps runs per knob, in
// ms, and the speedup over knob 11.
#include "Runtime.h"
#include "kernels/Kernels.h"
#include "tensor.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace hpvm::rt;

namespace {

/// An NCHW tensor owned by the benchmark.
class BenchTensor {
public:
  explicit BenchTensor(std::vector<size_t> dims) : dims_(std::move(dims)) {
    std::memset(&t_, 0, sizeof t_);
    t_.dims.num_dims = static_cast<int>(dims_.size());
    t_.dims.dim_sizes = dims_.data();
    allocHost(&t_);
  }
  BenchTensor(const BenchTensor&) = delete;
  BenchTensor& operator=(const BenchTensor&) = delete;
  ~BenchTensor() { releaseStorage(&t_); }
  Tensor* get() { return &t_; }
  /// Uniform values in [lo, hi) from `seed`.
  void fill(unsigned seed, float lo, float hi) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    allocHost(&t_);
    float* p = static_cast<float*>(t_.host_data);
    for (size_t i = 0; i < t_.num_elems; ++i)
      p[i] = dist(gen);
    hostModified(&t_);
  }

private:
  std::vector<size_t> dims_;
  Tensor t_;
};

/// One convolution layer: square input and filter.
struct Layer {
  const char* name;
  bool lenet; ///< Batch 100 (LeNet) instead of --batch.
  int64_t c, h, k, kh, stride, pad;
};

const std::vector<Layer> kLayers = {
    {"lenet conv1 1-32 28", true, 1, 28, 32, 5, 1, 2},
    {"lenet conv2 32-64 14", true, 32, 14, 64, 5, 1, 2},
    // Every distinct convolution of HPVM's VGG16-CIFAR10.
    {"vgg conv1 3-64 32", false, 3, 32, 64, 3, 1, 1},
    {"vgg conv2 64-64 32", false, 64, 32, 64, 3, 1, 1},
    {"vgg conv3 64-128 16", false, 64, 16, 128, 3, 1, 1},
    {"vgg conv4 128-128 16", false, 128, 16, 128, 3, 1, 1},
    {"vgg conv5 128-256 8", false, 128, 8, 256, 3, 1, 1},
    {"vgg conv6 256-256 8", false, 256, 8, 256, 3, 1, 1},
    {"vgg conv8 256-512 4", false, 256, 4, 512, 3, 1, 1},
    {"vgg conv9 512-512 4", false, 512, 4, 512, 3, 1, 1},
    {"vgg conv11 512-512 2", false, 512, 2, 512, 3, 1, 1},
    // Every distinct convolution of HPVM's ResNet-18-CIFAR10.
    {"res conv1 3-16 32", false, 3, 32, 16, 3, 1, 1},
    {"res s1 16-16 32", false, 16, 32, 16, 3, 1, 1},
    {"res down2 16-32 32 s2", false, 16, 32, 32, 3, 2, 1},
    {"res short2 16-32 1x1 s2", false, 16, 32, 32, 1, 2, 0},
    {"res s2 32-32 16", false, 32, 16, 32, 3, 1, 1},
    {"res down3 32-64 16 s2", false, 32, 16, 64, 3, 2, 1},
    {"res short3 32-64 1x1 s2", false, 32, 16, 64, 1, 2, 0},
    {"res s3 64-64 8", false, 64, 8, 64, 3, 1, 1},
};

/// The convolution knobs of Ops.def (bf16 left out).
std::vector<KnobSpec> convKnobs() {
  std::vector<KnobSpec> out;
  for (const KnobInfo& k : allKnobs())
    if (k.spec.precision != Precision::BF16)
      out.push_back(k.spec);
  return out;
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "knob_e2e: %s\nusage: knob_e2e [--batch N] [--reps N] "
               "[--knobs ID,ID,...] [--layer SUBSTRING] [--blocked-input]\n",
               why);
  std::exit(2);
}

int64_t positive(const char* flag, const char* v) {
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (!*v || *end || n <= 0)
    usage((std::string(flag) + " needs a positive integer, got '" + v + "'")
              .c_str());
  return n;
}

} // namespace

int main(int argc, char** argv) {
  int64_t batch = 64, reps = 10;
  std::vector<int> wanted;
  std::string only;
  bool blocked = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] {
      if (i + 1 >= argc)
        usage((a + " needs a value").c_str());
      return argv[++i];
    };
    if (a == "--batch") {
      batch = positive("--batch", value());
    } else if (a == "--reps") {
      reps = positive("--reps", value());
    } else if (a == "--layer") {
      only = value();
    } else if (a == "--blocked-input") {
      blocked = true;
    } else if (a == "--knobs") {
      std::stringstream ss(value());
      std::string id;
      while (std::getline(ss, id, ','))
        wanted.push_back(static_cast<int>(positive("--knobs", id.c_str())));
    } else {
      usage(("unknown argument '" + a + "'").c_str());
    }
  }
  std::vector<KnobSpec> knobs;
  for (const KnobSpec& k : convKnobs()) {
    bool take = k.id == 11 || wanted.empty();
    for (int id : wanted)
      take = take || id == k.id;
    if (take)
      knobs.push_back(k);
  }
  for (int id : wanted) {
    bool known = false;
    for (const KnobSpec& k : knobs)
      known = known || k.id == id;
    if (!known)
      usage(("no convolution knob " + std::to_string(id) + " in Ops.def")
                .c_str());
  }

  for (const Layer& l : kLayers) {
    if (!only.empty() && std::string(l.name).find(only) == std::string::npos)
      continue;
    const size_t n = l.lenet ? 100 : static_cast<size_t>(batch);
    const int64_t ho = (l.h + 2 * l.pad - l.kh) / l.stride + 1;
    const size_t c = l.c, h = l.h, k = l.k, kh = l.kh;
    BenchTensor x({n, c, h, h}), w({k, c, kh, kh}), b({1, k, 1, 1});
    BenchTensor y({n, k, size_t(ho), size_t(ho)});
    // The producer of x for --blocked-input: an exact 1x1 convolution.
    BenchTensor x0({n, c, h, h}), w0({c, c, 1, 1});
    x.fill(1, -1.f, 1.f);
    w.fill(2, -0.1f, 0.1f);
    b.fill(3, -0.1f, 0.1f);
    x0.fill(4, -1.f, 1.f);
    w0.fill(5, -0.5f, 0.5f);
    ConvArgs args;
    args.padH = args.padW = l.pad;
    args.strideH = args.strideW = l.stride;
    PostOps post;
    post.bias = b.get();
    post.act = Act::Relu;
    std::printf("%-22s", l.name);
    double exact = 0;
    for (const KnobSpec& knob : knobs) {
      double best = 1e30;
      for (int64_t r = 0; r < reps + 2; ++r) {
        if (blocked) {
          runConv(x0.get(), w0.get(), ConvArgs{}, PostOps{}, KnobSpec{},
                  x.get());
        } else {
          allocHost(x.get());
          hostModified(x.get());
        }
        const auto t0 = std::chrono::steady_clock::now();
        runConv(x.get(), w.get(), args, post, knob, y.get());
        const double ms = std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - t0)
                              .count();
        if (r >= 2 && ms < best) // The first two runs create primitives.
          best = ms;
      }
      if (knob.id == 11)
        exact = best;
      std::printf(" %d:%6.2fms(%.2fx)", knob.id, best, exact / best);
    }
    std::printf("\n");
  }
  return 0;
}
