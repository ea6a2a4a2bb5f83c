// ConvPerforation.cpp - row and column perforated convolution (reference
// section 6.2): only the kept output rows/columns are computed, the skipped
// ones are interpolated from their neighbours.
//
// How the saving is made real: with rate r and offset s, the kept rows are
// the residues c != s modulo r, and the rows of one residue class
// (c, c + r, c + 2r, ...) are exactly the output of a convolution with
// vertical stride r * strideH whose first window starts at input row
// c * strideH - padH. So r - 1 oneDNN strided convolutions (sharing the
// input reorder; the reordered filter is cached) compute the kept rows with
// (r - 1) / r of the exact arithmetic. One pass then writes the NCHW
// output: kept rows are transposed out of the classes' NHWC results and
// skipped rows are averaged from them, so the interpolation costs no extra
// pass. Details:
//  - Column perforation is row perforation of the transposed problem (the
//    input and filter reorders read transposed views, the output pass
//    writes back), because oneDNN's kernels are faster with the class
//    stride on rows.
//  - On short axes the kept rows are grouped into runs of consecutive rows
//    instead when that needs fewer convolutions.
//  - Tiny outputs (VGG16-CIFAR's 4x4 and 2x2 layers), 1x1 and few-channel
//    filters run as reduced im2col + GEMM over the kept positions
//    (GemmConv.h), which is faster there (see preferGemm).
//  - The caller's post-ops (an Epilogue) run on each output row or plane
//    right after the pass that completes it, while it is in cache.
#include "approx/Approx.h"
#include "approx/ConvGeometry.h"
#include "approx/Epilogue.h"
#include "approx/GemmConv.h"
#include "approx/Isa.h"
#include "approx/PerforationPlan.h"
#include "approx/Scratch.h"

#include <immintrin.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>

namespace hpvm::rt::approx {

namespace {

using namespace detail;

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

std::atomic<PerforationPath> forcedPath{PerforationPath::Auto};

/// When perforation runs as reduced im2col + GEMM instead of oneDNN's
/// direct kernels: on tiny outputs (VGG16-CIFAR's 4x4 and 2x2 layers),
/// where those kernels lose most of their efficiency, and on 1x1 or
/// few-channel filters (ResNet shortcuts, first layers), where the NCHW
/// reorders they need cost more than the convolution. Measured with
/// scripts/bench/knob_speedups.sh.
constexpr int64_t kGemmMaxOutputPositions = 16;
constexpr int64_t kGemmMaxFilterElements = 32;
/// (Column subsets gather element by element, so columns take the GEMM
/// path only on tiny outputs.)
bool preferGemm(const ConvGeometry& g, bool cols) {
  if (g.ho * g.wo <= kGemmMaxOutputPositions)
    return true;
  return !cols &&
         (g.kh * g.kw == 1 || g.cg * g.kh * g.kw <= kGemmMaxFilterElements);
}

/// Relative cost of reordering one input element against one flop of the
/// convolution (memory-bound copy versus AVX-512 FMAs), for choosing how a
/// class whose first window starts inside the input is computed.
constexpr int64_t kFlopsPerReorderedElement = 150;

/// The convolution of one class, created once per geometry and thread
/// count (oneDNN picks its kernel for the thread count at creation).
struct ClassPrim {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  ClassPlan plan;
  bool nhwcDst = false; ///< dst is plain NHWC (the fused output pass).
};

std::mutex primMutex;
std::map<std::vector<int64_t>, ClassPrim>& primCache() {
  static std::map<std::vector<int64_t>, ClassPrim> cache;
  return cache;
}

/// The cached convolution computing row class `c` of g.
const ClassPrim& classPrim(const ConvGeometry& g, const OutputClass& c) {
  const std::vector<int64_t> key{
      g.n,     g.c,    g.h,       g.w,
      g.k,     g.kh,   g.kw,      g.groups,
      g.padH,  g.padW, g.strideH, g.strideW,
      c.start, c.step, c.count,   omp_get_max_threads()};
  std::lock_guard<std::mutex> lock(primMutex);
  auto it = primCache().find(key);
  if (it != primCache().end())
    return it->second;

  ClassPrim cp;
  cp.plan = planClass(g, c, kFlopsPerReorderedElement);
  const ClassPlan& p = cp.plan;
  const int64_t padR = padRight(g.w, g.kw, g.strideW, g.padW, g.wo);
  const memory::dims dstDims{g.n, g.k, p.outLen, g.wo};
  auto make = [&](tag dstTag) {
    return convolutionPd(
        {dnnl::prop_kind::forward_inference,
         dnnl::algorithm::convolution_direct,
         memory::desc({g.n, g.c, p.viewH, g.w}, dt::f32, tag::any),
         memory::desc(weightsDims(g), dt::f32, tag::any),
         memory::desc(dstDims, dt::f32, dstTag),
         {p.stride, g.strideW},
         {p.padT, g.padW},
         {p.padB, padR}},
        {}, cpuEngine());
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

/// Fills the skipped rows (or columns) of one NCHW output plane of g from
/// their computed neighbours: index 0 copies index 1, the last index copies
/// the one before it, any other index averages both neighbours. Then the
/// plane (image n, channel k) goes through `epi` (if not null) while it is
/// in cache.
void fillPlane(float* plane, int64_t n, int64_t k, const ConvGeometry& g,
               bool rows, const std::vector<int64_t>& skipped,
               const Epilogue* epi) {
  const int64_t ho = g.ho, wo = g.wo, len = rows ? ho : wo;
  for (int64_t r = 0; r < (rows ? 1 : ho); ++r)
    for (int64_t i : skipped) {
      const SkippedSource from = skippedSource(i, len);
      if (rows) {
        averageInto(plane + from.lo * wo, plane + from.hi * wo, plane + i * wo,
                    wo);
      } else {
        float* row = plane + r * wo;
        row[i] = (row[from.lo] + row[from.hi]) * 0.5f;
      }
    }
  if (epi)
    epi->apply(n, k, 0, plane, ho * wo);
}

/// fillPlane on every output plane.
void fillSkipped(float* y, const ConvGeometry& g, bool rows,
                 const std::vector<bool>& kept, const Epilogue* epi) {
  const std::vector<int64_t> skipped = skippedOf(kept);
  if (skipped.empty() && !epi)
    return;
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < g.n * g.k; ++p)
    fillPlane(y + p * g.ho * g.wo, p / g.k, p % g.k, g, rows, skipped, epi);
}

// GCC 12's unpack intrinsics trip -Wuninitialized on their internal
// undefined-value operand (a false positive).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
/// dst[j * ldd + i] = src[i * lds + j] for a 16 x 16 block.
HPVM_TARGET_AVX512 inline void transpose16(const float* src, int64_t lds,
                                           float* dst, int64_t ldd) {
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

/// The full 16 x 16 blocks of transposeRow with AVX-512; returns the
/// first column it left.
HPVM_TARGET_AVX512 int64_t transposeBlocks(const float* src, int64_t wo,
                                           int64_t K, float* dst, int64_t ldd) {
  int64_t w0 = 0;
  for (w0 = 0; w0 + 16 <= wo; w0 += 16)
    for (int64_t k0 = 0; k0 + 16 <= K; k0 += 16)
      transpose16(src + w0 * K + k0, K, dst + k0 * ldd + w0, ldd);
  // Channel tail of the full column blocks.
  for (int64_t w = 0; w < w0; ++w)
    for (int64_t k = K / 16 * 16; k < K; ++k)
      dst[k * ldd + w] = src[w * K + k];
  return w0;
}

/// dst[k * ldd + w] = src[w * K + k] for w < wo, k < K: one NHWC output row
/// into the K planes of an NCHW output.
void transposeRow(const float* src, int64_t wo, int64_t K, float* dst,
                  int64_t ldd) {
  const int64_t w0 = haveAvx512() ? transposeBlocks(src, wo, K, dst, ldd) : 0;
  // Columns not covered by full blocks.
  for (int64_t k = 0; k < K; ++k) {
    float* o = dst + k * ldd;
    for (int64_t w = w0; w < wo; ++w)
      o[w] = src[w * K + k];
  }
}

/// The fused output pass: writes every NCHW output row (n, :, h, :) of the
/// original problem g0 from the classes' NHWC results of the internal row
/// problem (transposed for columns), averaging skipped positions on the
/// fly, and runs `epi` (if not null) on each row just written.
void writeOutput(const std::vector<const float*>& dst,
                 const std::vector<const ClassPrim*>& prims,
                 const std::vector<Source>& src, const ConvGeometry& g0,
                 bool cols, float* y, const Epilogue* epi) {
  const int64_t K = g0.k, ho = g0.ho, wo = g0.wo;
  // Internal output (n, a, b) is original (n, h, w) = cols ? (b, a) : (a, b)
  // and lives at row `t` of its class, whose rows hold bLen K-vectors.
  const int64_t bLen = cols ? ho : wo;
  auto at = [&](int64_t n, int64_t a, int64_t b) -> const float* {
    const Source& s = src[a];
    return dst[s.cls] + ((n * prims[s.cls]->plan.outLen + s.t) * bLen + b) * K;
  };
#pragma omp parallel
  {
    // One NHWC output row (wo x K) when it has to be assembled.
    std::vector<float> tile(wo * K);
#pragma omp for schedule(static)
    for (int64_t nh = 0; nh < g0.n * ho; ++nh) {
      const int64_t n = nh / ho, h = nh % ho;
      float* out = y + n * K * ho * wo + h * wo;
      auto finish = [&] {
        if (epi)
          for (int64_t k = 0; k < K; ++k)
            epi->apply(n, k, h * wo, out + k * ho * wo, wo);
      };
      if (!cols && src[h].cls >= 0) {
        // A kept row is one contiguous NHWC row of its class.
        transposeRow(at(n, h, 0), wo, K, out, ho * wo);
        finish();
        continue;
      }
      for (int64_t w = 0; w < wo; ++w) {
        const int64_t a = cols ? w : h, b = cols ? h : w;
        float* t = tile.data() + w * K;
        const Source& s = src[a];
        if (s.cls >= 0) {
          std::memcpy(t, at(n, a, b), K * sizeof(float));
          continue;
        }
        averageInto(at(n, s.lo, b), at(n, s.hi, b), t, K);
      }
      transposeRow(tile.data(), wo, K, out, ho * wo);
      finish();
    }
  }
}

} // namespace

void setPerforationPath(PerforationPath path) { forcedPath = path; }
PerforationPath perforationPath() { return forcedPath; }

void convPerforated(const float* x, int64_t N, int64_t C, int64_t H, int64_t W,
                    const float* w, int64_t K, int64_t KH, int64_t KW,
                    const ConvArgs& a, const KnobSpec& knob, float* y) {
  convPerforated(x, N, C, H, W, w, K, KH, KW, a, knob, y, nullptr);
}

void convPerforated(const float* x, int64_t N, int64_t C, int64_t H, int64_t W,
                    const float* w, int64_t K, int64_t KH, int64_t KW,
                    const ConvArgs& a, const KnobSpec& knob, float* y,
                    const Epilogue* epi) {
  const ConvGeometry g0 = checkConv("convPerforated", N, C, H, W, K, KH, KW, a,
                                    knob, Variant::PerfRow, Variant::PerfCol);
  const bool cols = knob.variant == Variant::PerfCol;
  const PerforationPath path = forcedPath;
  if (path == PerforationPath::Gemm ||
      (autoPath(path) && preferGemm(g0, cols))) {
    // Reduced im2col + GEMM over the kept positions, with the caller's
    // OIHW filter as the K x (C/groups*KH*KW) GEMM operand.
    const std::vector<bool> kept =
        perforationKept(cols ? g0.wo : g0.ho, knob.rate, knob.offset);
    std::vector<int64_t> elems(g0.cg * g0.kh * g0.kw), keptRows, keptCols;
    std::iota(elems.begin(), elems.end(), 0);
    for (int64_t i = 0; i < g0.ho; ++i)
      if (cols || kept[i])
        keptRows.push_back(i);
    for (int64_t i = 0; i < g0.wo; ++i)
      if (!cols || kept[i])
        keptCols.push_back(i);
    // Each plane's skipped positions are filled, and the epilogue run, as
    // soon as its kept ones are written.
    const std::vector<int64_t> skipped = skippedOf(kept);
    ScratchPool::Lease lease(scratchPool());
    gemmConv(x, g0, elems, w, keptRows, keptCols, y, lease, 0,
             [&](int64_t n, int64_t k, float* plane) {
               fillPlane(plane, n, k, g0, !cols, skipped, epi);
             });
    return;
  }
  // Column perforation runs as row perforation of the transposed problem
  // (oneDNN's kernels are faster with the class stride on rows).
  const ConvGeometry g = cols ? transposed(g0) : g0;
  const std::vector<bool> kept = perforationKept(g.ho, knob.rate, knob.offset);
  const std::vector<OutputClass> classes =
      keptClasses(kept, knob.rate, knob.offset);

  dnnl::engine& eng = cpuEngine();
  dnnl::stream strm(eng);
  ScratchPool::Lease lease(scratchPool());

  // 1. Views of the caller's NCHW input and OIHW (GOIHW) filter as the
  //    internal problem sees them (H and W swapped for columns).
  const int64_t rowStride = cols ? 1 : g0.w, colStride = cols ? g0.w : 1;
  auto inputView = [&](int64_t shift, int64_t viewH) {
    return memory(
        memory::desc({g.n, g.c, viewH, g.w}, dt::f32,
                     {g0.c * g0.h * g0.w, g0.h * g0.w, rowStride, colStride}),
        eng, const_cast<float*>(x) + shift * rowStride);
  };
  memory::dims weiStrides{g.cg * g.kh * g.kw, g.kh * g.kw, cols ? 1 : g.kw,
                          cols ? g.kh : 1};
  if (g.groups > 1)
    weiStrides.insert(weiStrides.begin(), g.kg * g.cg * g.kh * g.kw);
  const memory weiUser(memory::desc(weightsDims(g), dt::f32, weiStrides), eng,
                       const_cast<float*>(w));

  // 2. One strided convolution per class. Inputs are reordered once per
  //    distinct view and layout, the filter once per layout and contents
  //    (cached across calls); each class's result stays in its own scratch
  //    buffer.
  std::vector<const ClassPrim*> prims;
  std::vector<memory> dsts;
  std::vector<std::pair<int64_t, memory>> inputs;
  memory weiMem;
  bool allNhwc = true;
  for (size_t ci = 0; ci < classes.size(); ++ci) {
    const ClassPrim& cp = classPrim(g, classes[ci]);
    memory srcMem;
    for (const auto& in : inputs)
      if (in.first == cp.plan.shift && in.second.get_desc() == cp.pd.src_desc())
        srcMem = in.second;
    if (!srcMem) {
      const memory view = inputView(cp.plan.shift, cp.plan.viewH);
      srcMem = asLayout(view, cp.pd.src_desc(), lease, inputs.size(), strm);
      inputs.emplace_back(cp.plan.shift, srcMem);
    }
    if (!weiMem || weiMem.get_desc() != cp.pd.weights_desc())
      weiMem = cachedFilter(weiUser, w, g.k * g.cg * g.kh * g.kw,
                            cp.pd.weights_desc(), strm);
    memory dst(cp.pd.dst_desc(), eng,
               lease.slot(5 + ci, cp.pd.dst_desc().get_size()));
    cp.prim.execute(strm, {{DNNL_ARG_SRC, srcMem},
                           {DNNL_ARG_WEIGHTS, weiMem},
                           {DNNL_ARG_DST, dst}});
    prims.push_back(&cp);
    dsts.push_back(dst);
    allNhwc = allNhwc && cp.nhwcDst;
  }
  strm.wait();

  // 3. The NCHW output.
  if (allNhwc && path != PerforationPath::DnnlGeneric) {
    // 3a. Fused: transpose kept rows/columns, average skipped ones.
    std::vector<const float*> ptr;
    for (const memory& d : dsts)
      ptr.push_back(static_cast<const float*>(d.get_data_handle()));
    std::vector<int64_t> firsts;
    for (const ClassPrim* cp : prims)
      firsts.push_back(cp->plan.first);
    writeOutput(ptr, prims, sourcesOf(kept, classes, firsts), g0, cols, y, epi);
    return;
  }
  // 3b. Other layouts: a oneDNN reorder scatters each class into a strided
  //     view of y (minus its dropped first output), then a pass fills the
  //     skipped positions. oneDNN rejects a view whose last strided row
  //     would run past the plane, so that row goes in a second reorder.
  const int64_t aStride = cols ? 1 : g0.wo, bStride = cols ? g0.wo : 1;
  for (size_t ci = 0; ci < classes.size(); ++ci) {
    const OutputClass& c = classes[ci];
    const ClassPrim& cp = *prims[ci];
    const int64_t fits = c.count * c.step <= g.ho ? c.count : c.count - 1;
    auto scatter = [&](int64_t from, int64_t n) {
      if (n <= 0)
        return;
      const memory::dims dims = {g.n, g.k, n, g.wo};
      const memory::desc view = dsts[ci].get_desc().submemory_desc(
          dims, {0, 0, cp.plan.first + from, 0});
      const memory::dims strides = {g0.k * g0.ho * g0.wo, g0.ho * g0.wo,
                                    c.step * aStride, bStride};
      memory fromMem(view, eng, dsts[ci].get_data_handle());
      memory toMem(memory::desc(dims, dt::f32, strides), eng,
                   y + (c.start + from * c.step) * aStride);
      dnnl::reorder(fromMem, toMem).execute(strm, fromMem, toMem);
    };
    scatter(0, fits);
    scatter(fits, c.count - fits);
  }
  strm.wait();
  fillSkipped(y, g0, !cols, kept, epi);
}

} // namespace hpvm::rt::approx
