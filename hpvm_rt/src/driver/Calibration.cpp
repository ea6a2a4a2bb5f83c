// Calibration.cpp - int8 calibration files and measurements (Calibration.h).
#include "driver/Calibration.h"

#include "base/Errors.h"
#include "base/FileUtil.h"
#include "command/Progress.h"
#include "driver/Options.h"
#include "kernels/Kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

namespace hpvm::rt {

namespace {

constexpr const char* kMagic = "torch2hpvm-int8-calibration";
constexpr int kVersion = 1;
/// Calibration files are a line per node: anything larger is not one.
constexpr uint64_t kMaxFileBytes = uint64_t(16) << 20;

/// \p text for a message: control bytes escaped, cut after 40 characters.
std::string shown(std::string_view text) {
  std::string out;
  for (char ch : text.substr(0, 40)) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f || c == '\\')
      out += fmt::format("\\x{:02x}", c);
    else
      out += ch;
  }
  if (text.size() > 40)
    out += "...";
  return out;
}

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ' || line[i] == '\t') {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t')
      ++i;
    out.push_back(line.substr(start, i - start));
  }
  return out;
}

template <class T> bool parseWord(std::string_view s, T& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

/// The shortest decimal text that reads back as exactly \p v.
std::string exactFloat(float v) {
  for (int digits = 1; digits <= 9; ++digits) {
    std::string s = fmt::format("{:.{}g}", v, digits);
    if (std::strtof(s.c_str(), nullptr) == v)
      return s;
  }
  return fmt::format("{:.9g}", v);
}

} // namespace

Int8Calibration readCalibration(const std::string& path) {
  return parseCalibrationText(
      readRegularFile(path, "int8 calibration", kMaxFileBytes), path);
}

Int8Calibration parseCalibrationText(std::string_view text,
                                     const std::string& path) {
  Int8Calibration cal;
  cal.path = path;
  auto fail = [&](int line, const std::string& what) -> void {
    throw UserError(path, line, 0, what);
  };
  size_t pos = 0;
  int number = 0;
  bool sawHeader = false;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos)
      end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++number;
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    std::vector<std::string_view> w = words(line);
    if (w.empty() || w[0][0] == '#')
      continue;
    if (!sawHeader) {
      int version = 0;
      if (w.size() != 2 || w[0] != kMagic || !parseWord(w[1], version))
        fail(number, fmt::format("not an int8 calibration (expected '{} {}' "
                                 "first, found '{}')",
                                 kMagic, kVersion, shown(line)));
      if (version != kVersion)
        fail(number, fmt::format("calibration version {} (this program reads "
                                 "version {})",
                                 version, kVersion));
      sawHeader = true;
      continue;
    }
    const std::string_view key = w[0];
    if (key == "model" && w.size() == 2) {
      cal.model = std::string(w[1]);
    } else if (key == "method" && w.size() >= 2) {
      cal.method = std::string(line.substr(line.find(w[1])));
    } else if (key == "images" && w.size() == 2 &&
               parseWord(w[1], cal.images) && cal.images > 0) {
    } else if (key == "node") {
      Int8Range r;
      r.line = number;
      const OpInfo* op = w.size() == 5 ? opByConfName(w[2]) : nullptr;
      if (w.size() != 5 || !parseWord(w[1], r.ordinal) || r.ordinal < 1 ||
          !op || !parseWord(w[3], r.lo) || !parseWord(w[4], r.hi))
        fail(number, fmt::format("expected 'node ORDINAL OP LO HI', found "
                                 "'{}'",
                                 shown(line)));
      if (!std::isfinite(r.lo) || !std::isfinite(r.hi) || r.lo > r.hi)
        fail(number, fmt::format("node {}: range [{}, {}] is not a finite "
                                 "interval",
                                 r.ordinal, shown(w[3]), shown(w[4])));
      if (!hasInt8Knob(op->op))
        fail(number, fmt::format("node {}: {} has no int8 knob (conv, "
                                 "group_conv, dilated_conv and mul have)",
                                 r.ordinal, op->confName));
      for (const Int8Range& other : cal.nodes)
        if (other.ordinal == r.ordinal)
          fail(number, fmt::format("node {} listed twice (first on line {})",
                                   r.ordinal, other.line));
      r.op = op->op;
      cal.nodes.push_back(r);
    } else {
      fail(number, fmt::format("unexpected line '{}' (expected model, "
                               "method, images or node lines)",
                               shown(line)));
    }
  }
  if (!sawHeader)
    throw UserError(path + ": not an int8 calibration (the file is empty)");
  if (cal.nodes.empty())
    throw UserError(path + ": int8 calibration lists no nodes");
  return cal;
}

std::string calibrationText(const Int8Calibration& cal) {
  std::string out = fmt::format("{} {}\n", kMagic, kVersion);
  out += "# Input ranges of the int8-capable nodes, measured on exact fp32 "
         "runs;\n# lo >= 0: unsigned 8-bit input, else signed.\n";
  out += fmt::format("model {}\nmethod {}\nimages {}\n", cal.model, cal.method,
                     cal.images);
  for (const Int8Range& r : cal.nodes)
    out += fmt::format("node {} {} {} {}\n", r.ordinal, opInfo(r.op).confName,
                       exactFloat(r.lo), exactFloat(r.hi));
  return out;
}

std::string CalibrationMethod::describe() const {
  return percentile ? fmt::format("percentile {}", percent) : "minmax";
}

CalibrationMethod parseCalibrationMethod(const std::string& text) {
  CalibrationMethod m;
  if (text == "minmax") {
    m.percentile = false;
    return m;
  }
  if (text == "percentile")
    return m;
  const std::string prefix = "percentile:";
  if (text.compare(0, prefix.size(), prefix) == 0) {
    std::string_view p = std::string_view(text).substr(prefix.size());
    if (parseWord(p, m.percent) && m.percent > 0 && m.percent <= 100)
      return m;
  }
  throw UserError(fmt::format("bad value '{}' for --method: expected minmax, "
                              "percentile or percentile:P with 0 < P <= 100",
                              shown(text)));
}

CalibrationRecorder::CalibrationRecorder(CalibrationMethod method)
    : method_(method) {}

void CalibrationRecorder::nextPass() {
  pass_ = 2;
  for (auto& [ordinal, node] : nodes_)
    node.histogram.assign(kBins, 0);
}

void CalibrationRecorder::observe(void* self, int ordinal, HpvmOp op,
                                  const float* data, int64_t n) {
  static_cast<CalibrationRecorder*>(self)->add(ordinal, op, data, n);
}

void CalibrationRecorder::add(int ordinal, HpvmOp op, const float* data,
                              int64_t n) {
  Node& node = nodes_[ordinal];
  node.op = op;
  if (pass_ == 1) {
    extendRange(data, n, node.lo, node.hi);
    return;
  }
  // Pass 2: histogram of the magnitudes over [0, largest magnitude].
  const float top = std::max(std::fabs(node.lo), std::fabs(node.hi));
  if (!(top > 0.f) || node.histogram.empty())
    return;
  const float perBin = kBins / top;
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(data[i]);
    if (!(a <= top)) // NaN
      continue;
    ++node.histogram[std::min<int64_t>(int64_t(a * perBin), kBins - 1)];
  }
  node.count += uint64_t(n);
}

Int8Calibration CalibrationRecorder::result(const std::string& model,
                                            int64_t images) const {
  Int8Calibration cal;
  cal.model = model;
  cal.method = method_.describe();
  cal.images = images;
  for (const auto& [ordinal, node] : nodes_) {
    Int8Range r;
    r.ordinal = ordinal;
    r.op = node.op;
    r.lo = std::isfinite(node.lo) ? node.lo : 0.f;
    r.hi = std::isfinite(node.hi) ? node.hi : 0.f;
    if (method_.percentile && node.count > 0) {
      // The smallest magnitude bound holding the percentile of the values.
      const float top = std::max(std::fabs(r.lo), std::fabs(r.hi));
      const double want = method_.percent / 100.0 * double(node.count);
      uint64_t seen = 0;
      int bin = 0;
      while (bin < kBins - 1 &&
             double(seen + node.histogram[size_t(bin)]) < want)
        seen += node.histogram[size_t(bin++)];
      const float bound = top * float(bin + 1) / kBins;
      r.hi = std::min(r.hi, bound);
      r.lo = r.lo >= 0.f ? r.lo : std::max(r.lo, -bound);
    }
    cal.nodes.push_back(r);
  }
  return cal;
}

Int8Calibration measureCalibration(ProgramRunner& runner,
                                   const CalibrationMethod& method,
                                   int64_t images, bool progress) {
  CalibrationRecorder rec(method);
  const int passes = rec.needsSecondPass() ? 2 : 1;
  ProgressBar bar("calibrate", passes, progress);
  PassRequest req;
  req.images = images;
  req.keepOutputs = false;
  req.observer = &CalibrationRecorder::observe;
  req.observerContext = &rec;
  runner.pass(req);
  bar.update(1);
  if (passes == 2) {
    rec.nextPass();
    runner.pass(req);
    bar.update(2);
  }
  return rec.result(runner.modelName(), images);
}

namespace {

using SV = std::string_view;
const OptionSpec<CalibrateOptions> kCalibrateOptions[] = {
    {"-o", "--output", "FILE",
     "where to write the calibration (default: int8_calibration.txt)",
     [](CalibrateOptions& o, SV, SV v) { o.output = std::string(v); }},
    {nullptr, "--method", "M",
     "minmax, or percentile[:P]: the P-th percentile of the magnitudes "
     "(default: percentile:99.99)",
     [](CalibrateOptions& o, SV, SV v) {
       o.method = parseCalibrationMethod(std::string(v));
     }},
    {nullptr, "--images", "N",
     "tune images to measure (default: 1000 or the whole tune set)",
     [](CalibrateOptions& o, SV n, SV v) { o.images = parseCount(n, v, 1); }},
    {"-b", "--batch-size", "N", "images per batch (default: the model's)",
     [](CalibrateOptions& o, SV n, SV v) {
       o.batchSize = parseCount(n, v, 1);
     }},
    {nullptr, "--threads", "N", "threads for the kernels; 0 = all cores",
     [](CalibrateOptions& o, SV n, SV v) {
       o.threads = int(parseCount(n, v, 0));
     }},
    {nullptr, "--model-dir", "DIR",
     "directory holding weights/ and the dataset files",
     [](CalibrateOptions& o, SV, SV v) { o.modelDir = std::string(v); }},
    {"-q", "--quiet", nullptr, "no progress bar",
     [](CalibrateOptions& o, SV, SV) { o.quiet = true; }},
    {"-h", "--help", nullptr, "print this help and exit",
     [](CalibrateOptions& o, SV, SV) { o.help = true; }},
};

} // namespace

CalibrateOptions parseCalibrateOptions(int argc, const char* const* argv) {
  CalibrateOptions o;
  parseOptionTable(argc, argv, 0, kCalibrateOptions, o, [](SV arg) {
    throw UserError(fmt::format("unexpected argument '{}'", shown(arg)));
  });
  return o;
}

std::string calibrateHelp(const std::string& program) {
  return fmt::format(
             "Usage: {} calibrate [options]\n\n"
             "Measures the input range of every conv, group_conv and mul node "
             "on exact fp32\nruns of the tune set and writes the int8 "
             "calibration that the int8 knob (311)\nneeds. Runs take it with "
             "--calibration FILE; a configuration file's companion\n"
             "<stem>.calib.txt is used when present.\n\nOptions:\n",
             program) +
         optionTableHelp(kCalibrateOptions);
}

int calibrateMode(const CalibrateOptions& opts, ProgramRunner& runner) {
  const int64_t available = runner.setSize("tune");
  if (available <= 0)
    throw UserError("calibrate needs the tune set, and the program has none");
  const int64_t images =
      std::min(opts.images ? *opts.images : int64_t(1000), available);
  Int8Calibration cal =
      measureCalibration(runner, opts.method, images, !opts.quiet);
  writeFileAtomic(opts.output, calibrationText(cal));
  std::printf("%s: int8 calibration of %zu nodes (%s, %lld tune images) "
              "written to %s\n",
              runner.modelName().c_str(), cal.nodes.size(), cal.method.c_str(),
              static_cast<long long>(images), opts.output.c_str());
  return 0;
}

std::string companionCalibration(const std::string& configPath) {
  return stemOf(configPath) + ".calib.txt";
}

} // namespace hpvm::rt
