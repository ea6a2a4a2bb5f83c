// Info.cpp - one streaming pass over a Source gathering value range,
// per-channel mean and deviation and the label histogram.
#include "hpvm_ds/Info.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hpvm::ds {

DatasetInfo inspect(Source& source) {
  DatasetInfo info;
  info.format = source.format();
  info.description = source.description();
  info.imagesPath = source.imagesPath();
  info.labelsPath = source.labelsPath();
  info.imageType = source.imageType();
  info.shape = source.shape();
  info.count = source.count() - source.position();
  const ImageShape s = source.shape();
  const int64_t plane = s.h * s.w, elems = s.elems();
  const int64_t chunk = defaultChunk(s);
  std::vector<float> images(static_cast<size_t>(chunk * elems));
  std::vector<int32_t> labels(static_cast<size_t>(chunk));
  std::vector<double> sum(static_cast<size_t>(s.c)),
      sumSq(static_cast<size_t>(s.c));
  std::vector<int64_t> finite(static_cast<size_t>(s.c));
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (int64_t done = 0; done < info.count; done += chunk) {
    int64_t k = std::min(chunk, info.count - done);
    source.read(k, images.data(), labels.data());
    // Loop: images; channels; pixels (double sums per channel plane).
    for (int64_t r = 0; r < k; ++r)
      for (int64_t c = 0; c < s.c; ++c) {
        const float* p = images.data() + r * elems + c * plane;
        double ps = 0, pss = 0;
        float plo = INFINITY, phi = -INFINITY;
        int64_t bad = 0;
        for (int64_t e = 0; e < plane; ++e) {
          float v = p[e];
          if (!std::isfinite(v)) {
            ++bad;
            continue;
          }
          ps += v;
          pss += static_cast<double>(v) * v;
          plo = std::min(plo, v);
          phi = std::max(phi, v);
        }
        sum[static_cast<size_t>(c)] += ps;
        sumSq[static_cast<size_t>(c)] += pss;
        finite[static_cast<size_t>(c)] += plane - bad;
        info.nonFinite += bad;
        lo = std::min<double>(lo, plo);
        hi = std::max<double>(hi, phi);
      }
    if (source.hasLabels())
      for (int64_t r = 0; r < k; ++r) {
        size_t l = static_cast<size_t>(labels[static_cast<size_t>(r)]);
        if (l >= info.histogram.size())
          info.histogram.resize(l + 1);
        ++info.histogram[l];
      }
  }
  info.minValue = std::isfinite(lo) ? lo : 0;
  info.maxValue = std::isfinite(hi) ? hi : 0;
  for (size_t c = 0; c < sum.size(); ++c) {
    double m = finite[c] > 0 ? sum[c] / static_cast<double>(finite[c]) : 0;
    double var =
        finite[c] > 0 ? sumSq[c] / static_cast<double>(finite[c]) - m * m : 0;
    info.channelMean.push_back(m);
    info.channelStd.push_back(std::sqrt(std::max(0.0, var)));
  }
  return info;
}

} // namespace hpvm::ds
