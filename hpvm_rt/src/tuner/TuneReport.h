// TuneReport.h - tune-search's output files: the plot drawn from the JSON
// record. (The configuration file, the record and the summary are written
// by TuneSession::writeOutputs, defined in TuneReport.cpp.)
#ifndef HPVM_RT_TUNER_TUNEREPORT_H
#define HPVM_RT_TUNER_TUNEREPORT_H

#include "tuner/TuneOptions.h"

namespace hpvm::rt::tuner {

/// Runs the plotting script (opts.plotScript, with opts.plotPython) on the
/// JSON record; a failure is reported, not fatal (the configuration file is
/// what matters).
void drawPlot(const TuneOptions& opts);

} // namespace hpvm::rt::tuner

#endif // HPVM_RT_TUNER_TUNEREPORT_H
