// MeasureCache.h - the measurement cache behind --resume: every
// measurement of a tune-search run, kept in its state directory and replayed
// by a later run with the same program and settings.
#ifndef HPVM_RT_TUNER_MEASURECACHE_H
#define HPVM_RT_TUNER_MEASURECACHE_H

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace hpvm::rt::tuner {

/// Every measurement of a run, appended to STATE/measurements.jsonl as it
/// is made (outputs of profiling passes in STATE/outputs/), keyed by what
/// was measured and how many times the same thing was measured before. A
/// later run with the same program and settings replays them instead of
/// measuring again: an interrupted run resumes where it stopped and a
/// second run with the same seed and budget writes the same file.
class MeasureCache {
public:
  /// Opens the cache in \p dir for a run described by \p context (its
  /// first line): the records of an earlier run with the same context are
  /// kept unless \p fresh; with \p resume they must exist. Reports the
  /// reused measurements unless \p quiet. Throws UserError.
  MeasureCache(const std::string& dir, const nlohmann::json& context,
               bool fresh, bool resume, bool quiet);
  ~MeasureCache();
  MeasureCache(const MeasureCache&) = delete;
  MeasureCache& operator=(const MeasureCache&) = delete;

  /// The unique key of the next measurement described by \p desc.
  std::string key(const std::string& desc);
  /// The record kept under \p key, or nullptr.
  const nlohmann::json* find(const std::string& key) const;
  /// Appends \p record under \p key (and \p outputs, if given, to a file
  /// of its own that the record names). Throws UserError.
  void add(const std::string& key, nlohmann::json record,
           const std::vector<float>* outputs = nullptr);
  /// The \p count outputs \p record names. Throws UserError.
  std::vector<float> outputs(const nlohmann::json& record, size_t count) const;
  /// Measurements added by this run, and reused from an earlier one.
  size_t added() const { return added_; }
  size_t reused() const { return reused_; }
  /// Counts one reused measurement.
  void noteReuse() { ++reused_; }

private:
  std::string dir_;
  std::map<std::string, nlohmann::json> records_;
  std::map<std::string, int> occurrences_;
  std::FILE* file_ = nullptr;
  size_t added_ = 0, reused_ = 0;
};

} // namespace hpvm::rt::tuner

#endif // HPVM_RT_TUNER_MEASURECACHE_H
