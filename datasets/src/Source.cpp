// Source.cpp - the Source base (bounds, label checks) and small shared
// helpers: shapes, labels-file naming.
#include "hpvm_ds/Dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <sstream>
#include <vector>

namespace hpvm::ds {

std::string ImageShape::str() const { return fmt::format("{}x{}x{}", c, h, w); }

int64_t defaultChunk(const ImageShape& shape) {
  const int64_t bytes = std::max<int64_t>(1, shape.elems()) * 4;
  return std::clamp<int64_t>((int64_t{16} << 20) / bytes, 1, 1024);
}

ImageShape parseShape(const std::string& text, const std::string& what) {
  std::vector<int64_t> v;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    long long x = 0;
    try {
      x = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || x <= 0)
      throw DatasetError(fmt::format(
          "{}: '{}' is not a shape C,H,W of three positive integers", what,
          text));
    v.push_back(x);
  }
  if (v.size() != 3 || text.back() == ',')
    throw DatasetError(
        fmt::format("{}: '{}' is not a shape C,H,W of three positive integers",
                    what, text));
  // Checked before anything multiplies the dims (2^40 float32 values, 4
  // TiB, per image is beyond any dataset).
  constexpr int64_t kMaxImageValues = int64_t{1} << 40;
  int64_t values = 1;
  for (int64_t d : v) {
    if (d > kMaxImageValues / values)
      throw DatasetError(fmt::format(
          "{}: '{}' has more than 2^40 values per image", what, text));
    values *= d;
  }
  return ImageShape{v[0], v[1], v[2]};
}

std::string labelsPathFor(const std::string& inputPath) {
  size_t slash = inputPath.find_last_of('/');
  std::string dir =
      slash == std::string::npos ? "" : inputPath.substr(0, slash + 1);
  std::string base =
      slash == std::string::npos ? inputPath : inputPath.substr(slash + 1);
  size_t pos = base.rfind("input");
  if (pos == std::string::npos)
    return "";
  return dir + base.substr(0, pos) + "labels" + base.substr(pos + 5);
}

Source::~Source() = default;

void Source::read(int64_t n, float* images, int32_t* labels) {
  if (n < 0 || n > count_ - position_)
    throw DatasetError(fmt::format(
        "{}: cannot read {} samples at sample {}: the source has {}",
        imagesPath_, n, position_, count_));
  if (hasLabels())
    labelScratch_.resize(static_cast<size_t>(n));
  readSamples(n, images, hasLabels() ? labelScratch_.data() : nullptr);
  if (hasLabels()) {
    int64_t hi =
        classes_ > 0 ? classes_ - 1 : std::numeric_limits<int32_t>::max();
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = labelScratch_[static_cast<size_t>(i)];
      if (v < 0 || v > hi)
        badLabel(position_ + i, v);
      labels[i] = static_cast<int32_t>(v);
    }
  }
  position_ += n;
  if (position_ == count_)
    finish();
}

void Source::badLabel(int64_t index, int64_t value) const {
  if (classes_ > 0)
    throw DatasetError(
        fmt::format("{}: sample {} has label {}; labels must lie in 0..{}",
                    labelsPath_, index, value, classes_ - 1));
  if (value < 0)
    throw DatasetError(
        fmt::format("{}: sample {} has label {}; labels must be non-negative",
                    labelsPath_, index, value));
  throw DatasetError(
      fmt::format("{}: sample {} has label {}; labels must fit in int32",
                  labelsPath_, index, value));
}

} // namespace hpvm::ds
