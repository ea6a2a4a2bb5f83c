// Convert.cpp - stream a Source into HPVM's bin files: transform each
// chunk, route every image to its output file and offset (shuffling is a
// permutation of offsets, so memory stays bounded), then rename the
// temporary files into place.
#include "hpvm_ds/Convert.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <random>
#include <sstream>
#include <unistd.h>

namespace hpvm::ds {

namespace {

namespace fs = std::filesystem;

bool parseFloat(const std::string& s, float& v) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])))
    return false;
  char* end = nullptr;
  errno = 0;
  double d = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(d))
    return false;
  v = static_cast<float>(d);
  return std::isfinite(v);
}

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> out;
  std::string item;
  std::stringstream ss(s);
  while (std::getline(ss, item, ','))
    out.push_back(item);
  if (!s.empty() && s.back() == ',')
    out.push_back("");
  return out;
}

/// A file written under a temporary name and renamed by commit().
class OutputFile {
public:
  OutputFile(const std::string& dir, const std::string& name) {
    path_ = (fs::path(dir) / name).string();
    tmp_ =
        (fs::path(dir) / fmt::format(".{}.tmp{}", name, ::getpid())).string();
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw DatasetError(
          fmt::format("{}: cannot create: {}", tmp_, std::strerror(errno)));
  }
  ~OutputFile() {
    if (fd_ >= 0)
      ::close(fd_);
    if (!committed_)
      ::unlink(tmp_.c_str());
  }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  const std::string& path() const { return path_; }

  /// Writes \p n bytes at byte \p offset.
  void write(const void* data, size_t n, int64_t offset) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        throw DatasetError(
            fmt::format("{}: write failed: {}", tmp_, std::strerror(errno)));
      p += w;
      n -= static_cast<size_t>(w);
      offset += w;
    }
  }
  /// Closes the temporary file (the rename comes in commit()).
  void close() {
    if (::close(fd_) != 0) {
      fd_ = -1;
      throw DatasetError(
          fmt::format("{}: close failed: {}", tmp_, std::strerror(errno)));
    }
    fd_ = -1;
  }
  void commit() {
    if (::rename(tmp_.c_str(), path_.c_str()) != 0)
      throw DatasetError(fmt::format("{}: cannot rename to {}: {}", tmp_, path_,
                                     std::strerror(errno)));
    committed_ = true;
  }

private:
  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

/// Uniform integer in [0, bound) from \p gen by rejection (portable, unlike
/// std::uniform_int_distribution).
uint64_t uniformBelow(std::mt19937_64& gen, uint64_t bound) {
  uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    uint64_t r = gen();
    if (r >= threshold)
      return r % bound;
  }
}

} // namespace

Scale parseScale(const std::string& text) {
  Scale s;
  s.text = text;
  size_t slash = text.find('/');
  bool ok = slash == std::string::npos
                ? parseFloat(text, s.num)
                : parseFloat(text.substr(0, slash), s.num) &&
                      parseFloat(text.substr(slash + 1), s.den);
  if (!ok || !(s.num > 0) || !(s.den > 0))
    throw DatasetError(fmt::format(
        "--scale: '{}' is not a positive number or fraction (for example "
        "1/255)",
        text));
  return s;
}

std::pair<std::vector<float>, std::vector<float>>
parseNormalize(const std::string& text, int64_t channels) {
  std::vector<std::string> items = splitComma(text);
  std::vector<float> v;
  for (const std::string& it : items) {
    float x = 0;
    if (!parseFloat(it, x))
      throw DatasetError(
          fmt::format("--normalize: '{}' in '{}' is not a number", it, text));
    v.push_back(x);
  }
  size_t c = static_cast<size_t>(channels);
  if (v.size() != 2 && v.size() != 2 * c)
    throw DatasetError(fmt::format(
        "--normalize: expected MEAN,STD or {} means then {} deviations for "
        "{}-channel images, got {} values",
        c, c, c, v.size()));
  std::vector<float> mean(c), std(c);
  for (size_t i = 0; i < c; ++i) {
    mean[i] = v.size() == 2 ? v[0] : v[i];
    std[i] = v.size() == 2 ? v[1] : v[c + i];
    if (!(std[i] > 0))
      throw DatasetError(fmt::format(
          "--normalize: standard deviation {} of channel {} must be positive",
          std[i], i));
  }
  return {mean, std};
}

bool isPartName(const std::string& name) {
  if (name.empty() || name.size() > kMaxPartName)
    return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      return false;
  return true;
}

std::vector<SplitPart> parseSplit(const std::string& text) {
  std::vector<SplitPart> parts;
  for (const std::string& item : splitComma(text)) {
    size_t eq = item.find('=');
    SplitPart p;
    p.name = item.substr(0, eq == std::string::npos ? item.size() : eq);
    const bool nameOk = isPartName(p.name);
    std::string count = eq == std::string::npos ? "" : item.substr(eq + 1);
    size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(count, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (!nameOk || used == 0 || used != count.size() || n <= 0)
      throw DatasetError(fmt::format(
          "--split: '{}' is not NAME=COUNT (NAME of 1 to {} letters, digits "
          "and _, COUNT positive), as in tune=5000,test=5000",
          item, kMaxPartName));
    for (const SplitPart& q : parts)
      if (q.name == p.name)
        throw DatasetError(
            fmt::format("--split: part '{}' is given twice", p.name));
    p.count = n;
    parts.push_back(p);
  }
  return parts;
}

ConvertResult convert(Source& source, const ConvertOptions& opt) {
  const ImageShape shape = source.shape();
  const int64_t n = source.count() - source.position();
  const int64_t elems = shape.elems();
  if (!source.hasLabels())
    throw DatasetError(fmt::format(
        "{}: no labels given; add the labels file as another SOURCE",
        source.imagesPath()));
  if (!opt.name.empty() && !opt.split.empty())
    throw DatasetError("--name and --split exclude each other");
  if (!opt.mean.empty() && (opt.mean.size() != static_cast<size_t>(shape.c) ||
                            opt.std.size() != opt.mean.size()))
    throw DatasetError(fmt::format(
        "normalisation has {} means and {} deviations for {}-channel images",
        opt.mean.size(), opt.std.size(), shape.c));
  if (opt.limit == 0 || opt.limit > n)
    throw DatasetError(
        fmt::format("--limit {} is not within 1..{}, the images of {}",
                    opt.limit, n, source.imagesPath()));
  const int64_t avail = opt.limit > 0 ? opt.limit : n;

  // Output parts and where each starts in output order.
  std::vector<SplitPart> parts = opt.split;
  if (!opt.name.empty()) {
    parts = {{opt.name, avail}};
  } else if (parts.empty()) {
    if (avail % 2 != 0)
      throw DatasetError(fmt::format(
          "cannot split {} images into equal tune and test halves; use "
          "--split or --name",
          avail));
    parts = {{"tune", avail / 2}, {"test", avail / 2}};
  }
  int64_t used = 0;
  std::vector<int64_t> starts;
  for (const SplitPart& p : parts) {
    starts.push_back(used);
    used += p.count;
  }
  if (used > avail)
    throw DatasetError(fmt::format(
        "--split asks for {} images, but {} has {}{}", used,
        source.imagesPath(), avail, opt.limit > 0 ? " after --limit" : ""));

  // Output position of every source image (shuffled: inverse of a
  // Fisher-Yates permutation).
  std::vector<int64_t> position;
  if (opt.shuffleSeed) {
    std::vector<int64_t> perm(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      perm[static_cast<size_t>(i)] = i;
    std::mt19937_64 gen(*opt.shuffleSeed);
    for (int64_t i = n - 1; i > 0; --i)
      std::swap(perm[static_cast<size_t>(i)],
                perm[uniformBelow(gen, static_cast<uint64_t>(i + 1))]);
    position.resize(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k)
      position[static_cast<size_t>(perm[static_cast<size_t>(k)])] = k;
  }

  std::error_code ec;
  // Remove the output directory again on failure if this call created it
  // (only when still empty: temporary files are gone by then).
  struct DirGuard {
    std::string dir;
    bool created = false, keep = false;
    ~DirGuard() {
      std::error_code e;
      if (created && !keep && fs::is_empty(dir, e))
        fs::remove(dir, e);
    }
  } guard{opt.outDir, !fs::exists(opt.outDir, ec)};
  fs::create_directories(opt.outDir, ec);
  if (ec || !fs::is_directory(opt.outDir))
    throw DatasetError(fmt::format("{}: cannot create the output directory{}",
                                   opt.outDir, ec ? ": " + ec.message() : ""));
  std::vector<std::unique_ptr<OutputFile>> inputs, labelFiles;
  std::vector<std::vector<int32_t>> labels;
  for (const SplitPart& p : parts) {
    inputs.push_back(
        std::make_unique<OutputFile>(opt.outDir, p.name + "_input.bin"));
    labelFiles.push_back(
        std::make_unique<OutputFile>(opt.outDir, p.name + "_labels.bin"));
    labels.emplace_back(static_cast<size_t>(p.count));
  }

  const bool isFloat = source.imageType().rfind("float", 0) == 0;
  const bool mul = opt.scale.num != 1, div = opt.scale.den != 1;
  const float num = opt.scale.num, den = opt.scale.den;
  const bool norm = !opt.mean.empty();
  const int64_t plane = shape.h * shape.w;
  const int64_t chunk = opt.chunk > 0 ? opt.chunk : defaultChunk(shape);
  std::vector<float> images(static_cast<size_t>(chunk * elems));
  std::vector<int32_t> chunkLabels(static_cast<size_t>(chunk));
  float lo = INFINITY, hi = -INFINITY;
  const int64_t readUpTo = opt.shuffleSeed ? n : used;
  const int64_t base = source.position();

  for (int64_t i0 = 0; i0 < readUpTo; i0 += chunk) {
    int64_t k = std::min(chunk, readUpTo - i0);
    source.read(k, images.data(), chunkLabels.data());
    // Loop: images of the chunk; channels; pixels (scale, normalise).
    for (int64_t r = 0; r < k; ++r) {
      float* img = images.data() + r * elems;
      if (isFloat)
        for (int64_t e = 0; e < elems; ++e)
          if (!std::isfinite(img[e]))
            throw DatasetError(fmt::format(
                "{}: image {} holds a NaN or infinite value at element {}",
                source.imagesPath(), base + i0 + r, e));
      for (int64_t c = 0; c < shape.c; ++c) {
        float* p = img + c * plane;
        const float m = norm ? opt.mean[static_cast<size_t>(c)] : 0.f;
        const float s = norm ? opt.std[static_cast<size_t>(c)] : 1.f;
        for (int64_t e = 0; e < plane; ++e) {
          float v = p[e];
          if (mul)
            v = v * num;
          if (div)
            v = v / den;
          if (norm)
            v = (v - m) / s;
          p[e] = v;
        }
      }
    }
    // Route runs of consecutive output positions within one part.
    for (int64_t r = 0; r < k;) {
      int64_t pos =
          opt.shuffleSeed ? position[static_cast<size_t>(i0 + r)] : i0 + r;
      if (pos >= used) {
        ++r;
        continue;
      }
      size_t part = parts.size() - 1;
      while (starts[part] > pos)
        --part;
      int64_t end = starts[part] + parts[part].count;
      int64_t run = 1;
      while (r + run < k && pos + run < end &&
             (opt.shuffleSeed
                  ? position[static_cast<size_t>(i0 + r + run)] == pos + run
                  : true))
        ++run;
      int64_t at = pos - starts[part];
      const float* data = images.data() + r * elems;
      for (int64_t e = 0; e < run * elems; ++e) {
        lo = std::min(lo, data[e]);
        hi = std::max(hi, data[e]);
      }
      inputs[part]->write(data,
                          static_cast<size_t>(run * elems) * sizeof(float),
                          at * elems * static_cast<int64_t>(sizeof(float)));
      std::memcpy(labels[part].data() + at, chunkLabels.data() + r,
                  static_cast<size_t>(run) * sizeof(int32_t));
      r += run;
    }
  }

  ConvertResult result;
  for (size_t p = 0; p < parts.size(); ++p) {
    labelFiles[p]->write(labels[p].data(), labels[p].size() * sizeof(int32_t),
                         0);
    inputs[p]->close();
    labelFiles[p]->close();
    result.parts.push_back({parts[p].name, inputs[p]->path(),
                            labelFiles[p]->path(), parts[p].count});
  }
  result.unused = n - used;
  result.minValue = used > 0 ? lo : 0;
  result.maxValue = used > 0 ? hi : 0;

  std::unique_ptr<OutputFile> manifest;
  if (opt.manifest) {
    nlohmann::json j;
    j["generator"] = "torch2hpvm-dataset";
    j["source"] = {{"format", source.format()},
                   {"files", source.description()},
                   {"images", n},
                   {"image_type", source.imageType()}};
    j["shape"] = {shape.c, shape.h, shape.w};
    j["layout"] = "float32 NCHW little-endian inputs, int32 labels";
    j["scale"] = opt.scale.text;
    j["normalize"] = {{"mean", opt.mean}, {"std", opt.std}};
    j["shuffle_seed"] = opt.shuffleSeed ? nlohmann::json(*opt.shuffleSeed)
                                        : nlohmann::json(nullptr);
    j["limit"] =
        opt.limit > 0 ? nlohmann::json(opt.limit) : nlohmann::json(nullptr);
    j["unused"] = result.unused;
    j["value_range"] = {result.minValue, result.maxValue};
    for (const WrittenPart& w : result.parts)
      j["parts"].push_back(
          {{"name", w.name},
           {"count", w.count},
           {"input", fs::path(w.inputPath).filename().string()},
           {"labels", fs::path(w.labelsPath).filename().string()}});
    std::string text = j.dump(2) + "\n";
    manifest = std::make_unique<OutputFile>(opt.outDir, "dataset.json");
    manifest->write(text.data(), text.size(), 0);
    manifest->close();
  }
  // Everything is written: rename into place.
  for (size_t p = 0; p < parts.size(); ++p) {
    inputs[p]->commit();
    labelFiles[p]->commit();
  }
  if (manifest)
    manifest->commit();
  guard.keep = true;
  return result;
}

} // namespace hpvm::ds
