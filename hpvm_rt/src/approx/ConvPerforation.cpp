// ConvPerforation.cpp - row and column perforated convolution (reference
// section 6.2): only the kept output rows/columns are computed, the skipped
// ones are interpolated from their neighbours.
//
// How the saving is made real: with rate r and offset s, the kept rows are
// the residues c != s modulo r, and the rows of one residue class
// (c, c + r, c + 2r, ...) are exactly the output of a convolution with
// vertical stride r * strideH whose first window starts at input row
// c * strideH - padH. So r - 1 oneDNN strided convolutions (sharing one
// input and one filter reorder) compute the kept rows with (r - 1) / r of
// the exact arithmetic. One pass then writes the NCHW output: kept rows are
// transposed out of the classes' NHWC results, skipped rows are averaged
// from them, so the interpolation costs no extra pass. Columns are the same
// with the axes swapped.
#include "approx/ConvGeometry.h"
#include "approx/Scratch.h"
#include "kernels/Kernels.h"

#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

namespace hpvm::rt::approx {

namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

std::atomic<bool> genericOutput{false};

dnnl::engine& cpuEngine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

/// Output positions start, start + step, ... (count of them) along the
/// perforated axis: one residue class.
struct OutputClass {
  int64_t start = 0, step = 1, count = 0;
};

/// The classes of kept positions along an axis of length `len`: every
/// residue modulo the rate except the offset's, or the whole axis when
/// nothing is skipped.
std::vector<OutputClass> keptClasses(const std::vector<bool>& kept,
                                     int rate, int offset) {
  const int64_t len = static_cast<int64_t>(kept.size());
  if (std::count(kept.begin(), kept.end(), false) == 0)
    return {{0, 1, len}};
  std::vector<OutputClass> classes;
  for (int64_t c = 0; c < rate && c < len; ++c)
    if (c != offset)
      classes.push_back({c, rate, (len - c + rate - 1) / rate});
  return classes;
}

/// Geometry of one class's convolution along one axis.
struct AxisPlan {
  int64_t stride = 1, padL = 0, padR = 0, outLen = 0;
  int64_t first = 0; ///< Outputs before the class's first (1 or 0).
};

/// Plans the convolution computing outputs start, start + step, ... (count)
/// along an axis with input length `len`, kernel `k`, stride `s`, padding
/// `pad`. The window of output t starts at input (start + t*step)*s - pad.
/// oneDNN needs a non-negative left padding; when the first window starts
/// inside the input, the padding is grown by one class stride and the extra
/// first output (one row of the class) is computed and dropped. The right
/// padding is trimmed to what the last window reads, so the output count is
/// exact.
AxisPlan planAxis(int64_t len, int64_t k, int64_t s, int64_t pad,
                  const OutputClass& c) {
  AxisPlan p;
  p.stride = s * c.step;
  const int64_t begin = c.start * s - pad;
  p.first = begin > 0 ? 1 : 0;
  p.padL = begin > 0 ? p.stride - begin : -begin;
  p.outLen = c.count + p.first;
  const int64_t lastEnd = -p.padL + (p.outLen - 1) * p.stride + k - 1;
  p.padR = std::max<int64_t>(0, lastEnd - (len - 1));
  return p;
}

/// The convolution of one class, created once per geometry and thread
/// count (oneDNN picks its kernel for the thread count at creation).
struct ClassPrim {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  AxisPlan ph, pw;
  bool nhwcDst = false; ///< dst is plain NHWC (the fused output pass).
};

using PrimKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t,
                           int64_t, int64_t, int64_t, int64_t, int64_t,
                           int64_t, int64_t, int64_t, int64_t, int64_t,
                           int64_t, int>;

std::mutex primMutex;
std::map<PrimKey, ClassPrim>& primCache() {
  static std::map<PrimKey, ClassPrim> cache;
  return cache;
}

bool isRefImpl(const dnnl::primitive_desc_base& pd) {
  return std::strncmp(pd.impl_info_str(), "ref", 3) == 0;
}

/// The cached convolution computing class `c` along rows or columns.
const ClassPrim& classPrim(const ConvGeometry& g, bool rows,
                           const OutputClass& c) {
  const int threads = omp_get_max_threads();
  const PrimKey key{g.n,      g.c,      g.h,        g.w,      g.k,
                    g.kh,     g.kw,     g.groups,   g.padH,   g.padW,
                    g.strideH, g.strideW, rows ? 1 : 0, c.start, c.step,
                    c.count,  threads};
  std::lock_guard<std::mutex> lock(primMutex);
  auto it = primCache().find(key);
  if (it != primCache().end())
    return it->second;

  ClassPrim cp;
  const OutputClass whole{0, 1, rows ? g.wo : g.ho};
  cp.ph = planAxis(g.h, g.kh, g.strideH, g.padH, rows ? c : whole);
  cp.pw = planAxis(g.w, g.kw, g.strideW, g.padW, rows ? whole : c);
  const memory::dims weiDims =
      g.groups > 1 ? memory::dims{g.groups, g.kg, g.cg, g.kh, g.kw}
                   : memory::dims{g.k, g.c, g.kh, g.kw};
  const memory::dims dstDims{g.n, g.k, cp.ph.outLen, cp.pw.outLen};
  auto make = [&](tag dstTag) {
    return dnnl::convolution_forward::primitive_desc(
        {dnnl::prop_kind::forward_inference,
         dnnl::algorithm::convolution_direct,
         memory::desc({g.n, g.c, g.h, g.w}, dt::f32, tag::any),
         memory::desc(weiDims, dt::f32, tag::any),
         memory::desc(dstDims, dt::f32, dstTag),
         {cp.ph.stride, cp.pw.stride},
         {cp.ph.padL, cp.pw.padL},
         {cp.ph.padR, cp.pw.padR}},
        cpuEngine());
  };
  // Prefer an NHWC result (the fused output pass reads it); fall back to
  // oneDNN's own choice when NHWC would mean its reference kernel.
  bool haveNhwc = false;
  try {
    cp.pd = make(tag::nhwc);
    haveNhwc = !isRefImpl(cp.pd);
  } catch (const dnnl::error&) {
    haveNhwc = false;
  }
  cp.nhwcDst = haveNhwc;
  if (!haveNhwc)
    cp.pd = make(tag::any);
  cp.prim = dnnl::convolution_forward(cp.pd);
  return primCache().emplace(key, std::move(cp)).first->second;
}

/// Returns `src` in layout `want`: src itself when it already is, else a
/// reorder into scratch buffer `slot`.
memory asLayout(const memory& src, const memory::desc& want,
                ScratchPool::Lease& lease, size_t slot, dnnl::stream& strm) {
  if (src.get_desc() == want)
    return src;
  memory out(want, cpuEngine(), lease.slot(slot, want.get_size()));
  dnnl::reorder(src, out).execute(strm, const_cast<memory&>(src), out);
  return out;
}

/// Where output position i of the perforated axis comes from: a kept
/// position reads class `cls` at index `t` (counting a dropped first
/// output); a skipped one averages positions lo and hi (lo == hi: copy).
struct Source {
  int cls = -1;
  int64_t t = 0;
  int64_t lo = 0, hi = 0;
};

std::vector<Source> sourcesOf(const std::vector<bool>& kept,
                              const std::vector<OutputClass>& classes,
                              const std::vector<int64_t>& firstOf) {
  const int64_t len = static_cast<int64_t>(kept.size());
  std::vector<Source> src(len);
  for (size_t ci = 0; ci < classes.size(); ++ci) {
    const OutputClass& c = classes[ci];
    for (int64_t t = 0; t < c.count; ++t) {
      Source& s = src[c.start + t * c.step];
      s.cls = static_cast<int>(ci);
      s.t = t + firstOf[ci];
    }
  }
  for (int64_t i = 0; i < len; ++i) {
    if (kept[i])
      continue;
    src[i].lo = i == 0 ? 1 : i - 1;
    src[i].hi = i == len - 1 ? len - 2 : i + 1;
  }
  return src;
}

/// Fills the skipped rows (or columns) of every NCHW output plane from
/// their computed neighbours: index 0 copies index 1, the last index copies
/// the one before it, any other index averages both neighbours.
void fillSkipped(float* y, const ConvGeometry& g, bool rows,
                 const std::vector<bool>& kept) {
  const int64_t len = rows ? g.ho : g.wo;
  std::vector<int64_t> skipped;
  for (int64_t i = 0; i < len; ++i)
    if (!kept[i])
      skipped.push_back(i);
  if (skipped.empty())
    return;
  const int64_t ho = g.ho, wo = g.wo;
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < g.n * g.k; ++p) {
    float* plane = y + p * ho * wo;
    for (int64_t r = 0; r < (rows ? 1 : ho); ++r)
      for (int64_t i : skipped) {
        const int64_t lo = i == 0 ? 1 : i - 1;
        const int64_t hi = i == len - 1 ? len - 2 : i + 1;
        if (rows) {
          float* dst = plane + i * wo;
          const float* a = plane + lo * wo;
          const float* b = plane + hi * wo;
#pragma omp simd
          for (int64_t x = 0; x < wo; ++x)
            dst[x] = (a[x] + b[x]) * 0.5f;
        } else {
          float* row = plane + r * wo;
          row[i] = (row[lo] + row[hi]) * 0.5f;
        }
      }
  }
}

#if defined(__AVX512F__)
// GCC 12's unpack intrinsics trip -Wuninitialized on their internal
// undefined-value operand (a false positive).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
/// dst[j * ldd + i] = src[i * lds + j] for a 16 x 16 block.
inline void transpose16(const float* src, int64_t lds, float* dst,
                        int64_t ldd) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i)
    r[i] = _mm512_loadu_ps(src + i * lds);
  // Interleave 32-bit, then 64-bit elements of row pairs.
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 2]);
    const __m512d c = _mm512_castps_pd(t[i + 1]);
    const __m512d d = _mm512_castps_pd(t[i + 3]);
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
  }
  // Exchange 128-bit lanes between row groups 4 apart, then 8 apart.
  for (int i = 0; i < 16; i += 8)
    for (int j = 0; j < 4; ++j) {
      t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0x88);
      t[i + j + 4] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0xdd);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
    r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
  }
  for (int i = 0; i < 16; ++i)
    _mm512_storeu_ps(dst + i * ldd, r[i]);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

/// dst[k * ldd + w] = src[w * K + k] for w < wo, k < K: one NHWC output row
/// into the K planes of an NCHW output.
void transposeRow(const float* src, int64_t wo, int64_t K, float* dst,
                  int64_t ldd) {
  int64_t w0 = 0, k0 = 0;
#if defined(__AVX512F__)
  for (w0 = 0; w0 + 16 <= wo; w0 += 16)
    for (k0 = 0; k0 + 16 <= K; k0 += 16)
      transpose16(src + w0 * K + k0, K, dst + k0 * ldd + w0, ldd);
  // Channel tail of the full column blocks.
  for (int64_t w = 0; w < w0; ++w)
    for (int64_t k = K / 16 * 16; k < K; ++k)
      dst[k * ldd + w] = src[w * K + k];
#endif
  // Columns not covered by full blocks.
  for (int64_t k = 0; k < K; ++k) {
    float* o = dst + k * ldd;
    for (int64_t w = w0; w < wo; ++w)
      o[w] = src[w * K + k];
  }
}

/// The fused output pass: writes every NCHW output row (n, :, h, :) from
/// the classes' NHWC results, averaging skipped positions on the fly.
void writeOutput(const std::vector<const float*>& dst,
                 const std::vector<ClassPrim const*>& prims,
                 const std::vector<Source>& src, const ConvGeometry& g,
                 bool rows, float* y) {
  const int64_t K = g.k, ho = g.ho, wo = g.wo;
  // The K-vector of output (n, h, w) for a kept position.
  auto at = [&](int64_t n, int64_t h, int64_t w) -> const float* {
    const Source& s = src[rows ? h : w];
    const ClassPrim& cp = *prims[s.cls];
    const int64_t oh = cp.ph.outLen, ow = cp.pw.outLen;
    const int64_t hh = rows ? s.t : h, ww = rows ? w : s.t;
    return dst[s.cls] + ((n * oh + hh) * ow + ww) * K;
  };
#pragma omp parallel
  {
    // One NHWC output row (wo x K) when it has to be assembled.
    std::vector<float> tile(wo * K);
#pragma omp for schedule(static)
    for (int64_t nh = 0; nh < g.n * ho; ++nh) {
      const int64_t n = nh / ho, h = nh % ho;
      float* out = y + n * K * ho * wo + h * wo;
      if (rows && src[h].cls >= 0) {
        // A kept row is one contiguous NHWC row of its class.
        transposeRow(at(n, h, 0), wo, K, out, ho * wo);
        continue;
      }
      for (int64_t w = 0; w < wo; ++w) {
        float* t = tile.data() + w * K;
        const Source& s = src[rows ? h : w];
        if (s.cls >= 0) {
          std::memcpy(t, at(n, h, w), K * sizeof(float));
          continue;
        }
        const float* a = rows ? at(n, s.lo, w) : at(n, h, s.lo);
        const float* b = rows ? at(n, s.hi, w) : at(n, h, s.hi);
#pragma omp simd
        for (int64_t k = 0; k < K; ++k)
          t[k] = (a[k] + b[k]) * 0.5f;
      }
      transposeRow(tile.data(), wo, K, out, ho * wo);
    }
  }
}

} // namespace

void setGenericPerforationOutput(bool on) { genericOutput = on; }

void convPerforated(const float* x, int64_t N, int64_t C, int64_t H,
                    int64_t W, const float* w, int64_t K, int64_t KH,
                    int64_t KW, const ConvArgs& a, const KnobSpec& knob,
                    float* y) {
  const ConvGeometry g = checkConv("convPerforated", N, C, H, W, K, KH, KW, a,
                                   knob, Variant::PerfRow, Variant::PerfCol);
  const bool rows = knob.variant == Variant::PerfRow;
  const std::vector<bool> kept =
      perforationKept(rows ? g.ho : g.wo, knob.rate, knob.offset);
  const std::vector<OutputClass> classes =
      keptClasses(kept, knob.rate, knob.offset);

  dnnl::engine& eng = cpuEngine();
  dnnl::stream strm(eng);
  ScratchPool::Lease lease(scratchPool());

  // 1. The caller's NCHW input and OIHW (GOIHW) filter.
  const memory::desc srcPlain({g.n, g.c, g.h, g.w}, dt::f32, tag::nchw);
  const memory::desc weiPlain =
      g.groups > 1
          ? memory::desc({g.groups, g.kg, g.cg, g.kh, g.kw}, dt::f32,
                         tag::goihw)
          : memory::desc({g.k, g.c, g.kh, g.kw}, dt::f32, tag::oihw);
  memory srcUser(srcPlain, eng, const_cast<float*>(x));
  memory weiUser(weiPlain, eng, const_cast<float*>(w));

  // 2. One strided convolution per class; input and filter are reordered
  //    for the first class and reused while later ones want the same
  //    layouts. Each class's result stays in its own scratch buffer.
  std::vector<const ClassPrim*> prims;
  std::vector<memory> dsts;
  std::vector<int64_t> firstOf;
  bool allNhwc = true;
  memory srcMem, weiMem;
  for (size_t ci = 0; ci < classes.size(); ++ci) {
    const ClassPrim& cp = classPrim(g, rows, classes[ci]);
    if (!srcMem || srcMem.get_desc() != cp.pd.src_desc())
      srcMem = asLayout(srcUser, cp.pd.src_desc(), lease, 0, strm);
    if (!weiMem || weiMem.get_desc() != cp.pd.weights_desc())
      weiMem = asLayout(weiUser, cp.pd.weights_desc(), lease, 1, strm);
    memory dst(cp.pd.dst_desc(), eng,
               lease.slot(2 + ci, cp.pd.dst_desc().get_size()));
    cp.prim.execute(strm, {{DNNL_ARG_SRC, srcMem},
                           {DNNL_ARG_WEIGHTS, weiMem},
                           {DNNL_ARG_DST, dst}});
    prims.push_back(&cp);
    dsts.push_back(dst);
    firstOf.push_back(rows ? cp.ph.first : cp.pw.first);
    allNhwc = allNhwc && cp.nhwcDst;
  }
  strm.wait();

  // 3. The NCHW output.
  if (allNhwc && !genericOutput) {
    // 3a. Fused: transpose kept rows/columns, average skipped ones.
    std::vector<const float*> ptr;
    for (const memory& d : dsts)
      ptr.push_back(static_cast<const float*>(d.get_data_handle()));
    writeOutput(ptr, prims, sourcesOf(kept, classes, firstOf), g, rows, y);
    return;
  }
  // 3b. Other layouts: a oneDNN reorder scatters each class into a strided
  //     view of y (minus its dropped first output), then a pass fills the
  //     skipped positions. oneDNN rejects a view whose last strided row
  //     would run past the plane, so that row goes in a second reorder.
  for (size_t ci = 0; ci < classes.size(); ++ci) {
    const OutputClass& c = classes[ci];
    const ClassPrim& cp = *prims[ci];
    const int64_t fits =
        c.count * c.step <= (rows ? g.ho : g.wo) ? c.count : c.count - 1;
    auto scatter = [&](int64_t from, int64_t n) {
      if (n <= 0)
        return;
      const memory::dims dims = {g.n, g.k, rows ? n : g.ho, rows ? g.wo : n};
      const memory::desc view = dsts[ci].get_desc().submemory_desc(
          dims, {0, 0, cp.ph.first + (rows ? from : 0),
                 cp.pw.first + (rows ? 0 : from)});
      const memory::dims strides = {g.k * g.ho * g.wo, g.ho * g.wo,
                                    rows ? c.step * g.wo : g.wo,
                                    rows ? 1 : c.step};
      const int64_t pos = c.start + from * c.step;
      memory fromMem(view, eng, dsts[ci].get_data_handle());
      memory toMem(memory::desc(dims, dt::f32, strides), eng,
                   y + (rows ? pos * g.wo : pos));
      dnnl::reorder(fromMem, toMem).execute(strm, fromMem, toMem);
    };
    scatter(0, fits);
    scatter(fits, c.count - fits);
  }
  strm.wait();
  fillSkipped(y, g, rows, kept);
}

} // namespace hpvm::rt::approx
