// SamplingBlocked.cpp - filter-sampled convolution (reference section 6.3)
// on the layer kernels' blocked activations: nChw16c in, nChw16c out. In
// fp32 it serves small outputs (the deeper layers of CIFAR-sized
// networks), where the NCHW engine's layout conversions cost more than its
// GEMM saves; in bf16 and int8 (samp_bf16, samp_int8) it serves every
// ungrouped convolution whose channels fill whole blocks (a first layer's
// three channels gather so little per compress that the NCHW engine, on
// rounded or dequantized operands, is faster).
//
// The kept filter elements are the same for every output channel, so the
// convolution is a GEMM of a position-major reduced im2col matrix
// (positions x R, R kept elements per output channel) with the reduced,
// scaled filter (K x R): (r - 1) / r of the exact arithmetic. The im2col
// rows are gathered straight from the input: for each filter tap, each
// vector of channels (16 fp32 of nChw16c; 32 bf16 or 64 int8 of NHWC) is
// loaded once and its kept channels compressed into the row (one masked
// compress per vector with AVX-512). Images go
// through in chunks whose im2col matrix stays in cache; the GEMM result
// (positions x K) is written out as nChw16c rows with the caller's
// epilogue, 16 channels at a time.
//
// The GEMM is oneDNN's sgemm in fp32 and its matmul primitive in bf16
// (bf16 operands: the input converted once, fp32 sums) and int8 (the
// caller's quantized input and filter, 32-bit sums rescaled per output
// channel). The sampling scale r / (r - 1) multiplies the fp32 filter, and
// is an output scale of the bf16 and int8 GEMMs (so that their filter is
// the rounded or quantized exact one).
#include "approx/Epilogue.h"
#include "approx/Isa.h"
#include "approx/PerforationPlan.h"
#include "approx/Scratch.h"
#include "base/Errors.h"

#include <immintrin.h>
#include <oneapi/dnnl/dnnl.h>

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace hpvm::rt::approx {

namespace {

using namespace detail;
using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

/// Where this engine beats the NCHW one (measured with
/// scripts/bench/knob_e2e.sh, batch 64): 1x1 filters; outputs of at most
/// 8x8 positions with up to 128 input channels (ResNet-18-CIFAR's last
/// stage, VGG16-CIFAR's conv5), or of at most 2x2 (VGG16's last layers).
/// Larger outputs, and 4x4-8x8 ones with 256+ channels, are faster through
/// the NCHW engine's channel-major GEMM.
bool preferred(const ConvGeometry& g) {
  const int64_t positions = g.ho * g.wo;
  return g.kh * g.kw == 1 || (positions <= 64 && g.c <= 128) || positions <= 4;
}

/// Bytes of one chunk's im2col matrix (kept in the cores' L2 caches).
constexpr int64_t kIm2colChunkBytes = int64_t(2) << 20;

/// Where the input's vectors are: channel block b (L channels, one
/// 512-bit vector) of pixel (n, ih, iw) starts at element n * nStride +
/// ih * hStride + iw * wStride + b * bStride. fp32 reads nChw16c (L = 16),
/// bf16 and int8 NHWC (L = 32 and 64: a pixel's channels are contiguous,
/// so one compress takes twice or four times as many).
struct InputLayout {
  int64_t lanes = 16, nStride = 0, hStride = 0, wStride = 0, bStride = 0;
};

InputLayout inputLayout(const ConvGeometry& g, int64_t esize) {
  InputLayout l;
  if (esize == 4) {
    l.wStride = 16;
    l.hStride = g.w * 16;
    l.bStride = g.h * g.w * 16;
    l.nStride = g.c * g.h * g.w;
  } else {
    l.lanes = 64 / esize;
    l.bStride = l.lanes;
    l.wStride = g.c;
    l.hStride = g.w * g.c;
    l.nStride = g.h * g.w * g.c;
  }
  return l;
}

/// Which channels of each channel block every filter tap keeps, and where
/// they go in an im2col row (tap-major, then block, then channel).
struct TapLayout {
  int64_t area = 0, blocks = 0, r = 0;
  std::vector<uint64_t> mask; ///< [tap * blocks + block]: kept lanes.
  std::vector<int64_t> start; ///< [tap * blocks + block]: first column.
  std::vector<int64_t> elem;  ///< [column]: filter element c * area + tap.
};

TapLayout tapLayout(const ConvGeometry& g, int64_t lanes,
                    const std::vector<int64_t>& kept) {
  TapLayout t;
  t.area = g.kh * g.kw;
  t.blocks = (g.c + lanes - 1) / lanes;
  t.mask.assign(t.area * t.blocks, 0);
  for (int64_t e : kept) {
    const int64_t c = e / t.area, tap = e % t.area;
    t.mask[tap * t.blocks + c / lanes] |= uint64_t(1) << (c % lanes);
  }
  t.start.resize(t.mask.size());
  for (int64_t tap = 0; tap < t.area; ++tap)
    for (int64_t b = 0; b < t.blocks; ++b) {
      const uint64_t m = t.mask[tap * t.blocks + b];
      t.start[tap * t.blocks + b] = t.r;
      for (int64_t l = 0; l < lanes; ++l)
        if (m & (uint64_t(1) << l))
          t.elem.push_back((b * lanes + l) * t.area + tap);
      t.r += __builtin_popcountll(m);
    }
  return t;
}

/// Writes the kept lanes (mask m, cnt of them) of the vector at `from`
/// contiguously at `to`; zeros when from is null (padding; zero is 0 in
/// every type here, the int8 quantization being symmetric). Only the kept
/// lanes are read. Three forms, the same results: portable, AVX-512 (fp32
/// compress) and AVX-512 with VBMI2 (bf16 and int8 compress too).
template <typename T>
inline void gatherLanes(const T* from, uint64_t m, int cnt, T* to) {
  if (!from) {
    std::memset(to, 0, static_cast<size_t>(cnt) * sizeof(T));
    return;
  }
  for (int l = 0; m; ++l, m >>= 1)
    if (m & 1)
      *to++ = from[l];
}

template <typename T>
HPVM_TARGET_AVX512 inline void gatherLanesAvx512(const T* from, uint64_t m,
                                                 int cnt, T* to) {
  if constexpr (sizeof(T) == 4) {
    if (from) {
      const __m512 v = _mm512_maskz_compress_ps(
          static_cast<__mmask16>(m),
          _mm512_loadu_ps(reinterpret_cast<const float*>(from)));
      _mm512_mask_storeu_ps(reinterpret_cast<float*>(to),
                            static_cast<__mmask16>((1u << cnt) - 1u), v);
      return;
    }
  }
  gatherLanes(from, m, cnt, to);
}

template <typename T>
HPVM_TARGET_AVX512_VBMI2 inline void gatherLanesVbmi2(const T* from, uint64_t m,
                                                      int cnt, T* to) {
  const uint64_t keep = cnt == 64 ? ~uint64_t(0) : (uint64_t(1) << cnt) - 1;
  if (from && sizeof(T) == 2) {
    const __m512i v = _mm512_maskz_compress_epi16(
        static_cast<__mmask32>(m),
        _mm512_maskz_loadu_epi16(static_cast<__mmask32>(m), from));
    _mm512_mask_storeu_epi16(to, static_cast<__mmask32>(keep), v);
    return;
  }
  if (from && sizeof(T) == 1) {
    const __m512i v = _mm512_maskz_compress_epi8(
        static_cast<__mmask64>(m),
        _mm512_maskz_loadu_epi8(static_cast<__mmask64>(m), from));
    _mm512_mask_storeu_epi8(to, static_cast<__mmask64>(keep), v);
    return;
  }
  gatherLanesAvx512(from, m, cnt, to);
}

/// Row (n, oh, ow) of the im2col matrix: the kept elements of its window in
/// TapLayout order, each vector's lanes gathered by `gather`.
template <typename T, typename Gather>
inline void im2colRow(const T* x, const InputLayout& il, const ConvGeometry& g,
                      const TapLayout& t, int64_t n, int64_t oh, int64_t ow,
                      T* row, Gather gather) {
  for (int64_t i = 0; i < g.kh; ++i) {
    const int64_t ih = oh * g.strideH - g.padH + i;
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t iw = ow * g.strideW - g.padW + j;
      const bool inside = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
      const int64_t tap = i * g.kw + j;
      const T* pixel = x + n * il.nStride + ih * il.hStride + iw * il.wStride;
      for (int64_t b = 0; b < t.blocks; ++b) {
        const uint64_t m = t.mask[tap * t.blocks + b];
        if (!m)
          continue;
        gather(inside ? pixel + b * il.bStride : nullptr, m,
               __builtin_popcountll(m), row + t.start[tap * t.blocks + b]);
      }
    }
  }
}

template <typename T>
void im2colRowPortable(const T* x, const InputLayout& il, const ConvGeometry& g,
                       const TapLayout& t, int64_t n, int64_t oh, int64_t ow,
                       T* row) {
  im2colRow(x, il, g, t, n, oh, ow, row, gatherLanes<T>);
}
template <typename T>
HPVM_TARGET_AVX512 void
im2colRowAvx512(const T* x, const InputLayout& il, const ConvGeometry& g,
                const TapLayout& t, int64_t n, int64_t oh, int64_t ow, T* row) {
  im2colRow(x, il, g, t, n, oh, ow, row,
            [](const T* f, uint64_t m, int c, T* to)
                HPVM_TARGET_AVX512 { gatherLanesAvx512(f, m, c, to); });
}
template <typename T>
HPVM_TARGET_AVX512_VBMI2 void
im2colRowVbmi2(const T* x, const InputLayout& il, const ConvGeometry& g,
               const TapLayout& t, int64_t n, int64_t oh, int64_t ow, T* row) {
  im2colRow(x, il, g, t, n, oh, ow, row,
            [](const T* f, uint64_t m, int c, T* to)
                HPVM_TARGET_AVX512_VBMI2 { gatherLanesVbmi2(f, m, c, to); });
}

/// The im2col rows of images n0 .. n0 + count - 1 of the input x (layout
/// il): row (n, oh, ow) holds the kept elements in TapLayout order, by the
/// widest form of gatherLanes the runtime's ISA level allows.
template <typename T>
void im2colBlocked(const T* x, const InputLayout& il, const ConvGeometry& g,
                   const TapLayout& t, int64_t n0, int64_t count, T* a) {
  const auto rowOf = haveAvx512Vbmi2() ? im2colRowVbmi2<T>
                     : haveAvx512()    ? im2colRowAvx512<T>
                                       : im2colRowPortable<T>;
  const int64_t positions = count * g.ho * g.wo;
#pragma omp parallel for schedule(static)
  for (int64_t pos = 0; pos < positions; ++pos) {
    const int64_t n = n0 + pos / (g.ho * g.wo);
    const int64_t oh = pos / g.wo % g.ho, ow = pos % g.wo;
    rowOf(x, il, g, t, n, oh, ow, a + pos * t.r);
  }
}

/// The im2col matrix of one chunk of images, of element type `type`.
void im2col(dt type, const void* x, const InputLayout& il,
            const ConvGeometry& g, const TapLayout& t, int64_t n0,
            int64_t count, void* a) {
  switch (type) {
  case dt::f32:
    return im2colBlocked(static_cast<const float*>(x), il, g, t, n0, count,
                         static_cast<float*>(a));
  case dt::bf16:
    return im2colBlocked(static_cast<const uint16_t*>(x), il, g, t, n0, count,
                         static_cast<uint16_t*>(a));
  default: // u8, s8: the same bytes
    return im2colBlocked(static_cast<const uint8_t*>(x), il, g, t, n0, count,
                         static_cast<uint8_t*>(a));
  }
}

/// The low-precision GEMM of one chunk: C (m x K, fp32) = scales * A (m x
/// R) * W^T, W the K x R reduced filter; ok == false when oneDNN offers
/// only its reference kernel.
struct SampledGemm {
  dnnl::matmul prim;
  memory::desc src, weights, dst;
  bool ok = false;
};

std::mutex gemmMutex;

/// The cached matmul for m rows of `type` operands (weights bf16 or s8),
/// output scales `scales` (one: common; K: per output channel).
const SampledGemm& sampledGemm(int64_t m, int64_t r, int64_t k, dt type,
                               const std::vector<float>& scales) {
  static std::map<std::vector<int64_t>, SampledGemm> cache;
  const std::vector<int64_t> key{
      m,
      r,
      k,
      static_cast<int64_t>(type),
      static_cast<int64_t>(
          contentHash(scales.data(), static_cast<int64_t>(scales.size()))),
      omp_get_max_threads()};
  std::lock_guard<std::mutex> lock(gemmMutex);
  auto it = cache.find(key);
  if (it != cache.end())
    return it->second;
  SampledGemm sg;
  dnnl::primitive_attr attr;
  attr.set_output_scales(scales.size() > 1 ? 1 << 1 : 0, scales);
  try {
    dnnl::matmul::primitive_desc pd(
        {memory::desc({m, r}, type, tag::ab),
         memory::desc({r, k}, type == dt::bf16 ? dt::bf16 : dt::s8, tag::any),
         memory::desc({m, k}, dt::f32, tag::ab)},
        attr, cpuEngine());
    sg.ok = !isRefImpl(pd);
    if (sg.ok) {
      sg.prim = dnnl::matmul(pd);
      sg.src = pd.src_desc();
      sg.weights = pd.weights_desc();
      sg.dst = pd.dst_desc();
    }
  } catch (const dnnl::error&) {
    sg.ok = false;
  }
  return cache.emplace(key, std::move(sg)).first->second;
}

/// What convSampledBlocked decides before it reads any data.
struct SampledSetup {
  ConvGeometry g;
  dt type = dt::f32; ///< The operands'.
  InputLayout il;
  TapLayout t;
  int64_t chunk = 1;
  /// bf16 and int8: the GEMMs of a whole chunk and of the last one.
  const SampledGemm* full = nullptr;
  const SampledGemm* tail = nullptr;
};

/// The setup of bc, or nothing when the engine does not apply.
std::optional<SampledSetup> setupSampled(const BlockedConv& bc) {
  const ConvGeometry g =
      checkConv("convSampledBlocked", bc.n, bc.c, bc.h, bc.w, bc.k, bc.kh,
                bc.kw, bc.args, bc.knob, Variant::Samp, Variant::Samp);
  // The operands' type: int8 comes quantized by the caller, bf16 is
  // converted here.
  const dt type = bc.int8Type != dt::undef ? bc.int8Type
                  : bc.bf16                ? dt::bf16
                                           : dt::f32;
  const bool f32 = type == dt::f32;
  if (g.groups != 1 || g.c % 16 != 0 || g.k % 16 != 0 || (f32 && !preferred(g)))
    return std::nullopt;
  const int64_t esize = f32 ? 4 : type == dt::bf16 ? 2 : 1;
  const InputLayout il = inputLayout(g, esize);
  const TapLayout t =
      tapLayout(g, il.lanes,
                samplingKept(g.cg, g.kh, g.kw, bc.knob.rate, bc.knob.offset));
  const float scale = samplingScale(bc.knob.rate);

  const int64_t perImage = g.ho * g.wo;
  const int64_t chunk =
      std::clamp<int64_t>(kIm2colChunkBytes / (perImage * t.r * esize), 1, g.n);

  // bf16 and int8: the GEMMs of a whole chunk and of the last one, with
  // the sampling scale (and int8's per-channel scales) as output scales.
  std::vector<float> outScales{scale};
  if (bc.int8Type != dt::undef) {
    outScales = bc.int8.outScales;
    for (float& s : outScales)
      s *= scale;
  }
  const SampledGemm* full = nullptr;
  const SampledGemm* tail = nullptr;
  if (!f32) {
    full = &sampledGemm(chunk * perImage, t.r, g.k, type, outScales);
    tail = g.n % chunk
               ? &sampledGemm(g.n % chunk * perImage, t.r, g.k, type, outScales)
               : full;
    if (!full->ok || !tail->ok)
      return std::nullopt;
  }
  return SampledSetup{g, type, il, t, chunk, full, tail};
}

} // namespace

bool sampledBlockedApplies(const BlockedConv& bc) {
  return setupSampled(bc).has_value();
}

void convSampledBlocked(const BlockedConv& bc) {
  const std::optional<SampledSetup> setup = setupSampled(bc);
  HPVM_ASSERT(setup.has_value(),
              "convSampledBlocked called where it does not apply");
  const ConvGeometry& g = setup->g;
  const dt type = setup->type;
  const bool f32 = type == dt::f32;
  const int64_t esize = f32 ? 4 : type == dt::bf16 ? 2 : 1;
  const InputLayout& il = setup->il;
  const TapLayout& t = setup->t;
  const float scale = samplingScale(bc.knob.rate);
  const int64_t perImage = g.ho * g.wo;
  const int64_t chunk = setup->chunk;
  const SampledGemm *full = setup->full, *tail = setup->tail;

  dnnl::engine& eng = cpuEngine();
  dnnl::stream strm(eng);
  ScratchPool::Lease lease(scratchPool());

  // The input as dense nChw16c (fp32, rounded when the caller asks) or
  // NHWC of the operands' type.
  const void* x = blockedInput(
      bc,
      memory::desc({g.n, g.c, g.h, g.w}, type, f32 ? tag::nChw16c : tag::nhwc),
      lease, strm);

  // The reduced filter: K x R, columns in TapLayout order; scaled in fp32,
  // else in the GEMM's layout and type (from the int8 filter's integers),
  // reordered once per contents.
  float* wr = static_cast<float*>(lease.slot(2, g.k * t.r * sizeof(float)));
  const int64_t filterLen = g.cg * g.kh * g.kw;
  const int8_t* q = bc.int8.weights;
  const float wScale = f32 ? scale : 1.f;
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < g.k; ++k)
    for (int64_t col = 0; col < t.r; ++col) {
      const int64_t from = k * filterLen + t.elem[col];
      wr[k * t.r + col] = q ? float(q[from]) : bc.weights[from] * wScale;
    }
  memory wMem;
  if (!f32) {
    const memory user(memory::desc({t.r, g.k}, dt::f32, tag::ba), eng, wr);
    wMem = cachedFilter(user, wr, g.k * t.r, full->weights, strm);
  }

  char* a = static_cast<char*>(lease.slot(3, chunk * perImage * t.r * esize));
  float* c = static_cast<float*>(
      lease.slot(4, chunk * perImage * g.k * sizeof(float)));
  float* y = bc.output();
  const BlockedEpilogue* epi = bc.epilogue;
  const int64_t kb = g.k / 16;
  for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
    const int64_t count = std::min(chunk, g.n - n0);
    im2col(type, x, il, g, t, n0, count, a);
    if (f32) {
      // C (positions x K) = A (positions x R) * wr^T.
      const dnnl_status_t st = dnnl_sgemm(
          'N', 'T', count * perImage, g.k, t.r, 1.f,
          reinterpret_cast<const float*>(a), t.r, wr, t.r, 0.f, c, g.k);
      HPVM_ASSERT(st == dnnl_success,
                  "convSampledBlocked: dnnl_sgemm failed with status " +
                      std::to_string(static_cast<int>(st)));
    } else {
      const SampledGemm& sg = count == chunk ? *full : *tail;
      memory src(sg.src, eng, a), dst(sg.dst, eng, c);
      sg.prim.execute(
          strm,
          {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wMem}, {DNNL_ARG_DST, dst}});
      strm.wait();
    }
    // Rows (n, block, oh) of the chunk, 16 channels of C at a time.
    float* yc = y + n0 * g.k * perImage;
#pragma omp parallel for schedule(static)
    for (int64_t nbh = 0; nbh < count * kb * g.ho; ++nbh) {
      const int64_t oh = nbh % g.ho, nb = nbh / g.ho, n = nb / kb, b = nb % kb;
      float* out = yc + nbh * g.wo * 16;
      const float* from = c + (n * perImage + oh * g.wo) * g.k + b * 16;
      for (int64_t w = 0; w < g.wo; ++w)
        std::memcpy(out + w * 16, from + w * g.k, 16 * sizeof(float));
      if (epi)
        epi->applyRow(n0 + n, b, oh, out, g.wo);
    }
    if (epi && epi->wantsImages())
      epi->applyImages(yc, n0, count);
  }
  countBlockedRun();
}

} // namespace hpvm::rt::approx
