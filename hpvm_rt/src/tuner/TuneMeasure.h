// TuneMeasure.h - how tune-search measures a configuration's time: median
// batch times and timing rounds that disagree.
#ifndef HPVM_RT_TUNER_TUNEMEASURE_H
#define HPVM_RT_TUNER_TUNEMEASURE_H

#include "command/ProgramRunner.h"

#include <cstdint>
#include <vector>

namespace hpvm::rt::tuner {

/// True if timing rounds disagree: their range is over 15% of their
/// median, or (with four or more) their interquartile range over 10%.
bool disagree(const std::vector<double>& ratios);

/// Median over full batches (a final partial batch is left out).
double medianBatchMs(const PassResult& r, int64_t images, int64_t batch);

} // namespace hpvm::rt::tuner

#endif // HPVM_RT_TUNER_TUNEMEASURE_H
