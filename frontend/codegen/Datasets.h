// Datasets.h - the tune and test sets (HPVM bin files, or NumPy .npy
// arrays of the model input's shape): locating labels by HPVM's naming,
// checking sizes and labels against the model, and writing a .npy set as
// HPVM's bin files.
#ifndef TORCH2HPVM_FRONTEND_CODEGEN_DATASETS_H
#define TORCH2HPVM_FRONTEND_CODEGEN_DATASETS_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hpvm::fe {

/// One checked dataset: float32 N x C x H x W inputs, int32 labels.
struct Dataset {
  std::string role;       ///< "tune" or "test".
  std::string inputPath;  ///< As given.
  std::string labelsPath; ///< As given or derived; "" when there are none.
  int64_t count = 0;      ///< Images (N).
  int64_t inputBytes = 0; ///< Bytes of float32 inputs (N images).
  bool numpy = false;     ///< A .npy array (and labels), not bin files.
  int64_t channels = 0, height = 0, width = 0; ///< The model's image.
};

/// The dims of the images in \p path when it is a NumPy .npy file (by its
/// magic string): {N, C, H, W} of its N x C x H x W array, {N, 1, H, W} of
/// an N x H x W one; none for any other file, or one that cannot be read
/// as images (checkDataset() says why).
std::optional<std::vector<int64_t>> numpyImageDims(const std::string& role,
                                                   const std::string& path);

/// The labels file HPVM pairs with \p inputPath: the last "input" in the file
/// name becomes "labels" (tune_input.bin -> tune_labels.bin). Throws
/// UserError when the name holds no "input".
std::string defaultLabelsPath(const std::string& inputPath,
                              const std::string& role);

/// Checks dataset \p role ("tune"/"test"): the input exists and holds a
/// positive whole number of C x H x W float32 images (a .npy: N of them,
/// float32 or float64, labels a .npy of N integers), the labels file (given,
/// or derived with defaultLabelsPath() when \p labelsPath is empty, if that
/// exists, unless \p derive is false) holds exactly one int32 per image,
/// each in [0, numClasses) (the classes of output 0). Throws UserError with
/// the file, expected and actual sizes.
Dataset checkDataset(const std::string& role, const std::string& inputPath,
                     const std::string& labelsPath, int64_t channels,
                     int64_t height, int64_t width, int64_t numClasses,
                     bool derive = true);

/// Writes \p ds, a checked .npy set, as HPVM's float32 inputs \p inputTo
/// and (where it has labels) int32 labels \p labelsTo, in bounded memory;
/// labels out of [0, numClasses) are a UserError naming the sample.
void writeNumpyAsBin(const Dataset& ds, const std::string& inputTo,
                     const std::string& labelsTo, int64_t numClasses);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_CODEGEN_DATASETS_H
