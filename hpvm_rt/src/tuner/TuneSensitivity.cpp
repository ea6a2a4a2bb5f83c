// TuneSensitivity.cpp - the sensitivity report of a tune-search run: per
// fused node, the knob that saves the most time there alone and the QoS
// loss it costs, in the JSON record, the summary and the plot.
#include "config/Config.h"
#include "tuner/TuneSession.h"

#include <fmt/format.h>

#include <cstdio>

namespace hpvm::rt::tuner {

using json = nlohmann::json;

json TuneSession::sensitivityJson() const {
  // The best knob of a node: the profiled one that saves the most (ties:
  // the smaller loss); a node none of whose knobs was profiled has none.
  std::vector<const PairInfo*> best(nodes_.size(), nullptr);
  for (const PairInfo& p : pairs_) {
    if (!p.profiled)
      continue;
    const PairInfo*& b = best[p.node];
    if (!b || p.deltaMs < b->deltaMs ||
        (p.deltaMs == b->deltaMs && p.loss < b->loss))
      b = &p;
  }
  json rows = json::array();
  for (size_t f = 0; f < nodes_.size(); ++f) {
    json row = {{"node", nodes_[f].ordinal},
                {"exact_ms", exactNodeMs_.empty() ? 0.0 : exactNodeMs_[f]},
                {"keep_exact", bool(keepExact_[f])}};
    if (const PairInfo* b = best[f]) {
      const int id = knobs_[f][size_t(b->choice)];
      row["knob"] = id;
      row["knob_name"] = knobConfName(id);
      row["saving_ms"] = -b->deltaMs;
      row["saving_share"] = exactBatchMs_ > 0 ? -b->deltaMs / exactBatchMs_ : 0;
      row["loss"] = b->loss;
    } else {
      row["knob"] = nullptr;
    }
    rows.push_back(row);
  }
  return rows;
}

void TuneSession::printSensitivity(const json& rows) const {
  std::printf("sensitivity (per node, the knob that saves most there alone; "
              "time per %lld-image batch):\n",
              (long long)timingBatch_);
  std::printf("%5s %9s  %-12s %9s %7s %9s\n", "node", "exact ms", "best knob",
              "saves ms", "batch%", "loss");
  for (const json& r : rows) {
    const int node = r["node"].get<int>();
    const double exact = r["exact_ms"].get<double>();
    if (r["knob"].is_null()) {
      std::printf("%5d %9.3f  %-12s\n", node, exact,
                  r["keep_exact"].get<bool>() ? "(kept exact)"
                                              : "(none saves)");
      continue;
    }
    std::string knob = fmt::format("{}_{}", r["knob_name"].get<std::string>(),
                                   r["knob"].get<int>());
    std::printf("%5d %9.3f  %-12s %9.3f %6.1f%% %9.2f\n", node, exact,
                knob.c_str(), r["saving_ms"].get<double>(),
                100 * r["saving_share"].get<double>(), r["loss"].get<double>());
  }
}

} // namespace hpvm::rt::tuner
