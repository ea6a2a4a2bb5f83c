// knob_speedups.cpp - per-layer speedup of every convolution knob of
// Ops.def over the exact oneDNN convolution, on the convolutions of
// VGG16-CIFAR and ResNet-18-CIFAR (reference section 9); prints a table and
// optionally writes JSON. Built and run by knob_speedups.sh.
//
// Baselines, both oneDNN's best kernel with filters reordered beforehand:
//   exact      - NCHW input to NCHW output (input and output reorders
//                included), the interface of the approximate kernels;
//   exact_blk  - input already in the kernel's layout and output left in
//                it, as between two exact layers of a network.
#include "Runtime.h"
#include "approx/ConvGeometry.h"
#include "kernels/Kernels.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace hpvm::rt;

namespace {

/// One convolution layer of a benchmark network.
struct Layer {
  const char* net;
  const char* name;
  int64_t c, h, k, kh, stride, pad;
};

/// The distinct convolutions of VGG16-CIFAR and ResNet-18-CIFAR (3-stage
/// CIFAR ResNet), input H == W.
const std::vector<Layer>& layers() {
  static const std::vector<Layer> all = {
      {"vgg16_cifar10", "conv1 3-64 32", 3, 32, 64, 3, 1, 1},
      {"vgg16_cifar10", "conv2 64-64 32", 64, 32, 64, 3, 1, 1},
      {"vgg16_cifar10", "conv3 64-128 16", 64, 16, 128, 3, 1, 1},
      {"vgg16_cifar10", "conv4 128-128 16", 128, 16, 128, 3, 1, 1},
      {"vgg16_cifar10", "conv5 128-256 8", 128, 8, 256, 3, 1, 1},
      {"vgg16_cifar10", "conv6 256-256 8", 256, 8, 256, 3, 1, 1},
      {"vgg16_cifar10", "conv8 256-512 4", 256, 4, 512, 3, 1, 1},
      {"vgg16_cifar10", "conv9 512-512 4", 512, 4, 512, 3, 1, 1},
      {"vgg16_cifar10", "conv11 512-512 2", 512, 2, 512, 3, 1, 1},
      {"resnet18_cifar10", "stem 3-16 32", 3, 32, 16, 3, 1, 1},
      {"resnet18_cifar10", "s1 16-16 32", 16, 32, 16, 3, 1, 1},
      {"resnet18_cifar10", "s2a 16-32 /2", 16, 32, 32, 3, 2, 1},
      {"resnet18_cifar10", "s2sc 1x1 16-32 /2", 16, 32, 32, 1, 2, 0},
      {"resnet18_cifar10", "s2 32-32 16", 32, 16, 32, 3, 1, 1},
      {"resnet18_cifar10", "s3a 32-64 /2", 32, 16, 64, 3, 2, 1},
      {"resnet18_cifar10", "s3sc 1x1 32-64 /2", 32, 16, 64, 1, 2, 0},
      {"resnet18_cifar10", "s3 64-64 8", 64, 8, 64, 3, 1, 1},
  };
  return all;
}

/// A knob row of Ops.def that applies to convolutions.
/// The convolution knobs of Ops.def (bf16 left out).
std::vector<KnobInfo> convKnobs() {
  std::vector<KnobInfo> out;
  for (const KnobInfo& k : allKnobs())
    if (k.spec.precision != Precision::BF16)
      out.push_back(k);
  return out;
}

/// Wall-clock time, or the process's CPU time (--cpu-time: immune to
/// other processes' load, meaningful with OMP_NUM_THREADS=1), in ms.
bool useCpuTime = false;
double nowMs() {
  timespec ts;
  clock_gettime(useCpuTime ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/// Fastest time of fn in milliseconds over `reps` runs after a warm-up (the
/// minimum, since interference only ever adds time).
double timeMs(const std::function<void()>& fn, int reps) {
  fn();
  double best = 1e300;
  for (int i = 0; i < reps; ++i) {
    const double a = nowMs();
    fn();
    best = std::min(best, nowMs() - a);
  }
  return best;
}

/// The exact oneDNN convolution of one layer, filters reordered once.
class ExactConv {
public:
  ExactConv(const Layer& l, int64_t n, const float* w)
      : eng_(dnnl::engine::kind::cpu, 0), strm_(eng_) {
    using dnnl::memory;
    using dt = memory::data_type;
    using tag = memory::format_tag;
    const int64_t ho = 1 + (l.h + 2 * l.pad - l.kh) / l.stride;
    srcPlain_ = memory::desc({n, l.c, l.h, l.h}, dt::f32, tag::nchw);
    dstPlain_ = memory::desc({n, l.k, ho, ho}, dt::f32, tag::nchw);
    const memory::desc weiPlain({l.k, l.c, l.kh, l.kh}, dt::f32, tag::oihw);
    pd_ = dnnl::convolution_forward::primitive_desc(
        {dnnl::prop_kind::forward_inference,
         dnnl::algorithm::convolution_direct,
         memory::desc({n, l.c, l.h, l.h}, dt::f32, tag::any),
         memory::desc({l.k, l.c, l.kh, l.kh}, dt::f32, tag::any),
         memory::desc({n, l.k, ho, ho}, dt::f32, tag::any),
         {l.stride, l.stride},
         {l.pad, l.pad},
         {l.pad, l.pad}},
        eng_);
    conv_ = dnnl::convolution_forward(pd_);
    wei_ = memory(pd_.weights_desc(), eng_);
    memory userW(weiPlain, eng_, const_cast<float*>(w));
    dnnl::reorder(userW, wei_).execute(strm_, userW, wei_);
    src_ = memory(pd_.src_desc(), eng_);
    dst_ = memory(pd_.dst_desc(), eng_);
    strm_.wait();
  }
  /// The kernel oneDNN chose.
  const char* impl() const { return pd_.impl_info_str(); }
  /// NCHW x to NCHW y.
  void plain(const float* x, float* y) {
    dnnl::memory xm(srcPlain_, eng_, const_cast<float*>(x));
    dnnl::memory ym(dstPlain_, eng_, y);
    dnnl::memory s = src_, d = dst_;
    if (srcPlain_ != pd_.src_desc())
      dnnl::reorder(xm, src_).execute(strm_, xm, src_);
    else
      s = xm;
    if (dstPlain_ == pd_.dst_desc())
      d = ym;
    conv_.execute(
        strm_,
        {{DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, wei_}, {DNNL_ARG_DST, d}});
    if (dstPlain_ != pd_.dst_desc())
      dnnl::reorder(dst_, ym).execute(strm_, dst_, ym);
    strm_.wait();
  }
  /// Kernel layout in and out.
  void blocked() {
    conv_.execute(
        strm_,
        {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, wei_}, {DNNL_ARG_DST, dst_}});
    strm_.wait();
  }

private:
  dnnl::engine eng_;
  dnnl::stream strm_;
  dnnl::memory::desc srcPlain_, dstPlain_;
  dnnl::convolution_forward::primitive_desc pd_;
  dnnl::convolution_forward conv_;
  dnnl::memory wei_, src_, dst_;
};

struct Result {
  int id;
  double ms;
};

struct LayerResult {
  const Layer* layer;
  double exactMs, exactBlkMs;
  std::string impl;
  std::vector<Result> knobs;
};

void usage() {
  std::printf(
      "usage: knob_speedups [--batch N] [--reps N] [--net NAME] "
      "[--knobs ID,ID..] [--cpu-time] [--perf-engine E] [--json FILE]\n"
      "Per-layer speedup of every convolution knob over the exact oneDNN\n"
      "convolution (NCHW in/out), at omp_get_max_threads() threads.\n"
      "--cpu-time: process CPU time instead of wall time (use with\n"
      "OMP_NUM_THREADS=1 on a loaded machine). --perf-engine auto|dnnl|\n"
      "dnnl-generic|gemm: force the perforation engine (default auto).\n");
}

} // namespace

int main(int argc, char** argv) {
  int64_t batch = 64;
  int reps = 5;
  std::string net, jsonPath;
  std::vector<int> only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "knob_speedups: %s needs a value\n", a.c_str());
        std::exit(1);
      }
      return argv[++i];
    };
    if (a == "--batch")
      batch = std::atoll(next().c_str());
    else if (a == "--reps")
      reps = std::atoi(next().c_str());
    else if (a == "--net")
      net = next();
    else if (a == "--perf-engine") {
      const std::string v = next();
      if (v == "dnnl")
        approx::setPerforationPath(approx::PerforationPath::DnnlFused);
      else if (v == "dnnl-generic")
        approx::setPerforationPath(approx::PerforationPath::DnnlGeneric);
      else if (v == "gemm")
        approx::setPerforationPath(approx::PerforationPath::Gemm);
      else if (v != "auto") {
        std::fprintf(stderr, "knob_speedups: bad --perf-engine '%s'\n",
                     v.c_str());
        return 1;
      }
    } else if (a == "--cpu-time")
      useCpuTime = true;
    else if (a == "--json")
      jsonPath = next();
    else if (a == "--knobs") {
      const std::string v = next();
      size_t p = 0;
      while (p < v.size()) {
        only.push_back(std::atoi(v.c_str() + p));
        p = v.find(',', p);
        p = p == std::string::npos ? v.size() : p + 1;
      }
    } else if (a == "--help" || a == "-h") {
      usage();
      return 0;
    } else {
      std::fprintf(stderr, "knob_speedups: unknown option '%s'\n", a.c_str());
      usage();
      return 1;
    }
  }
  if (batch <= 0 || reps <= 0) {
    std::fprintf(stderr, "knob_speedups: --batch and --reps must be > 0\n");
    return 1;
  }
  std::vector<KnobInfo> knobs;
  for (const KnobInfo& k : convKnobs())
    if (only.empty() || std::count(only.begin(), only.end(), k.id))
      knobs.push_back(k);

  std::printf("threads %d, batch %lld, best of %d runs (%s time); speedup = "
              "exact NCHW time / knob time\n",
              omp_get_max_threads(), static_cast<long long>(batch), reps,
              useCpuTime ? "CPU" : "wall");
  std::vector<LayerResult> results;
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (const Layer& l : layers()) {
    if (!net.empty() && net != l.net)
      continue;
    const int64_t ho = 1 + (l.h + 2 * l.pad - l.kh) / l.stride;
    std::vector<float> x(batch * l.c * l.h * l.h), w(l.k * l.c * l.kh * l.kh);
    for (float& v : x)
      v = dist(gen);
    for (float& v : w)
      v = dist(gen);
    std::vector<float> y(batch * l.k * ho * ho);
    std::vector<float> xr(x.size()), wr(w.size());
    ExactConv exact(l, batch, w.data());
    LayerResult r{&l, 0, 0, exact.impl(), {}};
    r.exactMs = timeMs([&] { exact.plain(x.data(), y.data()); }, reps);
    r.exactBlkMs = timeMs([&] { exact.blocked(); }, reps);
    const ConvArgs args{static_cast<int>(l.pad), static_cast<int>(l.pad),
                        static_cast<int>(l.stride), static_cast<int>(l.stride),
                        1};
    for (const KnobInfo& k : knobs) {
      const bool half = k.spec.precision == Precision::FP16;
      auto run = [&] {
        const float* xs = x.data();
        const float* ws = w.data();
        if (half) {
          // fp16 numerics: operands and result rounded (as the kernels do).
          std::memcpy(xr.data(), x.data(), x.size() * sizeof(float));
          std::memcpy(wr.data(), w.data(), w.size() * sizeof(float));
          approx::roundToHalf(xr.data(), static_cast<int64_t>(xr.size()));
          approx::roundToHalf(wr.data(), static_cast<int64_t>(wr.size()));
          xs = xr.data();
          ws = wr.data();
        }
        switch (k.spec.variant) {
        case Variant::Exact:
          exact.plain(xs, y.data());
          break;
        case Variant::PerfRow:
        case Variant::PerfCol:
          approx::convPerforated(xs, batch, l.c, l.h, l.h, ws, l.k, l.kh, l.kh,
                                 args, k.spec, y.data());
          break;
        case Variant::Samp:
          approx::convSampled(xs, batch, l.c, l.h, l.h, ws, l.k, l.kh, l.kh,
                              args, k.spec, y.data());
          break;
        }
        if (half)
          approx::roundToHalf(y.data(), static_cast<int64_t>(y.size()));
      };
      r.knobs.push_back({k.id, timeMs(run, reps)});
    }
    results.push_back(std::move(r));
    const LayerResult& lr = results.back();
    std::printf("\n%s %s: exact %.2f ms (kernel-layout %.2f ms, %s)\n", l.net,
                l.name, lr.exactMs, lr.exactBlkMs, lr.impl.c_str());
    std::string line;
    for (size_t i = 0; i < knobs.size(); ++i) {
      char cell[48];
      std::snprintf(cell, sizeof cell, "  %3d %-9s %5.2fx", knobs[i].id,
                    knobs[i].confName, lr.exactMs / lr.knobs[i].ms);
      line += cell;
      if (i % 4 == 3 || i + 1 == knobs.size()) {
        std::printf("%s\n", line.c_str());
        line.clear();
      }
    }
    std::fflush(stdout);
  }

  if (!jsonPath.empty()) {
    const std::string tmp = jsonPath + ".tmp";
    std::ofstream f(tmp);
    f << "{\"threads\": " << omp_get_max_threads() << ", \"batch\": " << batch
      << ", \"reps\": " << reps << ", \"clock\": \""
      << (useCpuTime ? "cpu" : "wall") << "\", \"layers\": [";
    for (size_t i = 0; i < results.size(); ++i) {
      const LayerResult& r = results[i];
      const Layer& l = *r.layer;
      f << (i ? ",\n" : "\n") << "  {\"net\": \"" << l.net
        << "\", \"layer\": \"" << l.name << "\", \"c\": " << l.c
        << ", \"hw\": " << l.h << ", \"k\": " << l.k << ", \"kernel\": " << l.kh
        << ", \"stride\": " << l.stride << ", \"pad\": " << l.pad
        << ", \"exact_ms\": " << r.exactMs
        << ", \"exact_kernel_layout_ms\": " << r.exactBlkMs
        << ", \"exact_impl\": \"" << r.impl << "\", \"knobs\": {";
      for (size_t j = 0; j < r.knobs.size(); ++j)
        f << (j ? ", " : "") << "\"" << r.knobs[j].id
          << "\": {\"ms\": " << r.knobs[j].ms
          << ", \"speedup\": " << r.exactMs / r.knobs[j].ms << "}";
      f << "}}";
    }
    f << "\n]}\n";
    f.close();
    if (!f || std::rename(tmp.c_str(), jsonPath.c_str()) != 0) {
      std::fprintf(stderr, "knob_speedups: cannot write %s\n",
                   jsonPath.c_str());
      return 1;
    }
    std::printf("\nwrote %s\n", jsonPath.c_str());
  }
  return 0;
}
