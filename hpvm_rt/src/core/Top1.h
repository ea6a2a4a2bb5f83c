// Top1.h - HPVM's top-1 prediction, which every accuracy of hpvm_rt counts
// with (the tensor API's, the driver's and the tuner's).
#ifndef HPVM_RT_CORE_TOP1_H
#define HPVM_RT_CORE_TOP1_H

#include <cstdint>

namespace hpvm::rt {

/// HPVM's top-1 prediction (computeAccuracy3): the first index of the
/// largest of the \p classes scores in \p row.
inline int64_t top1(const float* row, int64_t classes) {
  int64_t best = 0;
  for (int64_t c = 1; c < classes; ++c)
    if (row[best] < row[c])
      best = c;
  return best;
}

} // namespace hpvm::rt

#endif // HPVM_RT_CORE_TOP1_H
