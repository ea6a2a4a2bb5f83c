// Dataset.h - streaming readers for the dataset formats torch2hpvm converts
// to HPVM's bin format: IDX (MNIST, Fashion-MNIST, EMNIST; gzip or not),
// CIFAR-10/100 binary batches, NumPy .npy/.npz and HPVM bin pairs.
#ifndef HPVM_DS_DATASET_H
#define HPVM_DS_DATASET_H

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace hpvm::ds {

/// A bad input file or option. what() is the complete message, naming the
/// file and the numbers involved; the tool prints it and exits 1.
class DatasetError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The shape of one image, channels first.
struct ImageShape {
  int64_t c = 0, h = 0, w = 0;
  /// Number of values in one image.
  int64_t elems() const { return c * h * w; }
  /// "CxHxW", as used in messages.
  std::string str() const;
  bool operator==(const ImageShape& o) const {
    return c == o.c && h == o.h && w == o.w;
  }
  bool operator!=(const ImageShape& o) const { return !(*this == o); }
};

/// Images per streaming chunk for \p shape: up to 1024 images and about
/// 16 MiB of float32, at least one image.
int64_t defaultChunk(const ImageShape& shape);

/// Parses "C,H,W" (all positive); throws DatasetError naming \p what.
ImageShape parseShape(const std::string& text, const std::string& what);

/// Memory layout of 4-D image arrays in the source.
enum class Layout { NCHW, NHWC };

/// How to open a source.
struct OpenOptions {
  /// "" (detect from the files), "idx", "cifar10", "cifar100", "npy",
  /// "npz" or "bin".
  std::string format;
  /// Layout of 4-D image arrays (IDX, NumPy).
  Layout layout = Layout::NCHW;
  /// Image shape of a bin input file (required for "bin").
  std::optional<ImageShape> shape;
  /// Member names in an .npz; "" picks the only 3-D/4-D array (images) and
  /// the only 1-D array (labels).
  std::string imagesKey, labelsKey;
  /// Number of classes; labels must lie in [0, classes). 0: the format's
  /// own (10 for CIFAR-10, 100 or 20 for CIFAR-100) or unchecked.
  int64_t classes = 0;
  /// CIFAR-100: use the 20 coarse labels instead of the 100 fine ones.
  bool coarseLabels = false;
  /// Allow a source without labels (torch2hpvm-dataset info).
  bool labelsOptional = false;
};

/// A dataset read front to back in bounded memory.
class Source {
public:
  virtual ~Source();
  /// Format name: "idx", "cifar10", "cifar100", "npy", "npz" or "bin".
  const std::string& format() const { return format_; }
  /// The files (or archive members) read, for messages and manifests.
  const std::string& description() const { return description_; }
  /// File named in messages about images.
  const std::string& imagesPath() const { return imagesPath_; }
  /// File named in messages about labels ("" when there are none).
  const std::string& labelsPath() const { return labelsPath_; }
  /// Number of samples.
  int64_t count() const { return count_; }
  /// Shape of one image as converted (channels first).
  const ImageShape& shape() const { return shape_; }
  /// Whether labels are present.
  bool hasLabels() const { return !labelsPath_.empty(); }
  /// Upper bound of label values checked while reading; 0 if unchecked.
  int64_t classes() const { return classes_; }
  /// Element type of the stored images: "uint8", "float32" or "float64".
  const std::string& imageType() const { return imageType_; }

  /// Reads the next \p n samples in file order: images as float32 NCHW raw
  /// values (uint8 pixels become 0..255), labels as int32 (left untouched
  /// when there are none). Throws DatasetError on truncated or corrupt data
  /// and on labels out of range, naming the file, sample and value.
  void read(int64_t n, float* images, int32_t* labels);
  /// Number of samples read so far.
  int64_t position() const { return position_; }

protected:
  Source() = default;
  /// Reads \p n samples starting at position() (bounds already checked):
  /// images as in read(), labels as stored (checked by read()).
  virtual void readSamples(int64_t n, float* images, int64_t* labels) = 0;
  /// Called when the last sample has been read: verifies that no data
  /// follows it (streams whose size was unknown up front).
  virtual void finish() {}
  /// Throws the out-of-range error for label \p value of sample \p index.
  [[noreturn]] void badLabel(int64_t index, int64_t value) const;

  std::string format_, description_, imagesPath_, labelsPath_, imageType_;
  int64_t count_ = 0, classes_ = 0, position_ = 0;
  ImageShape shape_;

private:
  std::vector<int64_t> labelScratch_;
};

/// Opens \p paths as one dataset (for example an IDX images file and its
/// labels file, several CIFAR batches, two .npy files, one .npz, or an HPVM
/// input.bin with its labels.bin). Headers and file sizes are validated
/// here; errors name the file and what is wrong.
std::unique_ptr<Source> openSource(const std::vector<std::string>& paths,
                                   const OpenOptions& options);

/// Format detected for one file ("idx", "npy", "npz", "bin", "cifar10",
/// "cifar100"), or "" when unknown.
std::string detectFormat(const std::string& path);

/// The HPVM labels file next to an inputs file ("tune_input.bin" ->
/// "tune_labels.bin", "x_input.bin" -> "x_labels.bin", "input.bin" ->
/// "labels.bin"); "" when the name follows no convention.
std::string labelsPathFor(const std::string& inputPath);

} // namespace hpvm::ds

#endif // HPVM_DS_DATASET_H
