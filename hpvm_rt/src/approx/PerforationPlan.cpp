// PerforationPlan.cpp - the pieces shared by the approximate convolution
// engines (PerforationPlan.h): how perforation splits into row classes,
// the filter cache, and the blocked engines' input preparation.
#include "approx/PerforationPlan.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

namespace hpvm::rt::approx {

namespace {

using dnnl::memory;

std::atomic<uint64_t> blockedRunCounter{0};

/// Reordered filters, keyed by their layout, their view of the caller's
/// data and a hash of that data (so a filter rewritten in place, or freed
/// and its address reused, is never served stale). Least recently used
/// entries go beyond kFilterCacheBytes.
constexpr size_t kFilterCacheBytes = size_t(256) << 20;
struct FilterEntry {
  memory::desc view, want;
  uint64_t hash;
  memory mem;
  uint64_t lastUse;
};
std::mutex filterMutex;
std::vector<FilterEntry>& filterCache() {
  static std::vector<FilterEntry> cache;
  return cache;
}

} // namespace

uint64_t blockedRuns() { return blockedRunCounter; }

namespace detail {

// A 64-bit hash of n floats' bits, read in 64 fixed chunks in parallel
// (several times cheaper than reordering them: read-only, vectorised).
uint64_t contentHash(const float* data, int64_t n) {
  constexpr int kChunks = 64, kLanes = 16;
  uint64_t chunkHash[kChunks];
  const int64_t per = (n + kChunks - 1) / kChunks;
#pragma omp parallel for schedule(static)
  for (int c = 0; c < kChunks; ++c) {
    const int64_t lo = std::min<int64_t>(n, c * per);
    const int64_t hi = std::min<int64_t>(n, lo + per);
    uint32_t acc[kLanes];
    for (int l = 0; l < kLanes; ++l)
      acc[l] = 0x811c9dc5u + static_cast<uint32_t>(l);
    int64_t i = lo;
    for (; i + kLanes <= hi; i += kLanes)
#pragma omp simd
      for (int l = 0; l < kLanes; ++l) {
        uint32_t v;
        std::memcpy(&v, data + i + l, sizeof v);
        acc[l] = (acc[l] ^ v) * 0x9e3779b1u;
      }
    uint64_t h = 0xcbf29ce484222325ull ^ static_cast<uint64_t>(hi - lo);
    for (; i < hi; ++i) {
      uint32_t v;
      std::memcpy(&v, data + i, sizeof v);
      h = (h ^ v) * 0x100000001b3ull;
    }
    for (int l = 0; l < kLanes; ++l)
      h = (h ^ acc[l]) * 0x100000001b3ull;
    chunkHash[c] = h;
  }
  uint64_t h = 0xcbf29ce484222325ull ^ static_cast<uint64_t>(n);
  for (int c = 0; c < kChunks; ++c)
    h = (h ^ chunkHash[c]) * 0x100000001b3ull;
  return h;
}

using dnnl::memory;

dnnl::engine& cpuEngine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

/// How the kept rows of an axis are computed, with as few convolutions as
/// possible: the residue classes modulo the rate (all but the offset's, one
/// convolution with stride rate each), or, on short axes where that is
/// fewer, the maximal runs of consecutive kept rows (stride 1 each). The
/// whole axis is one class when nothing is skipped.
std::vector<OutputClass> keptClasses(const std::vector<bool>& kept, int rate,
                                     int offset) {
  const int64_t len = static_cast<int64_t>(kept.size());
  if (std::count(kept.begin(), kept.end(), false) == 0)
    return {{0, 1, len}};
  std::vector<OutputClass> classes, runs;
  for (int64_t c = 0; c < rate && c < len; ++c)
    if (c != offset)
      classes.push_back({c, rate, (len - c + rate - 1) / rate});
  for (int64_t i = 0; i < len;) {
    if (!kept[i]) {
      ++i;
      continue;
    }
    int64_t j = i;
    while (j < len && kept[j])
      ++j;
    runs.push_back({i, 1, j - i});
    i = j;
  }
  return runs.size() < classes.size() ? runs : classes;
}

/// Plans the convolution computing rows start, start + step, ... (count)
/// of g. The window of output row t starts at input row
/// (start + t*step)*strideH - padH. oneDNN needs a non-negative top padding;
/// when that first window starts inside the input, either the input view
/// starts there (one more input reorder) or the top padding grows by whole
/// class strides and the extra first rows are computed and dropped,
/// whichever costs less. The bottom padding is trimmed to what the last
/// window reads, so the row count is exact.
ClassPlan planClass(const ConvGeometry& g, const OutputClass& c,
                    int64_t flopsPerShiftedElement) {
  ClassPlan p;
  p.stride = g.strideH * c.step;
  const int64_t begin = c.start * g.strideH - g.padH;
  if (begin > 0) {
    // Rows to drop if the padding absorbs the offset instead.
    const int64_t extra = (begin + p.stride - 1) / p.stride;
    const int64_t wasteFlops =
        extra * g.n * g.k * g.wo * g.cg * g.kh * g.kw * 2;
    const int64_t reorderElems = g.n * g.c * (g.h - begin) * g.w;
    if (wasteFlops > reorderElems * flopsPerShiftedElement) {
      p.shift = begin;
    } else {
      p.first = extra;
      p.padT = extra * p.stride - begin;
    }
  } else {
    p.padT = -begin;
  }
  p.outLen = c.count + p.first;
  // Bottom: pad up to the last window's end, or crop the view when the
  // input reaches a whole stride beyond it (oneDNN would compute more rows).
  p.viewH = g.h - p.shift;
  const int64_t lastEnd = -p.padT + (p.outLen - 1) * p.stride + g.kh - 1;
  if (lastEnd >= p.viewH - 1)
    p.padB = lastEnd - (p.viewH - 1);
  else if (p.viewH - 1 - lastEnd >= p.stride)
    p.viewH = lastEnd + 1;
  return p;
}

/// Right padding of the full (non-perforated) axis, trimmed to what the
/// last window reads.
int64_t padRight(int64_t len, int64_t k, int64_t s, int64_t pad, int64_t out) {
  return std::max<int64_t>(0, -pad + (out - 1) * s + k - 1 - (len - 1));
}

bool isRefImpl(const dnnl::primitive_desc_base& pd) {
  return std::strncmp(pd.impl_info_str(), "ref", 3) == 0;
}

/// The weights dims of g (GOIHW when grouped).
memory::dims weightsDims(const ConvGeometry& g) {
  return g.groups > 1 ? memory::dims{g.groups, g.kg, g.cg, g.kh, g.kw}
                      : memory::dims{g.k, g.c, g.kh, g.kw};
}

/// The filter `user` (n floats at `data`) in layout `want`, reordered once
/// and then served from the cache while its contents are unchanged.
memory cachedFilter(const memory& user, const float* data, int64_t n,
                    const memory::desc& want, dnnl::stream& strm) {
  if (user.get_desc() == want)
    return user;
  const uint64_t hash = contentHash(data, n);
  static uint64_t clock = 0;
  std::lock_guard<std::mutex> lock(filterMutex);
  std::vector<FilterEntry>& cache = filterCache();
  for (FilterEntry& e : cache)
    if (e.hash == hash && e.want == want && e.view == user.get_desc()) {
      e.lastUse = ++clock;
      return e.mem;
    }
  memory out(want, cpuEngine());
  dnnl::reorder(user, out).execute(strm, const_cast<memory&>(user), out);
  strm.wait();
  size_t total = want.get_size();
  for (const FilterEntry& e : cache)
    total += e.want.get_size();
  while (total > kFilterCacheBytes && !cache.empty()) {
    auto oldest =
        std::min_element(cache.begin(), cache.end(),
                         [](const FilterEntry& a, const FilterEntry& b) {
                           return a.lastUse < b.lastUse;
                         });
    total -= oldest->want.get_size();
    cache.erase(oldest);
  }
  cache.push_back({user.get_desc(), want, hash, out, ++clock});
  return out;
}

/// g with rows and columns swapped (column perforation of g is row
/// perforation of this).
ConvGeometry transposed(const ConvGeometry& g) {
  ConvGeometry t = g;
  std::swap(t.h, t.w);
  std::swap(t.kh, t.kw);
  std::swap(t.ho, t.wo);
  std::swap(t.padH, t.padW);
  std::swap(t.strideH, t.strideW);
  return t;
}

std::vector<Source> sourcesOf(const std::vector<bool>& kept,
                              const std::vector<OutputClass>& classes,
                              const std::vector<int64_t>& firsts) {
  const int64_t len = static_cast<int64_t>(kept.size());
  std::vector<Source> src(len);
  for (size_t ci = 0; ci < classes.size(); ++ci) {
    const OutputClass& c = classes[ci];
    for (int64_t t = 0; t < c.count; ++t) {
      Source& s = src[c.start + t * c.step];
      s.cls = static_cast<int>(ci);
      s.t = t + firsts[ci];
    }
  }
  for (int64_t i = 0; i < len; ++i) {
    if (kept[i])
      continue;
    const SkippedSource from = skippedSource(i, len);
    src[i].lo = from.lo;
    src[i].hi = from.hi;
  }
  return src;
}

/// The skipped indices of a perforated axis.
std::vector<int64_t> skippedOf(const std::vector<bool>& kept) {
  std::vector<int64_t> skipped;
  for (size_t i = 0; i < kept.size(); ++i)
    if (!kept[i])
      skipped.push_back(static_cast<int64_t>(i));
  return skipped;
}

void countBlockedRun() { ++blockedRunCounter; }

const float* blockedInput(const BlockedConv& bc, const memory::desc& dense,
                          ScratchPool::Lease& lease, dnnl::stream& strm) {
  // (Rewrapped: the caller's memory may belong to another engine object.)
  memory src(bc.x.get_desc(), cpuEngine(), bc.x.get_data_handle());
  if (src.get_desc() != dense) {
    memory to(dense, cpuEngine(), lease.slot(0, dense.get_size()));
    dnnl::reorder(src, to).execute(strm, src, to);
    strm.wait();
    src = to;
  }
  if (!bc.roundInput)
    return static_cast<const float*>(src.get_data_handle());
  float* to = static_cast<float*>(lease.slot(1, dense.get_size()));
  std::memcpy(to, src.get_data_handle(), dense.get_size());
  bc.roundInput(to, static_cast<int64_t>(dense.get_size() / sizeof(float)));
  return to;
}

} // namespace detail

} // namespace hpvm::rt::approx
