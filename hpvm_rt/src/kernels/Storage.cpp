// Storage.cpp - tensor storage: host buffers, oneDNN copies in blocked
// layouts, reorders back to NCHW on demand, and the thread count.
#include "approx/Isa.h"
#include "kernels/Primitives.h"
#include "kernels/TensorImpl.h"

#include "base/Errors.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <new>
#include <unordered_map>

namespace hpvm::rt {
namespace kern {

Dims4 dims4(const Tensor* t) {
  HPVM_ASSERT(t != nullptr, "null tensor");
  int nd = t->dims.num_dims;
  HPVM_ASSERT(nd >= 1 && nd <= 4 && t->dims.dim_sizes != nullptr,
              fmt::format("tensor must have 1 to 4 dims, has {}", nd));
  Dims4 d{1, 1, 1, 1};
  for (int i = 0; i < nd; ++i)
    d[i] = static_cast<int64_t>(t->dims.dim_sizes[i]);
  return d;
}

std::string dimsStr(const Tensor* t) {
  Dims4 d = dims4(t);
  return fmt::format("{}x{}x{}x{}", d[0], d[1], d[2], d[3]);
}

int64_t numElems(const Tensor* t) {
  Dims4 d = dims4(t);
  return d[0] * d[1] * d[2] * d[3];
}

namespace {
/// Released buffers by size, up to kPoolCap bytes in all.
struct BufferPool {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free;
  size_t cached = 0;
};
constexpr size_t kPoolCap = size_t(2) << 30;

BufferPool& pool() {
  static BufferPool* p = new BufferPool; // Never destroyed: used at exit.
  return *p;
}

size_t roundedSize(size_t bytes) {
  return ((bytes ? bytes : 1) + 63) / 64 * 64;
}
} // namespace

void* poolAlloc(size_t bytes) {
  size_t n = roundedSize(bytes);
  {
    BufferPool& bp = pool();
    std::lock_guard<std::mutex> lock(bp.mutex);
    auto it = bp.free.find(n);
    if (it != bp.free.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      bp.cached -= n;
      return p;
    }
  }
  return bigAlloc(n);
}

void* bigAlloc(size_t bytes) {
  constexpr size_t kHuge = size_t(2) << 20;
  const size_t n = roundedSize(bytes);
  void* p = nullptr;
  if (posix_memalign(&p, n >= kHuge ? kHuge : 64, n) != 0)
    throw std::bad_alloc();
  // (Advice only: where the kernel declines, small pages serve.)
  if (n >= kHuge)
    madvise(p, n / kHuge * kHuge, MADV_HUGEPAGE);
  return p;
}

dnnl::memory weightMemory(const dnnl::memory::desc& d,
                          TensorImpl::Derived& owner) {
  owner.buffer = std::shared_ptr<void>(bigAlloc(d.get_size()), std::free);
  return dnnl::memory(d, engine(), owner.buffer.get());
}

void poolFree(void* p, size_t bytes) {
  if (!p)
    return;
  size_t n = roundedSize(bytes);
  BufferPool& bp = pool();
  {
    std::lock_guard<std::mutex> lock(bp.mutex);
    if (bp.cached + n <= kPoolCap) {
      bp.free[n].push_back(p);
      bp.cached += n;
      return;
    }
  }
  std::free(p);
}

dnnl::engine& engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dnnl::stream& stream() {
  // One stream per calling thread: streams are not shared across threads.
  thread_local dnnl::stream s(engine());
  return s;
}

uint64_t nextVersion() {
  static std::atomic<uint64_t> counter{1};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

void newValues(TensorImpl& impl) {
  impl.version = nextVersion();
  impl.roundedTo = Precision::FP32;
  impl.derived.clear();
}

TensorImpl& implOf(Tensor* t) {
  HPVM_ASSERT(t != nullptr, "null tensor");
  if (!t->impl) {
    auto* impl = new TensorImpl;
    impl->version = nextVersion();
    if (t->host_data) {
      // The program (or the tensor API) gave the host buffer: adopt it.
      impl->host = static_cast<float*>(t->host_data);
      impl->hostElems = static_cast<size_t>(numElems(t));
      impl->ownsHost = false;
    }
    t->impl = impl;
  }
  return *t->impl;
}

dnnl::memory::desc nchwDesc(const Tensor* t) {
  Dims4 d = dims4(t);
  return dnnl::memory::desc({d[0], d[1], d[2], d[3]},
                            dnnl::memory::data_type::f32,
                            dnnl::memory::format_tag::nchw);
}

namespace {
/// Sets the element count fields of t from its dims.
void syncCounts(Tensor* t) {
  t->num_elems = static_cast<size_t>(numElems(t));
  t->size_in_bytes = t->num_elems * sizeof(float);
}
} // namespace

void reorder(const dnnl::memory& from, const dnnl::memory& to) {
  // Cached: layers reorder the same layouts on every launch (a residual
  // into the output's layout, an output back to the host's).
  const dnnl::memory::desc &fromDesc = from.get_desc(), &toDesc = to.get_desc();
  const Prim& p =
      cachedPrim("reorder" + descKey(fromDesc) + descKey(toDesc), [&] {
        Prim made;
        made.prim = dnnl::reorder(from, to);
        return made;
      });
  p.prim.execute(stream(), {{DNNL_ARG_FROM, const_cast<dnnl::memory&>(from)},
                            {DNNL_ARG_TO, const_cast<dnnl::memory&>(to)}});
  stream().wait();
}

dnnl::memory storedMemory(const Tensor* t) {
  TensorImpl& impl = implOf(t);
  if (impl.memValid)
    return impl.mem;
  return currentMemory(t);
}

dnnl::memory currentMemory(const Tensor* t) {
  TensorImpl& impl = implOf(t);
  if (impl.memValid &&
      impl.mem.get_desc().data_type() != dnnl::memory::data_type::f32) {
    ensureHost(const_cast<Tensor*>(t));
    return dnnl::memory(nchwDesc(t), engine(), impl.host);
  }
  if (impl.memValid)
    return impl.mem;
  if (!impl.host)
    allocHost(const_cast<Tensor*>(t));
  return dnnl::memory(nchwDesc(t), engine(), impl.host);
}

void reorderScaled(const dnnl::memory& from, const dnnl::memory& to,
                   float scale) {
  if (scale == 1.f) {
    reorder(from, to);
    return;
  }
  const dnnl::memory::desc &fromDesc = from.get_desc(), &toDesc = to.get_desc();
  const Prim& p =
      cachedPrim("reorder*" + descKey(fromDesc) + descKey(toDesc), [&] {
        dnnl::primitive_attr attr;
        attr.set_output_scales(0, {DNNL_RUNTIME_F32_VAL});
        Prim made;
        made.prim = dnnl::reorder(dnnl::reorder::primitive_desc(
            engine(), fromDesc, engine(), toDesc, attr));
        return made;
      });
  dnnl::memory scaleMem(
      {{1}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::x},
      engine(), &scale);
  p.prim.execute(stream(), {{DNNL_ARG_FROM, const_cast<dnnl::memory&>(from)},
                            {DNNL_ARG_TO, const_cast<dnnl::memory&>(to)},
                            {DNNL_ARG_ATTR_OUTPUT_SCALES, scaleMem}});
  stream().wait();
}

bool storedInOtherType(const Tensor* t, const dnnl::memory::desc& want) {
  const TensorImpl& impl = implOf(t);
  return impl.memValid && !impl.hostValid &&
         impl.mem.get_desc().data_type() != want.data_type() &&
         impl.mem.get_desc().dims() == want.dims();
}

bool sameBytes(const dnnl::memory::desc& a, const dnnl::memory::desc& b) {
  if (a == b)
    return true;
  const dims d = a.dims();
  if (d != b.dims() || d.size() != 4 || d[1] != 16 ||
      a.data_type() != b.data_type())
    return false;
  const dnnl::memory::desc nhwc(d, a.data_type(),
                                dnnl::memory::format_tag::nhwc),
      blocked(d, a.data_type(), dnnl::memory::format_tag::nChw16c);
  return (a == nhwc || a == blocked) && (b == nhwc || b == blocked);
}

bool storedInType(const Tensor* t, const dnnl::memory::desc& want) {
  const TensorImpl& impl = implOf(t);
  return impl.memValid && impl.memScale == 1.f &&
         impl.mem.get_desc().data_type() == want.data_type() &&
         impl.mem.get_desc().dims() == want.dims();
}

dnnl::memory memoryAs(const Tensor* t, const dnnl::memory::desc& want,
                      std::unique_ptr<PoolBuffer>& hold) {
  auto fresh = [&] {
    hold = std::make_unique<PoolBuffer>(want.get_size());
    return dnnl::memory(want, engine(), hold->get());
  };
  if (storedInOtherType(t, want)) {
    // Quantized (or bf16) values, wanted in fp32: one scaled reorder.
    const TensorImpl& impl = implOf(t);
    dnnl::memory out = fresh();
    reorderScaled(impl.mem, out, impl.memScale);
    return out;
  }
  // bf16 values wanted as bf16 (bf16 chains): no trip through fp32.
  const dnnl::memory cur =
      storedInType(t, want) ? storedMemory(t) : currentMemory(t);
  if (cur.get_desc() == want)
    return cur;
  if (sameBytes(cur.get_desc(), want))
    return dnnl::memory(want, engine(), cur.get_data_handle());
  // Layout differs: reorder into a pooled buffer in the wanted layout.
  dnnl::memory out = fresh();
  reorder(cur, out);
  return out;
}

dnnl::memory outputMemory(Tensor* y, const dnnl::memory::desc& d) {
  TensorImpl& impl = implOf(y);
  syncCounts(y);
  newValues(impl);
  if (d == nchwDesc(y)) {
    // Plain layout: the kernel writes the host buffer directly.
    allocHost(y);
    impl.hostValid = true;
    impl.memValid = false;
    return dnnl::memory(d, engine(), impl.host);
  }
  if (!impl.mem || impl.mem.get_desc() != d) {
    HPVM_ASSERT(!impl.memShared,
                "a buffer holding channel views must keep its layout");
    if (impl.memBorrowed) {
      // A channel view of another layout: the kernel writes a buffer of
      // y's own (a concatenation copies it into the view).
      impl.memBuf = nullptr;
      impl.memBytes = 0;
      impl.memBorrowed = false;
    }
    // New layout or size: swap the buffer for one of the right size.
    size_t bytes = d.get_size();
    if (bytes != impl.memBytes) {
      poolFree(impl.memBuf, impl.memBytes);
      impl.memBuf = nullptr;
      impl.memBuf = poolAlloc(bytes);
      impl.memBytes = bytes;
    }
    impl.mem = dnnl::memory(d, engine(), impl.memBuf);
  }
  impl.memScale = 1.f;
  impl.memValid = true;
  impl.hostValid = false;
  return impl.mem;
}

std::optional<int64_t> channelBlock(const dnnl::memory::desc& d) {
  const dnnl_memory_desc_t& c = d.data;
  if (c.format_kind != dnnl_blocked || c.ndims < 2 ||
      c.format_desc.blocking.inner_nblks != 1 ||
      c.format_desc.blocking.inner_idxs[0] != 1)
    return std::nullopt;
  return c.format_desc.blocking.inner_blks[0];
}

bool hasChannelPadding(const dnnl::memory::desc& d) {
  return d.data.ndims > 1 && d.data.padded_dims[1] != d.data.dims[1];
}

void zeroChannelPadding(const dnnl::memory& m) {
  const dnnl::memory::desc d = m.get_desc();
  const std::optional<int64_t> block = channelBlock(d);
  HPVM_ASSERT(block.has_value(), "zeroChannelPadding needs a channel block");
  const dnnl_memory_desc_t& c = d.data;
  const dnnl_dims_t& strides = c.format_desc.blocking.strides;
  const int64_t C = c.dims[1], B = *block, lastBlock = C / B;
  const size_t bytes = dnnl::memory::data_type_size(d.data_type());
  // Every position of the other dims (batch, spatial), as one index.
  int64_t positions = c.padded_dims[0];
  for (int i = 2; i < c.ndims; ++i)
    positions *= c.padded_dims[i];
  char* base = static_cast<char*>(m.get_data_handle());
#pragma omp parallel for schedule(static)
  for (int64_t pos = 0; pos < positions; ++pos) {
    int64_t rest = pos, offset = lastBlock * strides[1] + C % B;
    for (int i = c.ndims - 1; i >= 2; --i) {
      offset += (rest % c.padded_dims[i]) * strides[i];
      rest /= c.padded_dims[i];
    }
    offset += rest * strides[0];
    std::memset(base + offset * bytes, 0, (B - C % B) * bytes);
  }
}

dnnl::memory::desc blocked16Desc(const Tensor* t) {
  return channelBlockedDesc(t, 16);
}

dnnl::memory::desc channelBlockedDesc(const Tensor* t, int64_t block) {
  const Dims4 d = dims4(t);
  return dnnl::memory::desc({d[0], d[1], d[2], d[3]},
                            dnnl::memory::data_type::f32,
                            block == 16 ? dnnl::memory::format_tag::nChw16c
                                        : dnnl::memory::format_tag::nChw8c);
}

int64_t heldChannelBlock(const Tensor* t) {
  const TensorImpl& impl = implOf(t);
  if (!impl.memValid || impl.memScale != 1.f)
    return 0;
  for (const int64_t block : {int64_t{16}, int64_t{8}})
    if (impl.mem.get_desc() == channelBlockedDesc(t, block))
      return block;
  return 0;
}

bool hasChannelViews(const Tensor* whole) {
  const TensorImpl& impl = implOf(whole);
  return impl.memBorrowed || impl.memShared;
}

void markHostWritten(Tensor* y) {
  TensorImpl& impl = implOf(y);
  impl.hostValid = true;
  impl.memValid = false;
  newValues(impl);
}

void markInPlace(Tensor* y, const dnnl::memory& dst) {
  TensorImpl& impl = implOf(y);
  newValues(impl);
  if (dst.get_data_handle() == impl.host) {
    impl.hostValid = true;
    impl.memValid = false;
  } else {
    HPVM_ASSERT(dst.get_data_handle() == impl.mem.get_data_handle(),
                "in-place result is in neither of the tensor's buffers");
    impl.memValid = true;
    impl.hostValid = false;
  }
}

dnnl::memory sameLayoutOutput(const Tensor* x, const dnnl::memory& src,
                              Tensor* y) {
  if (x == y)
    return src;
  return outputMemory(y, src.get_desc());
}

void parallelCopy(void* to, const void* from, size_t bytes) {
  constexpr size_t kChunk = size_t(1) << 20;
  if (bytes <= kChunk) {
    std::memcpy(to, from, bytes);
    return;
  }
  const int64_t chunks = static_cast<int64_t>((bytes + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < chunks; ++i) {
    size_t off = static_cast<size_t>(i) * kChunk;
    std::memcpy(static_cast<char*>(to) + off,
                static_cast<const char*>(from) + off,
                std::min(kChunk, bytes - off));
  }
}

std::string descKey(const dnnl::memory::desc& d) {
  // Built on every layer call: raw bytes, not text. The encoding is
  // prefix-free (each part's length follows from ndims and the counts
  // before it), so keys that concatenate it stay unambiguous.
  const dnnl_memory_desc_t& c = d.data;
  const auto n = static_cast<size_t>(c.ndims);
  std::string key;
  key.reserve(16 + n * 4 * sizeof(int64_t) + 2 * DNNL_MAX_NDIMS * 8);
  auto put = [&key](const void* p, size_t bytes) {
    key.append(static_cast<const char*>(p), bytes);
  };
  const int32_t head[3] = {c.ndims, static_cast<int32_t>(c.data_type),
                           static_cast<int32_t>(c.format_kind)};
  put(head, sizeof head);
  put(c.dims, n * sizeof(c.dims[0]));
  put(c.padded_dims, n * sizeof(c.padded_dims[0]));
  put(c.padded_offsets, n * sizeof(c.padded_offsets[0]));
  // (A window of a larger memory starts at its offset0: primitives apply
  // the offset of the descriptor they were made with.)
  put(&c.offset0, sizeof c.offset0);
  if (c.format_kind == dnnl_blocked) {
    const dnnl_blocking_desc_t& b = c.format_desc.blocking;
    const auto nb = static_cast<size_t>(b.inner_nblks);
    put(b.strides, n * sizeof(b.strides[0]));
    put(&b.inner_nblks, sizeof b.inner_nblks);
    put(b.inner_idxs, nb * sizeof(b.inner_idxs[0]));
    put(b.inner_blks, nb * sizeof(b.inner_blks[0]));
  } else if (c.format_kind == dnnl_format_kind_wino) {
    // A Winograd kernel's weights: the kernel's own packing (F(2x2, 3x3)
    // and F(4x4, 3x3) ones differ for the same dims), field by field.
    const dnnl_wino_desc_t& w = c.format_desc.wino_desc;
    const int32_t fields[9] = {static_cast<int32_t>(w.wino_format),
                               w.r,
                               w.alpha,
                               w.ic,
                               w.oc,
                               w.ic_block,
                               w.oc_block,
                               w.ic2_block,
                               w.oc2_block};
    put(fields, sizeof fields);
    put(&w.adj_scale, sizeof w.adj_scale);
    put(&w.size, sizeof w.size);
  }
  // The extra part: a signed-source int8 convolution's weights carry
  // compensation after the values (a larger buffer than without).
  const dnnl_memory_extra_desc_t& e = c.extra;
  const uint64_t flags = e.flags;
  put(&flags, sizeof flags);
  if (flags != 0) {
    const int32_t masks[2] = {e.compensation_mask, e.asymm_compensation_mask};
    put(masks, sizeof masks);
    put(&e.scale_adjust, sizeof e.scale_adjust);
  }
  return key;
}

const float* hostData(const Tensor* t) {
  ensureHost(const_cast<Tensor*>(t));
  return t->impl->host;
}

} // namespace kern

using namespace kern;

OwnedTensor::OwnedTensor(const Dims4& d)
    : dims{size_t(d[0]), size_t(d[1]), size_t(d[2]), size_t(d[3])} {
  std::memset(&t, 0, sizeof t);
  t.dims.num_dims = 4;
  t.dims.dim_sizes = dims;
  allocHost(&t);
}

OwnedTensor::~OwnedTensor() { releaseStorage(&t); }

void allocHost(Tensor* t) {
  TensorImpl& impl = implOf(t);
  syncCounts(t);
  size_t n = t->num_elems;
  if (impl.host && impl.hostElems >= n) {
    t->host_data = impl.host;
    return;
  }
  if (impl.host && impl.ownsHost)
    poolFree(impl.host, impl.hostElems * sizeof(float));
  impl.host = nullptr;
  // 64-byte alignment suits AVX-512 loads and oneDNN's plain kernels.
  impl.host = static_cast<float*>(poolAlloc(n * sizeof(float)));
  impl.hostElems = n;
  impl.ownsHost = true;
  t->host_data = impl.host;
  t->data_placement = HOST;
  t->data_format = nchw;
}

void ensureHost(Tensor* t) {
  TensorImpl& impl = implOf(t);
  if (impl.hostValid && impl.host) {
    t->host_data = impl.host;
    return;
  }
  allocHost(t);
  if (impl.memValid && !impl.hostValid) {
    // The valid copy is blocked: reorder it back to NCHW.
    dnnl::memory host(nchwDesc(t), engine(), impl.host);
    // (Quantized values: real = q * memScale.)
    reorderScaled(impl.mem, host, impl.memScale);
  }
  impl.hostValid = true;
}

void hostModified(Tensor* t) {
  TensorImpl& impl = implOf(t);
  if (t->host_data != impl.host) {
    // The program replaced the buffer: adopt the new one.
    if (impl.host && impl.ownsHost)
      poolFree(impl.host, impl.hostElems * sizeof(float));
    impl.host = static_cast<float*>(t->host_data);
    impl.hostElems = impl.host ? static_cast<size_t>(numElems(t)) : 0;
    impl.ownsHost = false;
  }
  if (!impl.host)
    allocHost(t);
  impl.hostValid = true;
  impl.memValid = false;
  newValues(impl);
}

int64_t viewChannelBlock() { return approx::haveAvx512() ? 16 : 8; }

void bindChannelView(Tensor* part, Tensor* whole, int64_t offset) {
  const Dims4 pd = dims4(part), wd = dims4(whole);
  const int64_t block = viewChannelBlock();
  HPVM_ASSERT(pd[0] == 1 && wd[0] == 1 && pd[2] == wd[2] && pd[3] == wd[3] &&
                  offset >= 0 && offset % block == 0 && pd[1] % block == 0 &&
                  offset + pd[1] <= wd[1],
              fmt::format("channels {} of {} cannot be a view of {}", offset,
                          dimsStr(part), dimsStr(whole)));
  // The whole: a blocked buffer of its own, kept while views point into
  // it (its values, if any, are overwritten by the parts).
  TensorImpl& w = implOf(whole);
  const dnnl::memory::desc wDesc = channelBlockedDesc(whole, block);
  if (!w.memShared || w.mem.get_desc() != wDesc) {
    HPVM_ASSERT(!w.memBorrowed, "a channel view cannot hold views");
    const size_t bytes = wDesc.get_size();
    if (bytes != w.memBytes) {
      poolFree(w.memBuf, w.memBytes);
      w.memBuf = nullptr;
      w.memBuf = poolAlloc(bytes);
      w.memBytes = bytes;
    }
    w.mem = dnnl::memory(wDesc, engine(), w.memBuf);
    w.memValid = false;
    w.memShared = true;
  }
  if (part == whole)
    return;
  // The part: channels [offset, offset + C) of the whole, contiguous in
  // the blocked layout at batch 1 (offset / block blocks of H x W x block
  // floats in).
  TensorImpl& v = implOf(part);
  HPVM_ASSERT(!v.memShared, "a buffer holding views cannot become a view");
  void* at = static_cast<float*>(w.memBuf) + offset * wd[2] * wd[3];
  const dnnl::memory::desc vDesc = channelBlockedDesc(part, block);
  if (v.memBorrowed && v.memBuf == at && v.mem.get_desc() == vDesc)
    return;
  if (!v.memBorrowed)
    poolFree(v.memBuf, v.memBytes);
  v.memBuf = at;
  v.memBytes = vDesc.get_size();
  v.memBorrowed = true;
  v.mem = dnnl::memory(vDesc, engine(), at);
  v.memValid = false;
}

void releaseStorage(Tensor* t) {
  if (!t || !t->impl)
    return;
  TensorImpl* impl = t->impl;
  if (impl->host && impl->ownsHost) {
    poolFree(impl->host, impl->hostElems * sizeof(float));
    t->host_data = nullptr;
  }
  impl->mem = dnnl::memory();
  if (!impl->memBorrowed)
    poolFree(impl->memBuf, impl->memBytes);
  delete impl;
  t->impl = nullptr;
}

namespace {
/// The thread count setNumThreads() chose; 0 until it is called (OpenMP's
/// default then: OMP_NUM_THREADS or all cores).
std::atomic<int> chosenThreads{0};
} // namespace

void kern::applyThreads() {
  int n = chosenThreads.load(std::memory_order_relaxed);
  if (n > 0 && omp_get_max_threads() != n)
    omp_set_num_threads(n);
}

void setNumThreads(int n) {
  chosenThreads.store(n > 0 ? n : omp_get_num_procs(),
                      std::memory_order_relaxed);
  applyThreads();
}

int numThreads() {
  int n = chosenThreads.load(std::memory_order_relaxed);
  return n > 0 ? n : omp_get_max_threads();
}

} // namespace hpvm::rt
