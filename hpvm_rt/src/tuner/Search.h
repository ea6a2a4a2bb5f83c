// Search.h - the tuner's multi-objective optimizer: NSGA-II over a vector of
// categorical genes (one per fused node, each a knob index) with ordinal
// neighbourhoods, a deterministic generator, Pareto utilities and the rank
// statistics the tuner reports. Knows nothing about programs: the tuner and
// the tests give it an objective function.
#ifndef HPVM_RT_TUNER_SEARCH_H
#define HPVM_RT_TUNER_SEARCH_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hpvm::rt::tuner {

/// One choice per gene (index into that gene's choice list; 0 = exact).
using Genome = std::vector<uint16_t>;

/// The key under which a genome is cached and deduplicated ("0.3.0.12").
std::string genomeKey(const Genome& g);

/// A point in objective space: QoS loss (minimised, in points) and speedup
/// over the exact program (maximised).
struct Point {
  double loss = 0;
  double speedup = 1;
};

/// True if \p a dominates \p b (no worse in both objectives, better in one).
bool dominates(const Point& a, const Point& b);

/// Indices of the non-dominated points among \p points whose loss is at most
/// \p maxLoss, sorted by loss ascending (then speedup descending). Exact
/// duplicates keep the first occurrence.
std::vector<size_t> paretoFront(const std::vector<Point>& points,
                                double maxLoss);

/// The values of one gene: how many choices, and for each choice the
/// choices next to it in the knob order (same algorithm and precision, the
/// next rate or offset), which mutation prefers.
struct GeneSpace {
  int choices = 1;
  std::vector<std::vector<uint16_t>> neighbours;
  /// Relative probability that mutation touches this gene (sensitivity:
  /// genes whose knobs save time at little loss are tried more often).
  double weight = 1;
};

/// A small deterministic generator (xoshiro256**, seeded by splitmix64),
/// with its own bounded-integer and real helpers so that a seed gives the
/// same sequence with every compiler and standard library.
class Rng {
public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  /// Uniform in [0, n); n > 0.
  uint64_t below(uint64_t n);
  /// Uniform in [0, 1).
  double real();

private:
  uint64_t s_[4];
};

struct SearchOptions {
  uint64_t seed = 1;
  /// Distinct genomes to evaluate (seeds included).
  int64_t budget = 1000;
  /// Population size; 0 picks one from the budget and the gene count.
  int population = 0;
  /// Points with a larger loss are infeasible: dominated by every feasible
  /// point, ranked among themselves by loss.
  double maxLoss = 1e300;
  /// Checked before each evaluation: true ends the search early (a time
  /// limit); the genomes evaluated so far are returned.
  std::function<bool()> stop;
};

/// One evaluated genome.
struct Evaluated {
  Genome genome;
  Point point;
};

/// What the search reports after each evaluation.
struct SearchProgress {
  int64_t evaluated = 0, budget = 0;
  int generation = 0;
  /// The fastest feasible point so far (speedup 1, loss 0 if none).
  Point best;
};

/// Runs NSGA-II from \p seeds (deduplicated; the exact genome is always
/// added) until \p opts.budget distinct genomes were evaluated or no new
/// genome can be produced. Returns every evaluated genome in evaluation
/// order. Deterministic for a given seed and objective.
std::vector<Evaluated>
nsga2(const std::vector<GeneSpace>& genes, const std::vector<Genome>& seeds,
      const SearchOptions& opts,
      const std::function<Point(const Genome&)>& evaluate,
      const std::function<void(const SearchProgress&)>& progress = {});

/// Means and centred second moments (sums, not divided by n) of two
/// equally long samples.
struct Moments {
  double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
};
Moments moments(const std::vector<double>& x, const std::vector<double>& y);

/// Spearman's rank correlation of two equally long samples (average ranks
/// for ties); 0 when fewer than two values or a constant sample.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

/// Least-squares line y = a + b x; {0, 1} when x is constant.
struct LineFit {
  double a = 0, b = 1;
  double operator()(double x) const { return a + b * x; }
};
LineFit fitLine(const std::vector<double>& x, const std::vector<double>& y);

/// Median of \p v (0 for an empty vector).
double median(std::vector<double> v);

} // namespace hpvm::rt::tuner

#endif // HPVM_RT_TUNER_SEARCH_H
