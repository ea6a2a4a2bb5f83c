// KnobTimer.h - the time of one (fused node, knob) on this machine, as
// tune-search and bench-knobs both take it: node-timed probes against exact
// timings taken between them.
#ifndef HPVM_RT_TUNER_KNOBTIMER_H
#define HPVM_RT_TUNER_KNOBTIMER_H

#include "command/ProgramRunner.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hpvm::rt::tuner {

/// Relative spread of \p v: interquartile range over median (0 for fewer
/// than four values).
double spread(std::vector<double> v);

/// Per-fused-node times of one node-timed pass over full batches.
struct NodeTimes {
  std::vector<double> nodeMs;     ///< Median ms per batch of each node.
  std::vector<double> nodeSpread; ///< spread() of each node's batch times.
  double batchMs = 0;             ///< Median ms of a whole batch.
};

/// The node times of pass \p r over \p images images in batches of
/// \p batch; a final partial batch is left out (unless it is the only one).
NodeTimes nodeTimesOf(const PassResult& r, int64_t images, int64_t batch);

/// A (fused node, knob) pair: index into the program's fused nodes, knob id.
struct KnobPair {
  size_t node = 0;
  int knobId = 0;
};

/// What a probe runs.
enum class ProbeKind {
  Exact, ///< The exact program (the reference).
  Knob,  ///< The pair's knob on its node, every other node exact.
  Again, ///< The same as Knob, after a noisy measurement.
};

/// Runs one node-timed pass of the program as \p kind says (\p pair is
/// ignored for Exact). May throw UserError when the knob cannot run.
using ProbeFn = std::function<NodeTimes(ProbeKind kind, const KnobPair& pair)>;

/// The measured cost of one (node, knob).
struct KnobCost {
  double nodeMs = 0;    ///< The node's median ms per batch with the knob.
  double nextMs = 0;    ///< Change of the next node's time (layout or
                        ///< precision changes it pays for), ms.
  double deltaMs = 0;   ///< Change of the node's and the next node's time
                        ///< against the exact timings taken between the
                        ///< probes (negative: faster); tune-search's cost.
  double spread = 0;    ///< The node's spread in the kept measurement.
  bool noisy = false;   ///< Spread over 20% even after a second try.
  int timedAs = 0;      ///< The knob whose timing this one takes (same
                        ///< node, variant, precision and rate), or 0.
  std::string error;    ///< What running the knob threw (a UserError).
  bool skipped = false; ///< Not timed: \c stop said so first.
};

/// Times (fused node, knob) pairs as tune-search does: each measurement
/// is \c repeats probes (per-node medians of their medians); every pair's
/// cost is the change of its node and the next one against the exact
/// reference, refreshed every 16 probes so that slow drift cancels; a
/// noisy measurement is taken again and the steadier one kept.
class KnobTimer {
public:
  KnobTimer(size_t nodes, ProbeFn probe, int repeats = 1);

  /// Measures the exact program three times: the reference of every cost.
  void measureExact();
  /// One more measurement of the exact program, the reference left as it
  /// is (did the machine's speed move while the knobs were timed?).
  NodeTimes measureExactAgain() { return measure(ProbeKind::Exact, {}); }
  /// Median ms per batch of each node, and its spread, in the exact program.
  const std::vector<double>& exactNodeMs() const { return exactNodeMs_; }
  const std::vector<double>& exactSpread() const { return exactSpread_; }
  /// Median ms of a whole batch of the exact program.
  double exactBatchMs() const { return exactBatchMs_; }

  /// Costs of \p pairs, in their order (measureExact() first). Unless
  /// \p everyOffset, knobs that differ from an earlier timed one only in
  /// their offset take its time. A pair whose probe throws UserError
  /// gets the message as its error; the others go on. With \p progress, a
  /// progress bar is drawn on a terminal. Once \p stop (if given) returns
  /// true, the pairs not yet timed are left \c skipped.
  std::vector<KnobCost> time(const std::vector<KnobPair>& pairs,
                             bool everyOffset, bool progress,
                             const std::function<bool()>& stop = {});

private:
  NodeTimes measure(ProbeKind kind, const KnobPair& pair);

  size_t nodes_;
  ProbeFn probe_;
  int repeats_;
  std::vector<double> exactNodeMs_, exactSpread_;
  double exactBatchMs_ = 0;
};

} // namespace hpvm::rt::tuner

#endif // HPVM_RT_TUNER_KNOBTIMER_H
