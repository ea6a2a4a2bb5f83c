// Info.h - statistics of a dataset (torch2hpvm-dataset info): count, shape,
// value range, per-channel mean and deviation, label histogram.
#ifndef HPVM_DS_INFO_H
#define HPVM_DS_INFO_H

#include "hpvm_ds/Dataset.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hpvm::ds {

/// Statistics gathered by inspect().
struct DatasetInfo {
  std::string format, description, imagesPath, labelsPath, imageType;
  int64_t count = 0;
  ImageShape shape;
  /// Range of the raw values (NaN and infinities excluded).
  double minValue = 0, maxValue = 0;
  /// Values that are NaN or infinite.
  int64_t nonFinite = 0;
  /// Per channel: mean and standard deviation of the raw values.
  std::vector<double> channelMean, channelStd;
  /// histogram[k] = images labelled k (empty without labels).
  std::vector<int64_t> histogram;
};

/// Reads all of \p source (from its current position) and summarises it.
DatasetInfo inspect(Source& source);

} // namespace hpvm::ds

#endif // HPVM_DS_INFO_H
