// Convert.h - convert a dataset Source to HPVM's bin format (float32 NCHW
// little-endian inputs, int32 labels), with scaling, per-channel
// normalisation, shuffling, a limit and tune/test splits.
#ifndef HPVM_DS_CONVERT_H
#define HPVM_DS_CONVERT_H

#include "hpvm_ds/Dataset.h"

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hpvm::ds {

/// A scale factor written as a number ("0.5") or a fraction ("1/255").
/// Applied in float32 as `x * num / den` (the division is skipped when den
/// is 1), so "1/255" gives exactly NumPy's `x.astype(float32) / 255`.
struct Scale {
  float num = 1, den = 1;
  /// The text it was parsed from ("1" by default).
  std::string text = "1";
};

/// Parses --scale; throws DatasetError for anything but a positive finite
/// number or fraction.
Scale parseScale(const std::string& text);

/// Parses --normalize "MEAN,STD" (every channel) or "M1,..,Mc,S1,..,Sc" for
/// an image of \p channels channels into (means, stds), one per channel.
std::pair<std::vector<float>, std::vector<float>>
parseNormalize(const std::string& text, int64_t channels);

/// One output pair: NAME_input.bin and NAME_labels.bin with \p count images.
struct SplitPart {
  std::string name;
  int64_t count = 0;
};

/// The longest part name (--name, --split): NAME_labels.bin and its
/// temporary name stay far below a file name's 255 bytes.
constexpr size_t kMaxPartName = 100;

/// True if \p name can name an output pair: 1 to kMaxPartName letters,
/// digits and '_' (no path, no hidden file).
bool isPartName(const std::string& name);

/// Parses --split "tune=5000,test=5000" (names: isPartName(), counts > 0,
/// no name twice).
std::vector<SplitPart> parseSplit(const std::string& text);

/// What convert() does.
struct ConvertOptions {
  /// Output directory (created if missing; existing files are replaced).
  std::string outDir;
  /// One pair NAME_input.bin/NAME_labels.bin with every image; exclusive
  /// with split.
  std::string name;
  /// Consecutive parts in output order; empty (and no name): HPVM's
  /// convention, tune = first half and test = second half.
  std::vector<SplitPart> split;
  Scale scale;
  /// Normalisation after scaling, (x - mean[c]) / std[c]; empty: none.
  std::vector<float> mean, std;
  /// Shuffle seed: the images are permuted (Fisher-Yates over a
  /// std::mt19937_64 seeded with it, identical on every platform) before
  /// the limit and the split.
  std::optional<uint64_t> shuffleSeed;
  /// Use only the first N images (after shuffling); -1: all.
  int64_t limit = -1;
  /// Also write dataset.json describing the conversion.
  bool manifest = true;
  /// Images per read chunk; 0 picks up to 1024 images and about 16 MiB of
  /// float32 per chunk. Memory is O(chunk) plus 4 bytes per image for the
  /// labels and, with shuffling, 8 more for the permutation.
  int64_t chunk = 0;
};

/// One written pair.
struct WrittenPart {
  std::string name, inputPath, labelsPath;
  int64_t count = 0;
};

/// What convert() wrote.
struct ConvertResult {
  std::vector<WrittenPart> parts;
  /// Images of the source not written (after --limit or a short split).
  int64_t unused = 0;
  /// Range of the written values.
  float minValue = 0, maxValue = 0;
};

/// Converts \p source to HPVM's bin format under options.outDir. Writes go
/// to temporary files renamed into place only when everything succeeded:
/// on any error (thrown as DatasetError) nothing is written.
ConvertResult convert(Source& source, const ConvertOptions& options);

} // namespace hpvm::ds

#endif // HPVM_DS_CONVERT_H
