// knob_speedups.cpp - per-layer speedup of every convolution knob of
// Ops.def over the exact fp32 convolution, through the real layer kernel
// hpvm::rt::runConv, on the convolutions of VGG16-CIFAR10 and
// ResNet-18-CIFAR10 (reference section 9). Prints one row per layer, one
// column per knob family, and optionally writes every (layer, knob) median
// as JSON. Built against the hpvm_rt library and run by knob_speedups.sh.
//
// The knobs are every row of Ops.def that applies to a convolution
// (allKnobs() filtered by knobAppliesTo(k, HpvmOp::Conv)): fp32, fp16,
// bf16, int8 (static: its range is the input's real min/max), int8_dyn,
// perforation and sampling in every precision, and whatever rows are added
// later. Families group knobs by configuration name and rate ("perf r2":
// rows and columns, every offset); a family's cell is its best knob.
//
// The layer context is a generated program's: bias and ReLU fused as
// post-ops; the input, nonnegative, written by the previous layer (an
// exact 1x1 convolution with ReLU, so in the layout exact layers leave)
// and made new again before every call by an in-place ReLU, so no call
// reuses a layout conversion or rounding cached on it by the one before;
// the first layers of the nets (3 channels) take an NCHW host image
// instead. Each precision has its own copy of the weights (a network layer
// has one knob, so its derived-weights cache always hits). Timing:
// every knob once untimed (primitive creation, weight reorders), then
// --reps rounds of the exact knob followed by every knob, interleaved;
// the medians are reported.
#include "hpvm_rt/OpTable.h"
#include "approx/ConvGeometry.h"
#include "kernels/Kernels.h"
#include "tensor.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
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

/// A layer is compute-bound when it does at least this many FLOPs per byte
/// it must move (fp32 input, weights, bias and output, once each).
constexpr double kComputeBound = 50.0;

/// Wall-clock time, or the process's CPU time (--cpu-time: summed over
/// threads, meaningful with one thread on a loaded machine), in ms.
bool useCpuTime = false;
double nowMs() {
  timespec ts;
  clock_gettime(useCpuTime ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/// An NCHW tensor owned by the benchmark, storage managed by the kernels.
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
  /// A copy of the values of `from` (same dims) as new host data.
  void copyFrom(Tensor* from) {
    ensureHost(from);
    allocHost(&t_);
    std::memcpy(t_.host_data, from->host_data, t_.num_elems * sizeof(float));
    hostModified(&t_);
  }
  /// Smallest and largest value.
  std::pair<float, float> range() {
    ensureHost(&t_);
    const float* p = static_cast<const float*>(t_.host_data);
    const auto [lo, hi] = std::minmax_element(p, p + t_.num_elems);
    return {*lo, *hi};
  }

private:
  std::vector<size_t> dims_;
  Tensor t_;
};

/// Knobs of one configuration name and rate ("perf r2": rows and columns,
/// every offset; "int8": one knob).
struct Family {
  std::string conf; ///< Configuration name, the column group.
  int rate = 1;
  std::vector<size_t> knobs; ///< Indices into the measured knob list.
  std::string name() const {
    return rate > 1 ? conf + " r" + std::to_string(rate) : conf;
  }
};

/// The families of `knobs`: exact-algorithm families (one per precision)
/// first, then the perforation/sampling ones, each in Ops.def order.
std::vector<Family> familiesOf(const std::vector<KnobInfo>& knobs) {
  std::vector<Family> out;
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < knobs.size(); ++i) {
      const KnobInfo& k = knobs[i];
      if ((k.spec.rate > 1) != (pass == 1))
        continue;
      auto it = std::find_if(out.begin(), out.end(), [&](const Family& f) {
        return f.conf == k.confName && f.rate == k.spec.rate;
      });
      if (it == out.end()) {
        out.push_back(Family{k.confName, k.spec.rate, {}});
        it = out.end() - 1;
      }
      it->knobs.push_back(i);
    }
  // Keep the rates of one configuration name together, where its first
  // family is.
  std::map<std::string, size_t> first;
  for (size_t i = 0; i < out.size(); ++i)
    first.emplace(out[i].conf, i);
  std::stable_sort(out.begin(), out.end(),
                   [&](const Family& a, const Family& b) {
                     return first.at(a.conf) < first.at(b.conf);
                   });
  return out;
}

double median(std::vector<double> v) {
  if (v.empty())
    return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Timing of one knob on one layer.
struct KnobResult {
  std::vector<double> ms; ///< One per rep.
  double medianMs = NAN, minMs = NAN;
  std::string error; ///< Set when the knob failed (no times then).
};

struct LayerResult {
  const Layer* layer;
  int64_t ho;
  double flops, bytes;
  KnobResult exact;
  std::vector<KnobResult> knobs; ///< Parallel to the knob list.
  bool computeBound() const { return flops / bytes >= kComputeBound; }
  double speedup(size_t i) const {
    return exact.medianMs / knobs[i].medianMs; // NaN when either failed.
  }
  /// A family's speedup: its best knob's (NaN if all failed).
  double familySpeedup(const Family& f) const {
    double best = NAN;
    for (size_t i : f.knobs)
      if (!std::isnan(speedup(i)) && !(speedup(i) <= best))
        best = speedup(i);
    return best;
  }
};

std::string shortNet(const std::string& net) {
  if (net.rfind("vgg16", 0) == 0)
    return "vgg16";
  if (net.rfind("resnet18", 0) == 0)
    return "res18";
  return net;
}

/// "vgg16 conv2" (the first word of the layer's name).
std::string layerLabel(const Layer& l) {
  const std::string name = l.name;
  return shortNet(l.net) + " " + name.substr(0, name.find(' '));
}

/// True when `filter` is the layer's name (its first word: "conv1" is not
/// "conv11"), or, when it names no layer, a substring of its description.
bool layerMatches(const Layer& l, const std::string& filter) {
  auto nameOf = [](const Layer& x) {
    const std::string n = x.name;
    return n.substr(0, n.find(' '));
  };
  if (nameOf(l) == filter)
    return true;
  for (const Layer& x : layers())
    if (nameOf(x) == filter)
      return false;
  return std::string(l.name).find(filter) != std::string::npos;
}

/// "64x32x32>64 3x3/1": input C x H x W, output channels, filter / stride.
std::string shapeLabel(const Layer& l) {
  char s[64];
  std::snprintf(s, sizeof s, "%lldx%lldx%lld>%lld %lldx%lld/%lld",
                static_cast<long long>(l.c), static_cast<long long>(l.h),
                static_cast<long long>(l.h), static_cast<long long>(l.k),
                static_cast<long long>(l.kh), static_cast<long long>(l.kh),
                static_cast<long long>(l.stride));
  return s;
}

/// The table: layer, shape, FLOPs per byte, exact ms, then one column per
/// family, the families of one configuration name under one heading.
class Table {
public:
  explicit Table(const std::vector<Family>& fams) : fams_(fams) {
    width_.assign(fams.size(), 6);
    for (size_t i = 0; i < fams.size();) {
      size_t j = i, total = 0;
      while (j < fams.size() && fams[j].conf == fams[i].conf)
        total += width_[j++];
      if (fams[i].conf.size() + 1 > total)
        width_[j - 1] += fams[i].conf.size() + 1 - total;
      i = j;
    }
  }
  void header() const {
    std::string l1 = pad("", kLead), l2 = pad("layer", 14) + pad("shape", 19) +
                                          pad("F/B", 5, true) +
                                          pad("exact ms", 10, true);
    for (size_t i = 0; i < fams_.size();) {
      size_t j = i, total = 0;
      std::string rates;
      while (j < fams_.size() && fams_[j].conf == fams_[i].conf) {
        rates += pad(fams_[j].rate > 1 ? "r" + std::to_string(fams_[j].rate)
                                       : std::string(),
                     width_[j], true);
        total += width_[j++];
      }
      l1 += "  " + pad(fams_[i].conf, total, true);
      l2 += "  " + rates;
      i = j;
    }
    std::printf("%s\n%s\n", l1.c_str(), l2.c_str());
  }
  /// One row: `lead` is layer + shape + F/B + exact ms (kLead wide).
  void row(const std::string& lead, const std::vector<double>& cells) const {
    std::string s = pad(lead, kLead);
    for (size_t i = 0; i < fams_.size(); ++i) {
      if (i == 0 || fams_[i].conf != fams_[i - 1].conf)
        s += "  ";
      char c[32];
      if (std::isnan(cells[i]))
        std::snprintf(c, sizeof c, "%s", "fail");
      else
        std::snprintf(c, sizeof c, "%.2f", cells[i]);
      s += pad(c, width_[i], true);
    }
    std::printf("%s\n", s.c_str());
  }
  static constexpr size_t kLead = 14 + 19 + 5 + 10;

private:
  static std::string pad(const std::string& s, size_t w, bool right = false) {
    if (s.size() >= w)
      return right ? " " + s : s + " ";
    return right ? std::string(w - s.size(), ' ') + s
                 : s + std::string(w - s.size(), ' ');
  }
  const std::vector<Family>& fams_;
  std::vector<size_t> width_;
};

/// Geometric mean of the finite values among `v` (NaN if none).
double geomean(const std::vector<double>& v) {
  double logSum = 0;
  int n = 0;
  for (double x : v)
    if (std::isfinite(x) && x > 0) {
      logSum += std::log(x);
      ++n;
    }
  return n ? std::exp(logSum / n) : NAN;
}

/// Measures one layer: exact knob 11 and every knob of `knobs`.
LayerResult measure(const Layer& l, int64_t batch, int reps,
                    const std::vector<KnobInfo>& knobs) {
  const int64_t ho = 1 + (l.h + 2 * l.pad - l.kh) / l.stride;
  const size_t n = static_cast<size_t>(batch), c = l.c, h = l.h, k = l.k,
               kh = l.kh, hos = static_cast<size_t>(ho);
  LayerResult r{&l, ho, 0, 0, {}, std::vector<KnobResult>(knobs.size())};
  r.flops = 2.0 * batch * l.k * ho * ho * l.c * l.kh * l.kh;
  r.bytes = 4.0 * (static_cast<double>(batch) * l.c * l.h * l.h +
                   l.k * l.c * l.kh * l.kh + l.k +
                   static_cast<double>(batch) * l.k * ho * ho);

  // The input: an image on the host (first layers), else the ReLU output
  // of an exact convolution, in the layout it leaves.
  const bool image = l.c == 3;
  BenchTensor x({n, c, h, h});
  if (image) {
    x.fill(1, -2.f, 2.f); // A normalised image: signed.
  } else {
    BenchTensor x0({n, c, h, h}), w0({c, c, 1, 1}), b0({1, c, 1, 1});
    x0.fill(1, -1.f, 1.f);
    const float s0 = std::sqrt(3.f / static_cast<float>(c));
    w0.fill(2, -s0, s0);
    b0.fill(3, -0.1f, 0.1f);
    PostOps p0;
    p0.bias = b0.get();
    p0.act = Act::Relu;
    runConv(x0.get(), w0.get(), ConvArgs{}, p0, KnobSpec{}, x.get());
  }
  auto refresh = [&] {
    if (image)
      hostModified(x.get());
    else // New values (the same ones) in place, in the current layout.
      runAct(x.get(), Act::Relu, 0.f, 0.f, KnobSpec{}, x.get());
  };
  const auto [inLo, inHi] = x.range();

  // Weights (He-like scale), one copy per precision; bias; output.
  BenchTensor w({k, c, kh, kh}), b({1, k, 1, 1}), y({n, k, hos, hos});
  const float sw = std::sqrt(6.f / static_cast<float>(c * kh * kh));
  w.fill(4, -sw, sw);
  b.fill(5, -0.1f, 0.1f);
  std::map<Precision, std::unique_ptr<BenchTensor>> weights;
  auto weightsFor = [&](Precision p) {
    auto& wp = weights[p];
    if (!wp) {
      wp = std::make_unique<BenchTensor>(std::vector<size_t>{k, c, kh, kh});
      wp->copyFrom(w.get());
    }
    return wp->get();
  };
  ConvArgs args;
  args.padH = args.padW = static_cast<int>(l.pad);
  args.strideH = args.strideW = static_cast<int>(l.stride);
  PostOps post;
  post.bias = b.get();
  post.act = Act::Relu;

  std::vector<KnobSpec> specs;
  for (const KnobInfo& ki : knobs) {
    KnobSpec s = ki.spec;
    if (s.precision == Precision::INT8) {
      s.hasRange = true;
      s.inLo = inLo;
      s.inHi = inHi;
    }
    specs.push_back(s);
  }
  const KnobSpec exactSpec = knobById(kKnobFp32)->spec;

  // One call, its time kept in kr when `keep`; a knob whose kernel throws
  // keeps the error and is not called again.
  auto timed = [&](const KnobSpec& s, KnobResult& kr, bool keep) {
    if (!kr.error.empty())
      return;
    Tensor* wt = weightsFor(s.precision);
    refresh();
    try {
      const double t0 = nowMs();
      runConv(x.get(), wt, args, post, s, y.get());
      const double t = nowMs() - t0;
      if (keep)
        kr.ms.push_back(t);
    } catch (const std::exception& e) {
      kr.error = e.what()[0] ? e.what() : "exception";
    }
  };
  timed(exactSpec, r.exact, false);
  for (size_t i = 0; i < specs.size(); ++i)
    timed(specs[i], r.knobs[i], false);
  for (int rep = 0; rep < reps; ++rep) {
    timed(exactSpec, r.exact, true);
    for (size_t i = 0; i < specs.size(); ++i)
      timed(specs[i], r.knobs[i], true);
  }
  auto finish = [](KnobResult& kr) {
    if (!kr.error.empty()) {
      kr.ms.clear();
      return;
    }
    kr.medianMs = median(kr.ms);
    kr.minMs = *std::min_element(kr.ms.begin(), kr.ms.end());
  };
  finish(r.exact);
  for (KnobResult& kr : r.knobs)
    finish(kr);
  return r;
}

/// JSON string literal of s.
std::string jsonStr(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\')
      out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20)
      out += ' ';
    else
      out += ch;
  }
  return out + "\"";
}

const char* variantLabel(Variant v) {
  switch (v) {
  case Variant::Exact:
    return "exact";
  case Variant::PerfRow:
    return "perf_row";
  case Variant::PerfCol:
    return "perf_col";
  case Variant::Samp:
    return "samp";
  }
  return "?";
}

const char* precisionLabel(Precision p) {
  switch (p) {
  case Precision::FP32:
    return "fp32";
  case Precision::FP16:
    return "fp16";
  case Precision::BF16:
    return "bf16";
  case Precision::INT8:
    return "int8";
  case Precision::INT8DYN:
    return "int8_dyn";
  }
  return "?";
}

/// The 1-minute load average (NaN if unknown): other processes' work
/// skews the times, most with as many threads as CPUs.
double loadAverage() {
  double load = NAN;
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1)
      load = NAN;
    std::fclose(f);
  }
  return load;
}

/// CPU time spent by all processes (from /proc/stat) and by this one, in
/// seconds, and the wall clock: two samples give how many CPUs other
/// processes kept busy in between.
struct CpuSample {
  double allBusy = NAN, own = 0, wall = 0;
  static CpuSample now() {
    CpuSample c;
    if (std::FILE* f = std::fopen("/proc/stat", "r")) {
      unsigned long long v[8] = {};
      if (std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
                      &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8)
        // user nice system idle iowait irq softirq steal: all but idle and
        // iowait.
        c.allBusy =
            static_cast<double>(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) /
            static_cast<double>(sysconf(_SC_CLK_TCK));
      std::fclose(f);
    }
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    c.own = ts.tv_sec + ts.tv_nsec * 1e-9;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    c.wall = ts.tv_sec + ts.tv_nsec * 1e-9;
    return c;
  }
  /// CPUs other processes used on average since `start` (NaN if unknown).
  double othersSince(const CpuSample& start) const {
    const double wallDelta = wall - start.wall;
    if (!(wallDelta > 0))
      return NAN;
    return std::max(0.0,
                    (allBusy - start.allBusy - (own - start.own)) / wallDelta);
  }
};

/// A number, or null when it is not finite.
std::string jsonNum(double v) {
  if (!std::isfinite(v))
    return "null";
  std::ostringstream s;
  s.precision(8);
  s << v;
  return s.str();
}

bool writeJson(const std::string& path, int64_t batch, int reps,
               double loadStart, double others,
               const std::vector<KnobInfo>& knobs,
               const std::vector<Family>& fams,
               const std::vector<LayerResult>& results,
               const std::vector<double>& geoBound,
               const std::vector<double>& geoAll) {
  const std::string tmp = path + ".tmp";
  std::ofstream f(tmp);
  f << "{\"threads\": " << numThreads() << ", \"batch\": " << batch
    << ", \"reps\": " << reps << ", \"clock\": \""
    << (useCpuTime ? "cpu" : "wall") << "\", \"statistic\": \"median\""
    << ", \"baseline_knob\": 11, \"loadavg_start\": " << jsonNum(loadStart)
    << ", \"other_processes_cpus\": " << jsonNum(others)
    << ", \"compute_bound_flops_per_byte\": " << kComputeBound
    << ",\n \"layers\": [";
  for (size_t i = 0; i < results.size(); ++i) {
    const LayerResult& r = results[i];
    const Layer& l = *r.layer;
    f << (i ? ",\n" : "\n") << "  {\"net\": " << jsonStr(l.net)
      << ", \"layer\": " << jsonStr(l.name) << ", \"c\": " << l.c
      << ", \"hw\": " << l.h << ", \"k\": " << l.k << ", \"kernel\": " << l.kh
      << ", \"stride\": " << l.stride << ", \"pad\": " << l.pad
      << ", \"out_hw\": " << r.ho << ", \"flops\": " << jsonNum(r.flops)
      << ", \"bytes\": " << jsonNum(r.bytes)
      << ", \"flops_per_byte\": " << jsonNum(r.flops / r.bytes)
      << ", \"compute_bound\": " << (r.computeBound() ? "true" : "false")
      << ", \"exact_ms\": " << jsonNum(r.exact.medianMs)
      << ", \"exact_min_ms\": " << jsonNum(r.exact.minMs)
      << ",\n   \"knobs\": {";
    for (size_t j = 0; j < knobs.size(); ++j) {
      const KnobResult& kr = r.knobs[j];
      f << (j ? ",\n    " : "\n    ") << "\"" << knobs[j].id
        << "\": {\"conf\": " << jsonStr(knobs[j].confName)
        << ", \"variant\": \"" << variantLabel(knobs[j].spec.variant)
        << "\", \"precision\": \"" << precisionLabel(knobs[j].spec.precision)
        << "\", \"rate\": " << knobs[j].spec.rate
        << ", \"offset\": " << knobs[j].spec.offset
        << ", \"ms\": " << jsonNum(kr.medianMs)
        << ", \"min_ms\": " << jsonNum(kr.minMs)
        << ", \"speedup\": " << jsonNum(r.speedup(j));
      if (!kr.error.empty())
        f << ", \"error\": " << jsonStr(kr.error);
      f << "}";
    }
    f << "}}";
  }
  f << "\n ],\n \"families\": [";
  for (size_t i = 0; i < fams.size(); ++i) {
    f << (i ? ",\n" : "\n") << "  {\"family\": " << jsonStr(fams[i].name())
      << ", \"knobs\": [";
    for (size_t j = 0; j < fams[i].knobs.size(); ++j)
      f << (j ? ", " : "") << knobs[fams[i].knobs[j]].id;
    f << "], \"geomean_speedup_compute_bound\": " << jsonNum(geoBound[i])
      << ", \"geomean_speedup_all\": " << jsonNum(geoAll[i]) << "}";
  }
  f << "\n ],\n \"compute_bound_layers\": [";
  bool first = true;
  for (const LayerResult& r : results)
    if (r.computeBound()) {
      f << (first ? "" : ", ") << jsonStr(layerLabel(*r.layer));
      first = false;
    }
  f << "]}\n";
  f.close();
  return f && std::rename(tmp.c_str(), path.c_str()) == 0;
}

void usage(std::FILE* to) {
  std::fprintf(
      to,
      "usage: knob_speedups [--batch N] [--reps N] [--net NAME]\n"
      "         [--layer L] [--knobs ID,ID..] [--threads N]\n"
      "         [--cpu-time] [--perf-engine E] [--json FILE]\n"
      "Per-layer speedup of every convolution knob of Ops.def over the\n"
      "exact fp32 knob 11, both through runConv (bias + ReLU fused, input\n"
      "as the previous exact layer leaves it): medians of --reps (default\n"
      "5) interleaved rounds after one untimed call of each knob.\n"
      "  --batch N         images per call (default 64)\n"
      "  --net NAME        vgg16_cifar10 or resnet18_cifar10 (default both)\n"
      "  --layer L         only the layers named L (conv1, s2sc), or else\n"
      "                    whose description contains L (\"512-512\")\n"
      "  --knobs IDS       only these knob ids (11 is always the baseline)\n"
      "  --threads N       kernel threads (default: OMP_NUM_THREADS or all)\n"
      "  --cpu-time        process CPU time instead of wall time\n"
      "  --perf-engine E   auto|dnnl|dnnl-generic|gemm: force the\n"
      "                    perforation engine (default auto)\n"
      "  --json FILE       every (layer, knob) median ms, families, summary\n");
}

int64_t positive(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || n <= 0) {
    std::fprintf(stderr,
                 "knob_speedups: %s needs a positive integer, got "
                 "'%s'\n",
                 flag.c_str(), v.c_str());
    std::exit(2);
  }
  return n;
}

} // namespace

int main(int argc, char** argv) {
  int64_t batch = 64;
  int reps = 5, threads = 0;
  std::string net, layerFilter, jsonPath;
  std::vector<int> only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "knob_speedups: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--batch")
      batch = positive(a, next());
    else if (a == "--reps")
      reps = static_cast<int>(positive(a, next()));
    else if (a == "--threads")
      threads = static_cast<int>(positive(a, next()));
    else if (a == "--net")
      net = next();
    else if (a == "--layer")
      layerFilter = next();
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
        return 2;
      }
    } else if (a == "--cpu-time")
      useCpuTime = true;
    else if (a == "--json")
      jsonPath = next();
    else if (a == "--knobs") {
      std::stringstream ss(next());
      std::string id;
      while (std::getline(ss, id, ','))
        only.push_back(static_cast<int>(positive("--knobs", id)));
    } else if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "knob_speedups: unknown option '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (!net.empty() &&
      std::none_of(layers().begin(), layers().end(),
                   [&](const Layer& l) { return net == l.net; })) {
    std::fprintf(stderr, "knob_speedups: unknown --net '%s'\n", net.c_str());
    return 2;
  }
  for (int id : only) {
    const KnobInfo* k = knobById(id);
    if (!k || !knobAppliesTo(*k, HpvmOp::Conv)) {
      std::fprintf(stderr,
                   "knob_speedups: %d is not a convolution knob of "
                   "Ops.def\n",
                   id);
      return 2;
    }
  }
  if (threads > 0)
    setNumThreads(threads);

  std::vector<KnobInfo> knobs;
  for (const KnobInfo& k : allKnobs())
    if (knobAppliesTo(k, HpvmOp::Conv) &&
        (only.empty() || std::count(only.begin(), only.end(), k.id)))
      knobs.push_back(k);
  const std::vector<Family> fams = familiesOf(knobs);

  const double loadStart = loadAverage();
  const CpuSample cpuStart = CpuSample::now();
  std::printf(
      "knob_speedups: %d threads, batch %lld, median of %d interleaved "
      "reps (%s time), %zu knobs, load average %.2f on %d CPUs\n"
      "cell = exact median / knob median, both runConv with bias+ReLU; a "
      "family of several knobs\n(offsets, rows/columns) shows its best. "
      "F/B: FLOPs per byte moved, * compute-bound (>= %.0f).\nfp32: the "
      "exact knob timed a second time in each rep (its spread around 1.00 "
      "is the noise).\n\n",
      numThreads(), static_cast<long long>(batch), reps,
      useCpuTime ? "CPU" : "wall", knobs.size(), loadStart, omp_get_num_procs(),
      kComputeBound);
  const Table table(fams);
  table.header();
  std::fflush(stdout);

  std::vector<LayerResult> results;
  std::vector<std::string> errors;
  for (const Layer& l : layers()) {
    if (!net.empty() && net != l.net)
      continue;
    if (!layerFilter.empty() && !layerMatches(l, layerFilter))
      continue;
    results.push_back(measure(l, batch, reps, knobs));
    const LayerResult& r = results.back();
    if (!r.exact.error.empty()) {
      std::fprintf(stderr, "knob_speedups: %s: exact convolution failed: %s\n",
                   layerLabel(l).c_str(), r.exact.error.c_str());
      return 1;
    }
    for (size_t i = 0; i < knobs.size(); ++i)
      if (!r.knobs[i].error.empty())
        errors.push_back(layerLabel(l) + ": knob " +
                         std::to_string(knobs[i].id) + ": " + r.knobs[i].error);
    char lead[128];
    std::snprintf(lead, sizeof lead, "%-13s %-18s %4.0f%s %9.3f",
                  layerLabel(l).c_str(), shapeLabel(l).c_str(),
                  r.flops / r.bytes, r.computeBound() ? "*" : " ",
                  r.exact.medianMs);
    std::vector<double> cells;
    for (const Family& f : fams)
      cells.push_back(r.familySpeedup(f));
    table.row(lead, cells);
    std::fflush(stdout);
  }

  // Geometric means of the family speedups, over the compute-bound layers
  // and over all layers.
  std::vector<double> geoBound, geoAll;
  std::string boundNames;
  for (const LayerResult& r : results)
    if (r.computeBound())
      boundNames += (boundNames.empty() ? "" : ", ") + layerLabel(*r.layer);
  for (const Family& f : fams) {
    std::vector<double> bound, all;
    for (const LayerResult& r : results) {
      all.push_back(r.familySpeedup(f));
      if (r.computeBound())
        bound.push_back(r.familySpeedup(f));
    }
    geoBound.push_back(geomean(bound));
    geoAll.push_back(geomean(all));
  }
  std::printf("\n");
  table.row("geomean, compute-bound layers", geoBound);
  table.row("geomean, all layers", geoAll);
  std::printf("\ncompute-bound (>= %.0f FLOPs/byte): %s\n", kComputeBound,
              boundNames.empty() ? "none" : boundNames.c_str());
  std::string summary;
  for (size_t i = 0; i < fams.size(); ++i) {
    char cell[64];
    std::snprintf(cell, sizeof cell, "%s%s %.2f", i ? ", " : "",
                  fams[i].name().c_str(), geoBound[i]);
    summary += cell;
  }
  std::printf("geomean speedup over compute-bound layers: %s\n",
              summary.c_str());
  for (const std::string& e : errors)
    std::printf("failed: %s\n", e.c_str());
  const double others = CpuSample::now().othersSince(cpuStart);
  std::printf("other processes kept %.2f of %d CPUs busy on average during "
              "the run%s\n",
              others, omp_get_num_procs(),
              others > 0.2 ? ": the times are skewed (with several threads, "
                             "kernels with many parallel regions most)"
                           : "");

  if (!jsonPath.empty()) {
    if (!writeJson(jsonPath, batch, reps, loadStart, others, knobs, fams,
                   results, geoBound, geoAll)) {
      std::fprintf(stderr, "knob_speedups: cannot write %s\n",
                   jsonPath.c_str());
      return 1;
    }
    std::printf("wrote %s\n", jsonPath.c_str());
  }
  return 0;
}
