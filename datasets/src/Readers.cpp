// Readers.cpp - the dataset sources: IDX, NumPy .npy/.npz and HPVM bin
// pairs (arrays streamed from a file or archive member), CIFAR-10/100
// batches; format detection and openSource().
#include "ByteStream.h"
#include "Decode.h"
#include "hpvm_ds/Dataset.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sys/stat.h>

namespace hpvm::ds {
namespace {

namespace fs = std::filesystem;

std::string dimsText(const std::vector<int64_t>& dims) {
  return fmt::format("({})", fmt::join(dims, ", "));
}

/// A stored array streamed record by record (record = one sample).
struct Array {
  std::unique_ptr<ByteStream> stream;
  ElemType type;
  std::vector<int64_t> dims; ///< dims[0] is the number of samples.
  int64_t headerBytes = 0;

  const std::string& name() const { return stream->name(); }
  int64_t count() const { return dims.empty() ? 0 : dims[0]; }
  int64_t recordElems() const {
    int64_t e = 1;
    for (size_t i = 1; i < dims.size(); ++i)
      e *= dims[i];
    return e;
  }
  int64_t dataBytes() const { return count() * recordElems() * type.size; }
  /// Checks the header's dims once read: no negative extent, at least one
  /// sample, and a total size that fits in 63 bits (recordElems() and
  /// dataBytes() then never overflow).
  void checkDims() const {
    int64_t bytes = type.size;
    for (int64_t d : dims)
      if (d < 0 || __builtin_mul_overflow(bytes, d, &bytes))
        throw DatasetError(fmt::format(
            "{}: the header announces dims {}, whose size overflows", name(),
            dimsText(dims)));
    if (count() == 0)
      throw DatasetError(fmt::format(
          "{}: the header announces no samples (dims {}); nothing to convert",
          name(), dimsText(dims)));
  }
  /// Checks the stream size against the header, when the size is known.
  void checkSize(const std::string& announced) const {
    int64_t want = headerBytes + dataBytes();
    int64_t have = stream->size();
    if (have < 0 && want > stream->maxSize())
      // gzip hides the real size, but not how much it can hold: refused
      // before anything is sized by the header's count.
      throw DatasetError(fmt::format(
          "{}: truncated: the header announces {} ({} bytes), more than its "
          "gzip data can hold (at most {} bytes)",
          name(), announced, want, stream->maxSize()));
    if (have < 0 || have == want)
      return;
    if (have < want)
      throw DatasetError(fmt::format(
          "{}: truncated: the header announces {} ({} bytes), but the data "
          "has {} bytes",
          name(), announced, want, have));
    throw DatasetError(
        fmt::format("{}: {} unexpected bytes after the {} the header "
                    "announces",
                    name(), have - want, announced));
  }
  /// After the last record: no data may follow (gzip streams).
  void checkEnd(const std::string& announced) const {
    if (!stream->atEnd())
      throw DatasetError(
          fmt::format("{}: unexpected data after the {} the header announces",
                      name(), announced));
  }
};

uint32_t be32(const unsigned char* p) {
  return (static_cast<uint32_t>(p[0]) << 24) |
         (static_cast<uint32_t>(p[1]) << 16) |
         (static_cast<uint32_t>(p[2]) << 8) | static_cast<uint32_t>(p[3]);
}

/// IDX element type codes (third magic byte).
bool idxType(unsigned code, ElemType& t) {
  switch (code) {
  case 0x08:
    t = {'u', 1, true};
    return true;
  case 0x09:
    t = {'i', 1, true};
    return true;
  case 0x0B:
    t = {'i', 2, true};
    return true;
  case 0x0C:
    t = {'i', 4, true};
    return true;
  case 0x0D:
    t = {'f', 4, true};
    return true;
  case 0x0E:
    t = {'f', 8, true};
    return true;
  default:
    return false;
  }
}

Array openIdx(const std::string& path) {
  Array a;
  a.stream = openFileStream(path);
  unsigned char magic[4];
  a.stream->readExact(magic, 4, "the IDX magic number");
  uint32_t m = be32(magic);
  unsigned ndim = magic[3];
  if (magic[0] != 0 || magic[1] != 0 || !idxType(magic[2], a.type) ||
      ndim < 1 || ndim > 4)
    throw DatasetError(
        fmt::format("{}: wrong magic number 0x{:08x} for an IDX file (expected "
                    "0x000008NN for unsigned bytes, NN = 01..04 dimensions)",
                    path, m));
  std::vector<unsigned char> d(4 * ndim);
  a.stream->readExact(d.data(), d.size(), "the IDX dimensions");
  for (unsigned i = 0; i < ndim; ++i)
    a.dims.push_back(be32(&d[4 * i]));
  a.headerBytes = 4 + 4 * ndim;
  a.checkDims();
  return a;
}

/// Parses a NumPy type string ("<f4", "|u1").
bool npyType(const std::string& descr, ElemType& t) {
  if (descr.size() < 3)
    return false;
  char order = descr[0], kind = descr[1];
  if (order != '<' && order != '>' && order != '|' && order != '=')
    return false;
  if (kind != 'u' && kind != 'i' && kind != 'f')
    return false;
  int size = std::atoi(descr.c_str() + 2);
  if (std::to_string(size) != descr.substr(2))
    return false;
  bool ok = kind == 'f' ? (size == 4 || size == 8)
                        : (size == 1 || size == 2 || size == 4 || size == 8);
  if (!ok)
    return false;
  t = {kind, size, order == '>'};
  return true;
}

/// Value of key \p key in a NumPy header dict literal, as raw text.
std::string npyField(const std::string& header, const std::string& key,
                     const std::string& name) {
  size_t p = header.find("'" + key + "'");
  if (p == std::string::npos)
    p = header.find("\"" + key + "\"");
  if (p == std::string::npos)
    throw DatasetError(
        fmt::format("{}: corrupt .npy header: no '{}' entry in {}", name, key,
                    header.substr(0, 200)));
  p = header.find(':', p);
  if (p == std::string::npos)
    throw DatasetError(fmt::format("{}: corrupt .npy header: {}", name,
                                   header.substr(0, 200)));
  ++p;
  while (p < header.size() && header[p] == ' ')
    ++p;
  size_t end = p;
  if (p < header.size() && (header[p] == '\'' || header[p] == '"')) {
    end = header.find(header[p], p + 1);
    if (end == std::string::npos)
      throw DatasetError(fmt::format("{}: corrupt .npy header: {}", name,
                                     header.substr(0, 200)));
    return header.substr(p + 1, end - p - 1);
  }
  if (p < header.size() && (header[p] == '(' || header[p] == '[')) {
    end = header.find(header[p] == '(' ? ')' : ']', p);
    if (end == std::string::npos)
      throw DatasetError(fmt::format("{}: corrupt .npy header: {}", name,
                                     header.substr(0, 200)));
    return header.substr(p, end - p + 1);
  }
  while (end < header.size() && header[end] != ',' && header[end] != '}')
    ++end;
  return header.substr(p, end - p);
}

Array readNpy(std::unique_ptr<ByteStream> stream) {
  Array a;
  a.stream = std::move(stream);
  const std::string& name = a.stream->name();
  unsigned char pre[10];
  a.stream->readExact(pre, 8, "the .npy magic string");
  if (std::memcmp(pre, "\x93NUMPY", 6) != 0)
    throw DatasetError(
        fmt::format("{}: wrong magic string for a .npy file (expected "
                    "\\x93NUMPY)",
                    name));
  uint32_t headerLen = 0;
  if (pre[6] == 1) {
    a.stream->readExact(pre + 8, 2, "the .npy header length");
    headerLen = pre[8] | (pre[9] << 8);
    a.headerBytes = 10;
  } else if (pre[6] == 2 || pre[6] == 3) {
    unsigned char l[4];
    a.stream->readExact(l, 4, "the .npy header length");
    headerLen = static_cast<uint32_t>(l[0] | (l[1] << 8) | (l[2] << 16)) |
                (static_cast<uint32_t>(l[3]) << 24);
    a.headerBytes = 12;
  } else {
    throw DatasetError(fmt::format("{}: unsupported .npy format version {}.{}",
                                   name, pre[6], pre[7]));
  }
  // NumPy writes headers of a few hundred bytes; a longer one is damage.
  constexpr uint32_t kMaxHeader = 1 << 16;
  if (headerLen > kMaxHeader)
    throw DatasetError(fmt::format("{}: corrupt .npy header: it claims {} "
                                   "bytes (at most {} expected)",
                                   name, headerLen, kMaxHeader));
  std::string header(headerLen, '\0');
  a.stream->readExact(header.data(), headerLen, "the .npy header");
  a.headerBytes += headerLen;
  std::string descr = npyField(header, "descr", name);
  if (header.find("'descr': [") != std::string::npos || !npyType(descr, a.type))
    throw DatasetError(fmt::format(
        "{}: unsupported element type '{}' (expected uint8, float32, float64 "
        "or, for labels, an integer type)",
        name, descr));
  if (npyField(header, "fortran_order", name).rfind("False", 0) != 0)
    throw DatasetError(fmt::format(
        "{}: the array is stored in Fortran order; save it in C order "
        "(numpy.ascontiguousarray)",
        name));
  std::string shape = npyField(header, "shape", name);
  if (shape.empty() || shape[0] != '(')
    throw DatasetError(
        fmt::format("{}: corrupt .npy header: its shape is not a tuple: {}",
                    name, header.substr(0, 200)));
  std::string digits;
  for (char c : shape.substr(1)) {
    if (c >= '0' && c <= '9') {
      digits += c;
    } else if (c == ',' || c == ')') {
      if (digits.size() > 18)
        throw DatasetError(
            fmt::format("{}: .npy shape {} has an extent beyond 10^18", name,
                        shape.substr(0, 200)));
      if (!digits.empty())
        a.dims.push_back(std::stoll(digits));
      digits.clear();
    } else if (c != ' ' && c != 'L') {
      throw DatasetError(fmt::format("{}: corrupt .npy shape {}", name, shape));
    }
  }
  if (a.dims.empty())
    throw DatasetError(fmt::format(
        "{}: the array is a scalar; expected images or labels", name));
  a.checkDims();
  return a;
}

/// Images and labels streamed from two arrays (IDX, NumPy, HPVM bin).
class ArraySource : public Source {
public:
  ArraySource(std::string format, Array images, std::optional<Array> labels,
              const OpenOptions& opt)
      : images_(std::move(images)), labels_(std::move(labels)) {
    format_ = std::move(format);
    imagesPath_ = images_.name();
    description_ = imagesPath_;
    const std::vector<int64_t>& d = images_.dims;
    ElemType t = images_.type;
    if (!(t.kind == 'u' && t.size <= 2) && !(t.kind == 'i' && t.size <= 4) &&
        t.kind != 'f')
      throw DatasetError(fmt::format(
          "{}: images of type {} are not supported (expected uint8, float32 "
          "or float64)",
          imagesPath_, t.name()));
    imageType_ = t.name();
    count_ = images_.count();
    if (d.size() == 3) {
      shape_ = {1, d[1], d[2]};
    } else if (d.size() == 4) {
      nhwc_ = opt.layout == Layout::NHWC;
      shape_ =
          nhwc_ ? ImageShape{d[3], d[1], d[2]} : ImageShape{d[1], d[2], d[3]};
    } else if (d.size() == 2 && opt.shape && opt.shape->elems() == d[1]) {
      shape_ = *opt.shape;
    } else {
      throw DatasetError(fmt::format(
          "{}: images must be a 3-D (N,H,W) or 4-D ({}) array, found shape "
          "{}{}",
          imagesPath_, opt.layout == Layout::NHWC ? "N,H,W,C" : "N,C,H,W",
          dimsText(d),
          d.size() == 2 ? "; give --shape C,H,W to unflatten its rows" : ""));
    }
    if (opt.shape && *opt.shape != shape_)
      throw DatasetError(fmt::format(
          "{}: images are {} ({}), but --shape says {}", imagesPath_,
          shape_.str(), layoutName(opt), opt.shape->str()));
    announced_ = fmt::format("{} images of {}", count_, shapeText(d));
    images_.checkSize(announced_);
    if (labels_) {
      Array& l = *labels_;
      labelsPath_ = l.name();
      description_ += ", " + labelsPath_;
      if (!l.type.isInteger())
        throw DatasetError(
            fmt::format("{}: labels are {}; integer labels expected",
                        labelsPath_, l.type.name()));
      if (!(l.dims.size() == 1 || (l.dims.size() == 2 && l.dims[1] == 1)))
        throw DatasetError(
            fmt::format("{}: labels must be a 1-D array, found shape {}",
                        labelsPath_, dimsText(l.dims)));
      labelsAnnounced_ = fmt::format("{} labels", l.count());
      l.checkSize(labelsAnnounced_);
      if (l.count() != count_)
        throw DatasetError(fmt::format("{} holds {} images but {} holds {} "
                                       "labels",
                                       imagesPath_, count_, labelsPath_,
                                       l.count()));
      classes_ = opt.classes;
    }
  }

protected:
  void readSamples(int64_t n, float* images, int64_t* labels) override {
    int64_t elems = n * images_.recordElems();
    raw_.resize(static_cast<size_t>(elems * images_.type.size));
    images_.stream->readExact(
        raw_.data(), raw_.size(),
        fmt::format("the data of images {}..{}", position_, position_ + n - 1));
    if (nhwc_) {
      tmp_.resize(static_cast<size_t>(elems));
      decodeFloats(raw_.data(), images_.type, elems, tmp_.data());
      nhwcToNchw(tmp_.data(), n, shape_.c, shape_.h, shape_.w, images);
    } else {
      decodeFloats(raw_.data(), images_.type, elems, images);
    }
    if (labels_) {
      raw_.resize(static_cast<size_t>(n * labels_->type.size));
      labels_->stream->readExact(
          raw_.data(), raw_.size(),
          fmt::format("labels {}..{}", position_, position_ + n - 1));
      decodeInts(raw_.data(), labels_->type, n, labels);
    }
  }

  void finish() override {
    images_.checkEnd(announced_);
    if (labels_)
      labels_->checkEnd(labelsAnnounced_);
  }

private:
  static std::string layoutName(const OpenOptions& opt) {
    return opt.layout == Layout::NHWC ? "read as NHWC" : "read as NCHW";
  }
  std::string shapeText(const std::vector<int64_t>& d) const {
    std::vector<int64_t> rest(d.begin() + 1, d.end());
    return fmt::format("{} {}", fmt::join(rest, "x"), images_.type.name());
  }

  Array images_;
  std::optional<Array> labels_;
  bool nhwc_ = false;
  std::string announced_, labelsAnnounced_;
  std::vector<unsigned char> raw_;
  std::vector<float> tmp_;
};

/// CIFAR-10 / CIFAR-100 binary batches: records of label byte(s) followed
/// by 3x32x32 pixels (channel planes), concatenated over the files.
class CifarSource : public Source {
public:
  CifarSource(bool hundred, const std::vector<std::string>& paths,
              const OpenOptions& opt)
      : hundred_(hundred), coarse_(hundred && opt.coarseLabels) {
    format_ = hundred ? "cifar100" : "cifar10";
    shape_ = {3, 32, 32};
    imageType_ = "uint8";
    int64_t rec = recordBytes();
    for (const std::string& p : paths) {
      auto s = openFileStream(p);
      if (s->compressed())
        throw DatasetError(fmt::format(
            "{}: gzip-compressed CIFAR batches are not supported; extract "
            "the .bin files first",
            p));
      if (s->size() == 0 || s->size() % rec != 0)
        throw DatasetError(fmt::format(
            "{}: {} bytes is not a whole number of {} records ({} bytes: "
            "{} + 3x32x32 pixels)",
            p, s->size(), hundred ? "CIFAR-100" : "CIFAR-10", rec,
            hundred ? "coarse and fine label bytes" : "1 label byte"));
      counts_.push_back(s->size() / rec);
      count_ += s->size() / rec;
      paths_.push_back(p);
    }
    imagesPath_ = labelsPath_ = paths_.front();
    description_ = fmt::format("{}", fmt::join(paths_, ", "));
    classes_ = opt.classes > 0 ? opt.classes
               : coarse_       ? 20
               : hundred       ? 100
                               : 10;
    open(0);
  }

protected:
  void readSamples(int64_t n, float* images, int64_t* labels) override {
    int64_t rec = recordBytes(), labelBytes = hundred_ ? 2 : 1;
    int64_t done = 0;
    while (done < n) {
      while (inFile_ == counts_[file_])
        open(file_ + 1);
      int64_t k = std::min(n - done, counts_[file_] - inFile_);
      raw_.resize(static_cast<size_t>(k * rec));
      stream_->readExact(
          raw_.data(), raw_.size(),
          fmt::format("records {}..{}", inFile_, inFile_ + k - 1));
      // Loop: records; label byte(s), then the 3072 pixels.
      for (int64_t r = 0; r < k; ++r) {
        const unsigned char* p = raw_.data() + r * rec;
        labels[done + r] = hundred_ && !coarse_ ? p[1] : p[0];
        if (labels[done + r] >= classes_)
          badLabelIn(inFile_ + r, labels[done + r]);
        decodeFloats(p + labelBytes, ElemType{'u', 1, false}, 3072,
                     images + (done + r) * 3072);
      }
      done += k;
      inFile_ += k;
    }
  }

private:
  int64_t recordBytes() const { return hundred_ ? 3074 : 3073; }
  void open(size_t f) {
    file_ = f;
    inFile_ = 0;
    stream_ = openFileStream(paths_[f]);
    labelsPath_ = paths_[f];
  }
  [[noreturn]] void badLabelIn(int64_t record, int64_t value) const {
    throw DatasetError(
        fmt::format("{}: record {} has {} label {}; labels must lie in 0..{}",
                    paths_[file_], record,
                    coarse_    ? "coarse"
                    : hundred_ ? "fine"
                               : "a",
                    value, classes_ - 1));
  }

  bool hundred_, coarse_;
  std::vector<std::string> paths_;
  std::vector<int64_t> counts_;
  size_t file_ = 0;
  int64_t inFile_ = 0;
  std::unique_ptr<ByteStream> stream_;
  std::vector<unsigned char> raw_;
};

std::string baseName(const std::string& path) {
  size_t s = path.find_last_of('/');
  return s == std::string::npos ? path : path.substr(s + 1);
}

int64_t fileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return -1;
  return static_cast<int64_t>(st.st_size);
}

/// "784 floats per image (for example 1x28x28)" for \p floats per image.
std::string floatsHint(int64_t floats) {
  for (int64_t c : {1, 3}) {
    if (floats % c != 0)
      continue;
    int64_t side = 1;
    while (side * side < floats / c)
      ++side;
    if (side * side == floats / c)
      return fmt::format("{} floats per image (for example {}x{}x{})", floats,
                         c, side, side);
  }
  return fmt::format("{} floats per image", floats);
}

/// Opens an HPVM input bin (float32 NCHW) and its labels (int32), checking
/// the sizes against \p shape and each other.
std::unique_ptr<Source> openBin(const std::string& input,
                                const std::string& labels,
                                const OpenOptions& opt) {
  int64_t bytes = fileSize(input);
  if (bytes < 0)
    throw DatasetError(
        fmt::format("{}: cannot open: {}", input, std::strerror(errno)));
  int64_t numLabels = -1;
  if (!labels.empty()) {
    int64_t lb = fileSize(labels);
    if (lb < 0)
      throw DatasetError(
          fmt::format("{}: cannot open: {}", labels, std::strerror(errno)));
    if (lb % 4 != 0)
      throw DatasetError(fmt::format(
          "{}: {} bytes is not a whole number of int32 labels (4 bytes each)",
          labels, lb));
    numLabels = lb / 4;
  }
  std::string hint;
  if (numLabels > 0 && bytes % (4 * numLabels) == 0)
    hint = fmt::format("; with the {} labels of {} it holds {}", numLabels,
                       labels, floatsHint(bytes / 4 / numLabels));
  if (!opt.shape)
    throw DatasetError(fmt::format(
        "{}: an HPVM bin file has no header: give the image shape with "
        "--shape C,H,W{}",
        input, hint));
  if (bytes == 0)
    throw DatasetError(fmt::format("{}: the file is empty", input));
  int64_t per = 4 * opt.shape->elems();
  if (bytes % per != 0)
    throw DatasetError(fmt::format(
        "{}: {} bytes is not a whole number of {} float32 images ({} bytes "
        "each){}",
        input, bytes, opt.shape->str(), per, hint));
  if (numLabels >= 0 && bytes / per != numLabels)
    throw DatasetError(fmt::format("{} holds {} images of {} but {} holds {} "
                                   "labels{}",
                                   input, bytes / per, opt.shape->str(), labels,
                                   numLabels, hint));
  Array img;
  img.stream = openFileStream(input);
  img.type = {'f', 4, false};
  img.dims = {bytes / per, opt.shape->c, opt.shape->h, opt.shape->w};
  std::optional<Array> lab;
  if (!labels.empty()) {
    lab.emplace();
    lab->stream = openFileStream(labels);
    lab->type = {'i', 4, false};
    lab->dims = {numLabels};
  }
  OpenOptions o = opt;
  o.layout = Layout::NCHW;
  return std::make_unique<ArraySource>("bin", std::move(img), std::move(lab),
                                       o);
}

[[noreturn]] void needLabels(const std::string& images) {
  throw DatasetError(fmt::format(
      "{}: no labels given; add the labels file as another SOURCE", images));
}

/// Splits IDX or .npy arrays into the images (>= 2-D) and labels (1-D).
std::unique_ptr<Source> openArrays(const std::string& format,
                                   std::vector<Array> arrays,
                                   const OpenOptions& opt) {
  std::optional<Array> images, labels;
  for (Array& a : arrays) {
    bool isLabels =
        a.dims.size() == 1 || (a.dims.size() == 2 && a.dims[1] == 1);
    std::optional<Array>& slot = isLabels ? labels : images;
    if (slot)
      throw DatasetError(fmt::format(
          "{} and {} both look like {} ({} {}); give one images and one "
          "labels file",
          slot->name(), a.name(), isLabels ? "labels" : "images",
          isLabels ? "1-D" : "shape", dimsText(a.dims)));
    slot = std::move(a);
  }
  if (!images)
    throw DatasetError(fmt::format(
        "{}: only labels given; add the images file as another SOURCE",
        labels->name()));
  if (!labels && !opt.labelsOptional)
    needLabels(images->name());
  return std::make_unique<ArraySource>(format, std::move(*images),
                                       std::move(labels), opt);
}

std::unique_ptr<Source> openNpz(const std::string& path,
                                const OpenOptions& opt) {
  std::vector<ZipMember> members = listZip(path);
  std::vector<std::string> keys;
  for (const ZipMember& m : members) {
    std::string k = m.name;
    if (k.size() > 4 && k.compare(k.size() - 4, 4, ".npy") == 0)
      k.resize(k.size() - 4);
    keys.push_back(k);
  }
  auto open = [&](size_t i) {
    return readNpy(openZipMember(path, members[i]));
  };
  auto find = [&](const std::string& key, const char* role) {
    auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end())
      throw DatasetError(
          fmt::format("{}: no array '{}' for the {} (arrays: {})", path, key,
                      role, fmt::join(keys, ", ")));
    return static_cast<size_t>(it - keys.begin());
  };
  std::optional<size_t> img, lab;
  if (!opt.imagesKey.empty())
    img = find(opt.imagesKey, "images");
  if (!opt.labelsKey.empty())
    lab = find(opt.labelsKey, "labels");
  if (!img || (!lab && opt.labelsKey.empty())) {
    std::vector<size_t> imgs, labs;
    std::vector<std::string> seen;
    for (size_t i = 0; i < members.size(); ++i) {
      Array a = open(i);
      seen.push_back(
          fmt::format("{} {} {}", keys[i], dimsText(a.dims), a.type.name()));
      if (a.dims.size() == 1)
        labs.push_back(i);
      else if (a.dims.size() >= 3 || (a.dims.size() == 2 && opt.shape))
        imgs.push_back(i);
    }
    if (!img && imgs.size() == 1)
      img = imgs[0];
    if (!lab && labs.size() == 1)
      lab = labs[0];
    if (!img || (!lab && !(labs.empty() && opt.labelsOptional)))
      throw DatasetError(fmt::format(
          "{}: cannot tell which arrays are the images and the labels among "
          "{}; use --images-key and --labels-key",
          path, fmt::join(seen, ", ")));
  }
  std::optional<Array> labels;
  if (lab)
    labels = open(*lab);
  return std::make_unique<ArraySource>("npz", open(*img), std::move(labels),
                                       opt);
}

} // namespace

std::string detectFormat(const std::string& path) {
  std::string base = baseName(path);
  std::unique_ptr<ByteStream> s = openFileStream(path);
  unsigned char m[8] = {0};
  size_t n = s->readSome(m, 8);
  if (n >= 6 && std::memcmp(m, "\x93NUMPY", 6) == 0)
    return "npy";
  if (n >= 4 && std::memcmp(m, "PK\x03\x04", 4) == 0)
    return "npz";
  ElemType t;
  if (n >= 4 && m[0] == 0 && m[1] == 0 && idxType(m[2], t) && m[3] >= 1 &&
      m[3] <= 4)
    return "idx";
  if (base.size() > 4 && base.compare(base.size() - 4, 4, ".bin") == 0) {
    if (base.find("input") != std::string::npos ||
        base.find("label") != std::string::npos)
      return "bin";
    int64_t size = s->size();
    bool c10 = size > 0 && size % 3073 == 0,
         c100 = size > 0 && size % 3074 == 0;
    if (c10 &&
        (base.rfind("data_batch", 0) == 0 || base == "test_batch.bin" || !c100))
      return "cifar10";
    if (c100)
      return "cifar100";
  }
  return "";
}

std::unique_ptr<Source> openSource(const std::vector<std::string>& paths,
                                   const OpenOptions& opt) {
  if (paths.empty())
    throw DatasetError("no SOURCE files given");
  std::string format = opt.format;
  if (format.empty()) {
    std::vector<std::string> found;
    for (const std::string& p : paths) {
      std::string f = detectFormat(p);
      if (f.empty())
        throw DatasetError(fmt::format(
            "{}: unknown dataset format (not IDX, NumPy .npy/.npz, CIFAR-10/"
            "100 batches or an HPVM *_input.bin/*_labels.bin); name it with "
            "--format",
            p));
      found.push_back(p + " (" + f + ")");
      if (format.empty())
        format = f;
      else if (format != f)
        format = "mixed";
    }
    if (format == "mixed")
      throw DatasetError(
          fmt::format("the sources mix formats: {}", fmt::join(found, ", ")));
  }
  if (format == "idx" || format == "npy") {
    std::vector<Array> arrays;
    for (const std::string& p : paths)
      arrays.push_back(format == "idx" ? openIdx(p)
                                       : readNpy(openFileStream(p)));
    return openArrays(format, std::move(arrays), opt);
  }
  if (format == "npz") {
    if (paths.size() != 1)
      throw DatasetError(fmt::format(
          "give exactly one .npz archive, not {} files", paths.size()));
    return openNpz(paths[0], opt);
  }
  if (format == "cifar10" || format == "cifar100")
    return std::make_unique<CifarSource>(format == "cifar100", paths, opt);
  if (format == "bin") {
    if (paths.size() > 2)
      throw DatasetError(fmt::format(
          "give an HPVM inputs file and its labels file, not {} files",
          paths.size()));
    std::string input = paths[0], labels;
    if (paths.size() == 2) {
      labels = paths[1];
      if (baseName(input).find("label") != std::string::npos &&
          baseName(labels).find("label") == std::string::npos)
        std::swap(input, labels);
    } else {
      std::string guess = labelsPathFor(input);
      if (!guess.empty() && fs::exists(guess))
        labels = guess;
      else if (!opt.labelsOptional)
        throw DatasetError(fmt::format(
            "{}: labels file {} not found; give the labels file as a second "
            "SOURCE",
            input, guess.empty() ? "(name has no 'input' to replace)" : guess));
    }
    return openBin(input, labels, opt);
  }
  throw DatasetError(fmt::format(
      "unknown --format '{}' (expected idx, cifar10, cifar100, npy, npz or "
      "bin)",
      format));
}

} // namespace hpvm::ds
