// PerforationBlocked.cpp - perforated convolution on the layer kernels'
// own activation layout (nChw16c in and out, or plain NCHW in for inputs
// with a channel count not divisible by 16), so that an approximated layer
// between exact ones costs no layout round trip.
//
// The kept rows (columns) are computed by one oneDNN strided convolution
// per class (PerforationPlan.h) reading the caller's blocked input in
// place; each writes its rows into a scratch buffer in nChw16c. One pass
// then writes every output row (image, channel block, row): kept rows are
// copied from their class, skipped ones averaged from their neighbours'
// class rows, and the caller's epilogue runs on the row while it is in
// cache. The arithmetic is the classes' share of the exact convolution;
// the extra memory traffic is one read of the classes' results.
//
// Column perforation runs as row perforation of the transposed problem:
// each chunk of images is transposed (H and W swapped, 16-channel vectors
// moved whole) into a cache-resident buffer, the filter is read
// transposed, and the output pass reads the classes' results transposed.
// oneDNN's kernels are much faster with full-width rows than with the few
// strided columns a column class has on CIFAR-sized layers.
#include "approx/Epilogue.h"
#include "approx/Isa.h"
#include "approx/PerforationPlan.h"
#include "approx/Scratch.h"
#include "base/Errors.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

namespace hpvm::rt::approx {

namespace {

using namespace detail;
using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

/// Copying one input element into a shifted view costs about this many
/// convolution flops (a memcpy of contiguous rows, cheaper than the NCHW
/// engine's reorder).
constexpr int64_t kFlopsPerCopiedElement = 50;

/// Output extent below which the blocked engine is not used (single-row or
/// single-column outputs have nothing to perforate worth a pass).
constexpr int64_t kMinOutputPositions = 3;

/// Output bytes of one chunk of images: their class results (a fraction
/// of this) stay in the cores' L2 caches until the output pass reads them.
constexpr int64_t kChunkBytes = int64_t(1) << 20;

/// How the classes of a column perforation are computed.
enum class ColumnMode : uint8_t {
  None,       ///< Row perforation.
  Strided,    ///< Convolutions strided along the columns.
  Transposed, ///< Row perforation of the transposed input.
};

/// Column perforation transposes the input when the convolution does at
/// least this many flops per input element (the transposition is one pass
/// over the input; below this, strided columns cost less than it saves).
constexpr int64_t kTransposeMinFlopsPerInput = 1000;

/// One class's convolution in the blocked engine.
struct BlockedPrim {
  dnnl::convolution_forward prim;
  /// dst: nChw16c, or NHWC (Numerics::nhwc), as the output pass reads it.
  memory::desc src, weights, dst;
  ClassPlan plan;
  bool ok = false; ///< A fast (non-reference) kernel exists.
};

std::mutex blockedMutex;
std::map<std::vector<int64_t>, BlockedPrim>& blockedCache() {
  static std::map<std::vector<int64_t>, BlockedPrim> cache;
  return cache;
}

/// The numerics of the class convolutions.
struct Numerics {
  dt in = dt::f32; ///< Input and weights type (f32, bf16, u8 or s8).
  const std::vector<float>* outScales = nullptr; ///< int8: per channel.
  uint64_t scalesKey = 0;                        ///< int8: their identity.
  bool int8() const { return in == dt::u8 || in == dt::s8; }
  /// The class convolutions read NHWC and write NHWC results: int8 (the
  /// only layout oneDNN's int8 kernels take) and bf16 on AMX (the layout
  /// its tile kernels take; on nChw16c the classes ran oneDNN's
  /// avx512_bf16 kernels, 1.2x fp32 at 50% against 3-4x for bf16 itself).
  bool nhwc = false;
  int64_t esize() const { return in == dt::f32 ? 4 : in == dt::bf16 ? 2 : 1; }
};

/// The source layout of the blocked engine for g: nChw16c when the
/// channels fill whole blocks, plain NCHW otherwise; NHWC where the
/// numerics ask (Numerics::nhwc).
tag srcTag(const ConvGeometry& g, bool nhwc = false) {
  return nhwc ? tag::nhwc : g.c % 16 == 0 ? tag::nChw16c : tag::nchw;
}

/// The convolution of plan p along g's rows (stridedCols: along its
/// columns, planned on the transposed geometry); ok == false when oneDNN
/// offers only its reference kernel or nothing.
BlockedPrim makeBlockedPrim(const ConvGeometry& g, bool stridedCols,
                            const ClassPlan& p, const Numerics& nm) {
  const dt inType = nm.in;
  BlockedPrim bp;
  bp.plan = p;
  const bool sc = stridedCols;
  const int64_t padFull = sc ? padRight(g.h, g.kh, g.strideH, g.padH, g.ho)
                             : padRight(g.w, g.kw, g.strideW, g.padW, g.wo);
  const memory::dims dstDims = sc ? memory::dims{g.n, g.k, g.ho, p.outLen}
                                  : memory::dims{g.n, g.k, p.outLen, g.wo};
  dnnl::primitive_attr attr;
  if (nm.int8())
    attr.set_output_scales(1 << 1, *nm.outScales);
  try {
    const auto pd = convolutionPd(
        {dnnl::prop_kind::forward_inference,
         dnnl::algorithm::convolution_direct,
         memory::desc(sc ? memory::dims{g.n, g.c, g.h, p.viewH}
                         : memory::dims{g.n, g.c, p.viewH, g.w},
                      inType, srcTag(g, nm.nhwc)),
         memory::desc(weightsDims(g), nm.int8() ? dt::s8 : inType, tag::any),
         memory::desc(dstDims, dt::f32, nm.nhwc ? tag::nhwc : tag::nChw16c),
         sc ? memory::dims{g.strideH, p.stride}
            : memory::dims{p.stride, g.strideW},
         sc ? memory::dims{g.padH, p.padT} : memory::dims{p.padT, g.padW},
         sc ? memory::dims{padFull, p.padB} : memory::dims{p.padB, padFull}},
        attr, cpuEngine());
    bp.ok = !isRefImpl(pd);
    if (bp.ok) {
      bp.prim = dnnl::convolution_forward(pd);
      bp.src = pd.src_desc();
      bp.weights = pd.weights_desc();
      bp.dst = pd.dst_desc();
    }
  } catch (const dnnl::error&) {
    bp.ok = false;
  }
  return bp;
}

/// The cached convolution computing class `c` of g's rows, or one with
/// ok == false when oneDNN has no fast kernel for it.
const BlockedPrim& blockedPrim(const ConvGeometry& g, bool stridedCols,
                               const OutputClass& c, const Numerics& nm) {
  const std::vector<int64_t> key{g.n,
                                 g.c,
                                 g.h,
                                 g.w,
                                 g.k,
                                 g.kh,
                                 g.kw,
                                 g.groups,
                                 g.padH,
                                 g.padW,
                                 g.strideH,
                                 g.strideW,
                                 c.start,
                                 c.step,
                                 c.count,
                                 stridedCols,
                                 static_cast<int64_t>(nm.in),
                                 static_cast<int64_t>(nm.scalesKey),
                                 omp_get_max_threads()};
  std::lock_guard<std::mutex> lock(blockedMutex);
  auto it = blockedCache().find(key);
  if (it != blockedCache().end())
    return it->second;

  // The first plan oneDNN has a fast kernel for: by cost, reading the input
  // in place with a negative bottom padding ending the last window early;
  // by cost, with a cropped copy of the input instead (oneDNN rejects some
  // negative paddings); with a copied view wherever the first window
  // starts inside the input (a top padding as large as the window has no
  // fast kernel).
  const ConvGeometry axis = stridedCols ? transposed(g) : g;
  ClassPlan inPlace = planClass(axis, c, kFlopsPerCopiedElement);
  const ClassPlan cropped = inPlace;
  if (inPlace.shift == 0) {
    inPlace.viewH = axis.h;
    inPlace.padB = -inPlace.padT + (inPlace.outLen - 1) * inPlace.stride +
                   axis.kh - 1 - (axis.h - 1);
  }
  BlockedPrim bp;
  for (const ClassPlan& p : {inPlace, cropped, planClass(axis, c, 0)}) {
    bp = makeBlockedPrim(g, stridedCols, p, nm);
    if (bp.ok)
      break;
  }
  return blockedCache().emplace(key, std::move(bp)).first->second;
}

/// Floats per spatial position of an activation in layout srcTag(g), and
/// the number of (image, channel block) planes.
int64_t lanesOf(const ConvGeometry& g, bool nhwc) {
  const tag t = srcTag(g, nhwc);
  return t == tag::nhwc ? g.c : t == tag::nChw16c ? 16 : 1;
}
int64_t planesOf(const ConvGeometry& g, bool nhwc) {
  return g.n * g.c / lanesOf(g, nhwc);
}

/// Copies rows (stridedCols: columns) shift .. shift + len - 1 of every
/// plane of `x` (layout srcTag(g), elements of `esize` bytes) into the
/// dense buffer `to`.
void copyView(const char* x, const ConvGeometry& g, bool stridedCols,
              int64_t shift, int64_t len, char* to, int64_t esize, bool nhwc) {
  const int64_t lanes = lanesOf(g, nhwc) * esize, planes = planesOf(g, nhwc);
  const int64_t rows = stridedCols ? g.h : len;
  const int64_t rowLen = stridedCols ? len : g.w;
  const size_t bytes = static_cast<size_t>(rowLen * lanes);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t inRow = stridedCols ? r : r + shift;
      const int64_t inCol = stridedCols ? shift : 0;
      std::memcpy(to + (p * rows + r) * rowLen * lanes,
                  x + ((p * g.h + inRow) * g.w + inCol) * lanes, bytes);
    }
}

/// xt = x with rows and columns swapped in every plane (x has g's layout
/// srcTag(g), elements of `esize` bytes; each position's channel vector
/// moves whole).
void transposeInput(const char* x, const ConvGeometry& g, char* xt,
                    int64_t esize, bool nhwc) {
  const int64_t lanes = lanesOf(g, nhwc) * esize, planes = planesOf(g, nhwc);
  const size_t bytes = static_cast<size_t>(lanes);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t w = 0; w < g.w; ++w) {
      const char* from = x + (p * g.h * g.w + w) * lanes;
      char* to = xt + (p * g.w + w) * g.h * lanes;
      for (int64_t h = 0; h < g.h; ++h)
        std::memcpy(to + h * lanes, from + h * g.w * lanes, bytes);
    }
}

/// Copies n floats (a multiple of 16) to 64-byte aligned `to` with
/// non-temporal stores: the output is not read back before the next layer,
/// and streaming it spares reading each line before writing it.
HPVM_TARGET_AVX512 void streamRowAvx512(const float* from, float* to,
                                        int64_t n) {
  for (int64_t i = 0; i < n; i += 16)
    _mm512_stream_ps(to + i, _mm512_load_ps(from + i));
}
inline void streamRow(const float* from, float* to, int64_t n) {
  if (haveAvx512() && reinterpret_cast<uintptr_t>(to) % 64 == 0)
    streamRowAvx512(from, to, n);
  else
    std::memcpy(to, from, static_cast<size_t>(n) * sizeof(float));
}

/// The output pass over the images n0.. of one chunk (geometry gc): every
/// nChw16c row (image, channel block, row) written once, from the classes'
/// results (nChw16c, or NHWC where `nhwc`), then `epi` on it.
void writeChunk(const std::vector<const float*>& dsts,
                const std::vector<const BlockedPrim*>& prims,
                const std::vector<Source>& from, const ConvGeometry& gc,
                int64_t n0, ColumnMode cols, bool nhwc, float* y,
                const BlockedEpilogue* epi) {
  const int64_t kb = gc.k / 16, ho = gc.ho, wo = gc.wo;
  // Rows that applyImages() reads back stay in cache; others are streamed.
  const bool throughCache = epi && epi->wantsImages();
  // The 16 channels of block b at position (i, j) of class c's result for
  // image n: its rows and columns are (t, w) for row classes, (h, t) for
  // strided columns, (t, h) for transposed ones.
  auto at = [&](size_t c, int64_t n, int64_t b, int64_t i, int64_t j) {
    const int64_t len = prims[c]->plan.outLen;
    const int64_t rows = cols == ColumnMode::Strided ? ho : len;
    const int64_t rowLen = cols == ColumnMode::None      ? wo
                           : cols == ColumnMode::Strided ? len
                                                         : ho;
    return nhwc ? dsts[c] + ((n * rows + i) * rowLen + j) * gc.k + b * 16
                : dsts[c] + (((n * kb + b) * rows + i) * rowLen + j) * 16;
  };
  // Class c's values for output position (h, w) of block b, column t of
  // the class (column classes).
  auto colValue = [&](size_t c, int64_t n, int64_t b, int64_t h, int64_t t) {
    return cols == ColumnMode::Strided ? at(c, n, b, h, t) : at(c, n, b, t, h);
  };
  // Floats between a row class's consecutive output columns.
  const int64_t step = nhwc ? gc.k : 16;
#pragma omp parallel
  {
    // One output row, assembled and finished in L1, then streamed out.
    float* tile = static_cast<float*>(
        std::aligned_alloc(64, static_cast<size_t>(wo) * 16 * sizeof(float)));
#pragma omp for schedule(static)
    for (int64_t nbh = 0; nbh < gc.n * kb * ho; ++nbh) {
      const int64_t h = nbh % ho, nb = nbh / ho, n = nb / kb, b = nb % kb;
      if (cols == ColumnMode::None) {
        // One class row (or two, averaged) makes the whole output row.
        const Source& s = from[h];
        const Source& lo = s.cls >= 0 ? s : from[s.lo];
        const float* a = at(lo.cls, n, b, lo.t, 0);
        const float* z =
            s.cls >= 0 ? nullptr : at(from[s.hi].cls, n, b, from[s.hi].t, 0);
        for (int64_t w = 0; w < wo; ++w) {
          if (z)
            averageInto(a + w * step, z + w * step, tile + w * 16, 16);
          else
            std::memcpy(tile + w * 16, a + w * step, 16 * sizeof(float));
        }
      } else {
        for (int64_t w = 0; w < wo; ++w) {
          const Source& s = from[w];
          if (s.cls >= 0) {
            std::memcpy(tile + w * 16, colValue(s.cls, n, b, h, s.t),
                        16 * sizeof(float));
          } else {
            const Source& lo = from[s.lo];
            const Source& hi = from[s.hi];
            averageInto(colValue(lo.cls, n, b, h, lo.t),
                        colValue(hi.cls, n, b, h, hi.t), tile + w * 16, 16);
          }
        }
      }
      if (epi)
        epi->applyRow(n0 + n, b, h, tile, wo);
      if (throughCache)
        std::memcpy(y + nbh * wo * 16, tile, wo * 16 * sizeof(float));
      else
        streamRow(tile, y + nbh * wo * 16, wo * 16);
    }
    std::free(tile);
    _mm_sfence(); // The streamed rows are visible before the pass returns.
  }
}

/// What convPerforatedBlocked decides before it reads any data: the
/// geometry, numerics, output classes and their primitives.
struct PerforatedSetup {
  ConvGeometry g, gi; ///< The call's; the class convolutions'.
  Numerics nm;
  ColumnMode mode = ColumnMode::None;
  std::vector<bool> kept;
  std::vector<OutputClass> classes;
  int64_t chunk = 1;
  std::vector<const BlockedPrim*> full, tail; ///< Per class.
};

/// The setup of bc, or nothing when the engine does not apply.
std::optional<PerforatedSetup> setupPerforated(const BlockedConv& bc) {
  PerforatedSetup s;
  const ConvGeometry g =
      checkConv("convPerforatedBlocked", bc.n, bc.c, bc.h, bc.w, bc.k, bc.kh,
                bc.kw, bc.args, bc.knob, Variant::PerfRow, Variant::PerfCol);
  const bool cols = bc.knob.variant == Variant::PerfCol;
  if (g.k % 16 != 0 || (g.groups != 1 && g.groups != g.k) ||
      g.ho * g.wo <= kMinOutputPositions)
    return std::nullopt;
  // Columns: transposed where the convolution is heavy enough per input
  // element (and the input is blocked), else strided. gi is the geometry
  // the class convolutions see.
  const int64_t flopsPerInput =
      2 * g.kg * g.kh * g.kw * g.ho * g.wo / (g.h * g.w);
  // The numerics: fp32, bf16 (operands bf16, the input converted once,
  // sums and results fp32) or int8 (the input quantized once into NHWC,
  // weights per output channel, results rescaled to fp32).
  Numerics& nm = s.nm;
  nm.in = bc.bf16 ? dt::bf16 : dt::f32;
  if (bc.int8Type != dt::undef) {
    nm.in = bc.int8Type;
    nm.outScales = &bc.int8.outScales;
    nm.scalesKey = contentHash(nm.outScales->data(),
                               static_cast<int64_t>(nm.outScales->size()));
  }
  nm.nhwc = nm.int8() || (nm.in == dt::bf16 && isaLevel() >= IsaLevel::Amx);
  s.mode = !cols ? ColumnMode::None
           : (nm.nhwc || srcTag(g) == tag::nChw16c) &&
                   flopsPerInput >= kTransposeMinFlopsPerInput
               ? ColumnMode::Transposed
               : ColumnMode::Strided;
  const bool strided = s.mode == ColumnMode::Strided;
  s.g = g;
  s.gi = s.mode == ColumnMode::Transposed ? transposed(g) : g;
  s.kept = perforationKept(cols ? g.wo : g.ho, bc.knob.rate, bc.knob.offset);
  s.classes = keptClasses(s.kept, bc.knob.rate, bc.knob.offset);

  // Images go through in chunks whose class results fit in cache, so that
  // the output pass reads them from there.
  const int64_t perImage = g.k * g.ho * g.wo * int64_t(sizeof(float));
  s.chunk = std::clamp<int64_t>(kChunkBytes / perImage, 1, g.n);
  auto chunkPrims = [&](int64_t n) {
    ConvGeometry gc = s.gi;
    gc.n = n;
    std::vector<const BlockedPrim*> prims;
    for (const OutputClass& c : s.classes) {
      prims.push_back(&blockedPrim(gc, strided, c, nm));
      if (!prims.back()->ok)
        return std::vector<const BlockedPrim*>{};
    }
    return prims;
  };
  s.full = chunkPrims(s.chunk);
  s.tail = g.n % s.chunk ? chunkPrims(g.n % s.chunk) : s.full;
  if (s.full.empty() || s.tail.empty())
    return std::nullopt;
  return s;
}

} // namespace

bool perforatedBlockedApplies(const BlockedConv& bc) {
  return setupPerforated(bc).has_value();
}

void convPerforatedBlocked(const BlockedConv& bc) {
  const std::optional<PerforatedSetup> setup = setupPerforated(bc);
  HPVM_ASSERT(setup.has_value(),
              "convPerforatedBlocked called where it does not apply");
  const PerforatedSetup& s = *setup;
  const ConvGeometry &g = s.g, &gi = s.gi;
  const Numerics& nm = s.nm;
  const ColumnMode mode = s.mode;
  const bool strided = mode == ColumnMode::Strided;
  const bool int8 = nm.int8(), nhwc = nm.nhwc;
  const int64_t esize = nm.esize();
  const std::vector<bool>& kept = s.kept;
  const std::vector<OutputClass>& classes = s.classes;
  const int64_t chunk = s.chunk;
  const std::vector<const BlockedPrim*>&full = s.full, &tail = s.tail;

  dnnl::engine& eng = cpuEngine();
  dnnl::stream strm(eng);
  ScratchPool::Lease lease(scratchPool());

  // The input in the engine's layout (and type: int8 comes quantized in
  // it), rounded when the caller asks.
  const char* x = reinterpret_cast<const char*>(blockedInput(
      bc, memory::desc({g.n, g.c, g.h, g.w}, nm.in, srcTag(g, nhwc)), lease,
      strm));

  // The filter (OIHW, read transposed for columns), reordered once per
  // layout and contents.
  const bool tr = mode == ColumnMode::Transposed;
  memory::dims weiStrides{g.cg * g.kh * g.kw, g.kh * g.kw, tr ? 1 : g.kw,
                          tr ? g.kw : 1};
  if (g.groups > 1)
    weiStrides.insert(weiStrides.begin(), g.kg * g.cg * g.kh * g.kw);
  // int8: the caller's quantized OIHW filter, cached under the hash of the
  // fp32 one it was quantized from.
  const memory weiUser(
      memory::desc(weightsDims(gi), int8 ? dt::s8 : dt::f32, weiStrides), eng,
      int8 ? static_cast<void*>(const_cast<int8_t*>(bc.int8.weights))
           : static_cast<void*>(const_cast<float*>(bc.weights)));
  memory weiMem;

  const int64_t imageIn = g.c * g.h * g.w;
  char* transposedIn =
      tr ? static_cast<char*>(lease.slot(2, chunk * imageIn * esize)) : nullptr;
  float* y = bc.output();
  for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
    ConvGeometry gc = gi;
    gc.n = std::min(chunk, g.n - n0);
    const std::vector<const BlockedPrim*>& prims = gc.n == chunk ? full : tail;
    const char* xc = x + n0 * imageIn * esize;
    if (tr) {
      ConvGeometry orig = g;
      orig.n = gc.n;
      transposeInput(xc, orig, transposedIn, esize, nhwc);
      xc = transposedIn;
    }

    // One strided convolution per class; cropped or shifted views are
    // copied once each.
    std::vector<std::pair<std::pair<int64_t, int64_t>, memory>> views;
    std::vector<const float*> dsts;
    std::vector<int64_t> firsts;
    for (size_t ci = 0; ci < classes.size(); ++ci) {
      const BlockedPrim& bp = *prims[ci];
      const std::pair<int64_t, int64_t> view{bp.plan.shift, bp.plan.viewH};
      memory in;
      if (bp.plan.shift == 0 && bp.plan.viewH == (strided ? gc.w : gc.h)) {
        in = memory(bp.src, eng, const_cast<char*>(xc));
      } else {
        for (const auto& v : views)
          if (v.first == view && v.second.get_desc() == bp.src)
            in = v.second;
        if (!in) {
          char* to = static_cast<char*>(
              lease.slot(3 + views.size(), bp.src.get_size()));
          copyView(xc, gc, strided, bp.plan.shift, bp.plan.viewH, to, esize,
                   nhwc);
          in = memory(bp.src, eng, to);
          views.emplace_back(view, in);
        }
      }
      if (!weiMem || weiMem.get_desc() != bp.weights)
        weiMem = cachedFilter(weiUser, bc.weights, g.k * g.cg * g.kh * g.kw,
                              bp.weights, strm);
      memory dst(bp.dst, eng, lease.slot(16 + ci, bp.dst.get_size()));
      bp.prim.execute(strm, {{DNNL_ARG_SRC, in},
                             {DNNL_ARG_WEIGHTS, weiMem},
                             {DNNL_ARG_DST, dst}});
      dsts.push_back(static_cast<const float*>(dst.get_data_handle()));
      firsts.push_back(bp.plan.first);
    }
    strm.wait();
    ConvGeometry out = g;
    out.n = gc.n;
    float* yc = y + n0 * g.k * g.ho * g.wo;
    writeChunk(dsts, prims, sourcesOf(kept, classes, firsts), out, n0, mode,
               nhwc, yc, bc.epilogue);
    if (bc.epilogue && bc.epilogue->wantsImages())
      bc.epilogue->applyImages(yc, n0, gc.n);
  }
  countBlockedRun();
}

} // namespace hpvm::rt::approx
