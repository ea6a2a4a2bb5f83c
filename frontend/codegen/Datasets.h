// Datasets.h - the tune and test sets (HPVM bin files): locating labels by
// HPVM's naming, and checking sizes and labels against the model.
#ifndef TORCH2HPVM_FRONTEND_CODEGEN_DATASETS_H
#define TORCH2HPVM_FRONTEND_CODEGEN_DATASETS_H

#include <cstdint>
#include <string>

namespace hpvm::fe {

/// One checked dataset: float32 N x C x H x W inputs, int32 labels.
struct Dataset {
  std::string role;       ///< "tune" or "test".
  std::string inputPath;  ///< As given.
  std::string labelsPath; ///< As given or derived; "" when there are none.
  int64_t count = 0;      ///< Images (N).
  int64_t inputBytes = 0; ///< Size of the input file.
};

/// The labels file HPVM pairs with \p inputPath: the last "input" in the file
/// name becomes "labels" (tune_input.bin -> tune_labels.bin). Throws
/// UserError when the name holds no "input".
std::string defaultLabelsPath(const std::string& inputPath,
                              const std::string& role);

/// Checks dataset \p role ("tune"/"test"): the input exists and holds a
/// positive whole number of C x H x W float32 images, the labels file (given,
/// or derived with defaultLabelsPath() when \p labelsPath is empty, if that
/// exists, unless \p derive is false) holds exactly one int32 per image,
/// each in [0, numClasses) (the classes of output 0). Throws UserError with
/// the file, expected and actual sizes.
Dataset checkDataset(const std::string& role, const std::string& inputPath,
                     const std::string& labelsPath, int64_t channels,
                     int64_t height, int64_t width, int64_t numClasses,
                     bool derive = true);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_CODEGEN_DATASETS_H
