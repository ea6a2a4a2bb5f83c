// Search.cpp - NSGA-II with constraint domination over categorical genes,
// Pareto fronts and rank statistics.
#include "tuner/Search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_set>

namespace hpvm::rt::tuner {

std::string genomeKey(const Genome& g) {
  std::string key;
  for (size_t i = 0; i < g.size(); ++i) {
    if (i)
      key += '.';
    key += std::to_string(g[i]);
  }
  return key;
}

bool dominates(const Point& a, const Point& b) {
  return a.loss <= b.loss && a.speedup >= b.speedup &&
         (a.loss < b.loss || a.speedup > b.speedup);
}

std::vector<size_t> paretoFront(const std::vector<Point>& points,
                                double maxLoss) {
  std::vector<size_t> order;
  for (size_t i = 0; i < points.size(); ++i)
    if (points[i].loss <= maxLoss)
      order.push_back(i);
  // By loss, then speedup descending, then first occurrence: a sweep keeps
  // each point faster than every point of smaller or equal loss before it.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (points[a].loss != points[b].loss)
      return points[a].loss < points[b].loss;
    return points[a].speedup > points[b].speedup;
  });
  std::vector<size_t> front;
  double best = -std::numeric_limits<double>::infinity();
  for (size_t i : order)
    if (points[i].speedup > best) {
      front.push_back(i);
      best = points[i].speedup;
    }
  return front;
}

// --- Generator
// ----------------------------------------------------------------

Rng::Rng(uint64_t seed) {
  for (uint64_t& s : s_) {
    seed += 0x9e3779b97f4a7c15ULL;
    uint64_t z = seed;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    s = z ^ (z >> 31);
  }
}

uint64_t Rng::next() {
  auto rotl = [](uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  uint64_t result = rotl(s_[1] * 5, 7) * 9;
  uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

uint64_t Rng::below(uint64_t n) {
  // Rejection sampling: no modulo bias, same sequence everywhere.
  uint64_t limit = std::numeric_limits<uint64_t>::max() -
                   std::numeric_limits<uint64_t>::max() % n;
  uint64_t x;
  do
    x = next();
  while (x >= limit);
  return x % n;
}

double Rng::real() { return double(next() >> 11) * 0x1.0p-53; }

// --- NSGA-II
// --------------------------------------------------------------------

namespace {

struct Member {
  size_t index; ///< Into the archive.
  int rank = 0;
  double crowding = 0;
};

/// Constraint domination: a feasible point beats an infeasible one; two
/// infeasible points compare by loss; two feasible ones by dominance.
bool beats(const Point& a, const Point& b, double maxLoss) {
  bool fa = a.loss <= maxLoss, fb = b.loss <= maxLoss;
  if (fa != fb)
    return fa;
  if (!fa)
    return a.loss < b.loss;
  return dominates(a, b);
}

/// Non-dominated sorting and crowding distances of \p members (in place).
void rankMembers(std::vector<Member>& members,
                 const std::vector<Evaluated>& archive, double maxLoss) {
  size_t n = members.size();
  std::vector<std::vector<size_t>> dominated(n);
  std::vector<int> count(n, 0);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      if (i == j)
        continue;
      const Point& a = archive[members[i].index].point;
      const Point& b = archive[members[j].index].point;
      if (beats(a, b, maxLoss))
        dominated[i].push_back(j);
      else if (beats(b, a, maxLoss))
        ++count[i];
    }
  std::vector<size_t> current;
  for (size_t i = 0; i < n; ++i)
    if (count[i] == 0)
      current.push_back(i);
  int rank = 0;
  while (!current.empty()) {
    // Crowding distance within this front, both objectives normalised.
    for (int objective = 0; objective < 2; ++objective) {
      auto value = [&](size_t i) {
        const Point& p = archive[members[i].index].point;
        return objective == 0 ? p.loss : p.speedup;
      };
      std::vector<size_t> sorted = current;
      std::stable_sort(sorted.begin(), sorted.end(),
                       [&](size_t a, size_t b) { return value(a) < value(b); });
      double span = value(sorted.back()) - value(sorted.front());
      members[sorted.front()].crowding = members[sorted.back()].crowding =
          std::numeric_limits<double>::infinity();
      if (span > 0)
        for (size_t k = 1; k + 1 < sorted.size(); ++k)
          members[sorted[k]].crowding +=
              (value(sorted[k + 1]) - value(sorted[k - 1])) / span;
    }
    std::vector<size_t> next;
    for (size_t i : current) {
      members[i].rank = rank;
      for (size_t j : dominated[i])
        if (--count[j] == 0)
          next.push_back(j);
    }
    std::sort(next.begin(), next.end());
    current = std::move(next);
    ++rank;
  }
}

bool better(const Member& a, const Member& b) {
  if (a.rank != b.rank)
    return a.rank < b.rank;
  return a.crowding > b.crowding;
}

} // namespace

std::vector<Evaluated>
nsga2(const std::vector<GeneSpace>& genes, const std::vector<Genome>& seeds,
      const SearchOptions& opts,
      const std::function<Point(const Genome&)>& evaluate,
      const std::function<void(const SearchProgress&)>& progress) {
  Rng rng(opts.seed);
  std::vector<Evaluated> archive;
  std::unordered_set<std::string> seen;
  SearchProgress status;
  status.budget = opts.budget;
  bool stopped = false;
  auto add = [&](const Genome& g) -> bool {
    if (int64_t(archive.size()) >= opts.budget || stopped ||
        (opts.stop && !archive.empty() && (stopped = opts.stop())) ||
        !seen.insert(genomeKey(g)).second)
      return false;
    archive.push_back({g, evaluate(g)});
    const Point& p = archive.back().point;
    if (p.loss <= opts.maxLoss && p.speedup > status.best.speedup)
      status.best = p;
    status.evaluated = int64_t(archive.size());
    if (progress)
      progress(status);
    return true;
  };

  double totalWeight = 0;
  for (const GeneSpace& g : genes)
    totalWeight += g.choices > 1 ? g.weight : 0;
  // Mutates one gene, chosen by weight; the new value is an ordinal
  // neighbour of the old one with probability 0.6, else any other choice.
  auto mutateOne = [&](Genome& g) {
    if (totalWeight <= 0)
      return;
    double r = rng.real() * totalWeight;
    size_t i = 0;
    for (; i + 1 < genes.size(); ++i) {
      double w = genes[i].choices > 1 ? genes[i].weight : 0;
      if (r < w)
        break;
      r -= w;
    }
    while (genes[i].choices <= 1)
      i = (i + 1) % genes.size();
    const GeneSpace& space = genes[i];
    const std::vector<uint16_t>& near = space.neighbours[g[i]];
    if (!near.empty() && rng.real() < 0.6) {
      g[i] = near[rng.below(near.size())];
    } else {
      uint16_t v = uint16_t(rng.below(uint64_t(space.choices - 1)));
      g[i] = v >= g[i] ? uint16_t(v + 1) : v;
    }
  };
  // Mutates until the genome is new (bounded tries).
  auto fresh = [&](Genome g) -> std::pair<Genome, bool> {
    for (int tries = 0; tries < 64; ++tries) {
      if (!seen.count(genomeKey(g)))
        return {g, true};
      mutateOne(g);
    }
    return {g, false};
  };

  Genome exact(genes.size(), 0);
  add(exact);
  for (const Genome& s : seeds)
    add(s);

  int64_t remaining = opts.budget - int64_t(archive.size());
  int population = opts.population;
  if (population <= 0)
    population = int(std::clamp<int64_t>(opts.budget / 20, 16, 96));
  // Fill the first population with mutants of the seeds.
  std::vector<size_t> parents(archive.size());
  std::iota(parents.begin(), parents.end(), 0);
  for (int stall = 0;
       int64_t(parents.size()) < population && remaining > 0 && stall < 256;) {
    Genome g = archive[parents[rng.below(parents.size())]].genome;
    int changes = 1 + int(rng.below(3));
    for (int k = 0; k < changes; ++k)
      mutateOne(g);
    auto [child, ok] = fresh(g);
    if (ok && add(child)) {
      parents.push_back(archive.size() - 1);
      remaining = opts.budget - int64_t(archive.size());
    } else {
      ++stall;
    }
  }

  std::vector<Member> pop;
  for (size_t i : parents)
    pop.push_back({i});
  rankMembers(pop, archive, opts.maxLoss);
  // NSGA-II generations until \p limit genomes were evaluated (or eight
  // generations in a row produced nothing new).
  auto evolve = [&](int64_t limit) {
    for (int stalls = 0; int64_t(archive.size()) < limit && stalls < 8;) {
      ++status.generation;
      auto tournament = [&]() -> const Member& {
        const Member& a = pop[rng.below(pop.size())];
        const Member& b = pop[rng.below(pop.size())];
        return better(a, b) ? a : b;
      };
      std::vector<Member> merged = pop;
      int produced = 0;
      for (int k = 0; k < population && int64_t(archive.size()) < opts.budget;
           ++k) {
        const Genome& pa = archive[tournament().index].genome;
        const Genome& pb = archive[tournament().index].genome;
        Genome child = pa;
        if (rng.real() < 0.9)
          for (size_t i = 0; i < child.size(); ++i)
            if (rng.below(2))
              child[i] = pb[i];
        // Each gene mutates with probability about 1/n; at least one does.
        mutateOne(child);
        for (size_t i = 1; i < genes.size(); ++i)
          if (rng.real() < 1.0 / double(genes.size()))
            mutateOne(child);
        auto [g, ok] = fresh(child);
        if (ok && add(g)) {
          merged.push_back({archive.size() - 1});
          ++produced;
        }
      }
      stalls = produced ? 0 : stalls + 1;
      rankMembers(merged, archive, opts.maxLoss);
      std::stable_sort(merged.begin(), merged.end(), better);
      if (int64_t(merged.size()) > population)
        merged.resize(size_t(population));
      pop = std::move(merged);
    }
  };

  // Polish: local search along the knob order around every front point
  // (each gene set to exact or moved to an ordinal neighbour), repeated
  // while it finds new front points and the budget lasts.
  auto polish = [&] {
    for (bool improved = true;
         improved && int64_t(archive.size()) < opts.budget;) {
      improved = false;
      std::vector<Point> points;
      for (const Evaluated& e : archive)
        points.push_back(e.point);
      std::vector<size_t> front = paretoFront(points, opts.maxLoss);
      ++status.generation;
      for (size_t i : front) {
        for (size_t gi = 0; gi < genes.size(); ++gi) {
          Genome base = archive[i].genome;
          std::vector<uint16_t> moves = genes[gi].neighbours[base[gi]];
          if (base[gi] != 0)
            moves.push_back(0);
          for (uint16_t v : moves) {
            Genome g = base;
            g[gi] = v;
            if (!add(g))
              continue;
            // A new point that no front point dominates joins the front.
            const Point& p = archive.back().point;
            improved |= p.loss <= opts.maxLoss &&
                        std::none_of(front.begin(), front.end(), [&](size_t f) {
                          return !dominates(p, archive[f].point) &&
                                 archive[f].point.loss <= p.loss &&
                                 archive[f].point.speedup >= p.speedup;
                        });
          }
          if (int64_t(archive.size()) >= opts.budget)
            return;
        }
      }
    }
  };

  // Three quarters of the budget evolve, then the front is polished; what
  // a converged polish leaves evolves again, and the end is polished too.
  evolve(opts.budget - opts.budget / 4);
  polish();
  evolve(opts.budget);
  polish();
  return archive;
}

// --- Statistics
// -------------------------------------------------------------------

namespace {

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]])
      ++j;
    double avg = (double(i) + double(j)) / 2 + 1;
    for (size_t k = i; k <= j; ++k)
      r[order[k]] = avg;
    i = j + 1;
  }
  return r;
}

} // namespace

Moments moments(const std::vector<double>& x, const std::vector<double>& y) {
  Moments m;
  size_t n = std::min(x.size(), y.size());
  if (n == 0)
    return m;
  for (size_t i = 0; i < n; ++i) {
    m.mx += x[i];
    m.my += y[i];
  }
  m.mx /= double(n);
  m.my /= double(n);
  for (size_t i = 0; i < n; ++i) {
    m.sxy += (x[i] - m.mx) * (y[i] - m.my);
    m.sxx += (x[i] - m.mx) * (x[i] - m.mx);
    m.syy += (y[i] - m.my) * (y[i] - m.my);
  }
  return m;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  size_t n = std::min(a.size(), b.size());
  if (n < 2)
    return 0;
  Moments m = moments(ranks({a.begin(), a.begin() + long(n)}),
                      ranks({b.begin(), b.begin() + long(n)}));
  return m.sxx > 0 && m.syy > 0 ? m.sxy / std::sqrt(m.sxx * m.syy) : 0;
}

LineFit fitLine(const std::vector<double>& x, const std::vector<double>& y) {
  Moments m = moments(x, y);
  LineFit fit;
  if (m.sxx <= 0) {
    fit.a = m.my - m.mx;
    return fit;
  }
  fit.b = m.sxy / m.sxx;
  fit.a = m.my - fit.b * m.mx;
  return fit;
}

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + long(n / 2), v.end());
  double hi = v[n / 2];
  if (n % 2)
    return hi;
  return (*std::max_element(v.begin(), v.begin() + long(n / 2)) + hi) / 2;
}

} // namespace hpvm::rt::tuner
