// TensorImpl.h - private tensor storage of the kernels: the NCHW host
// buffer, the oneDNN (possibly blocked) copy, which of them is valid, and
// the weights reordered from the tensor, cached until the host data changes.
#ifndef HPVM_RT_KERNELS_TENSORIMPL_H
#define HPVM_RT_KERNELS_TENSORIMPL_H

#include "kernels/Kernels.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

/// Storage of one Tensor (the `impl` member of struct Tensor). The host
/// buffer is NCHW float32; `mem` holds the same values in the layout the
/// last oneDNN kernel produced. At least one of the two is valid.
struct TensorImpl {
  float* host = nullptr;  ///< NCHW buffer (== Tensor::host_data).
  size_t hostElems = 0;   ///< Capacity of `host` in floats.
  bool ownsHost = false;  ///< False when the program gave host_data.
  bool hostValid = true;  ///< Host buffer holds the current values.
  dnnl::memory mem;       ///< oneDNN copy over `memBuf`; may be empty.
  void* memBuf = nullptr; ///< Buffer of `mem` (from the buffer pool).
  size_t memBytes = 0;    ///< Size of `memBuf`.
  /// `memBuf` is channels of another tensor's buffer (bindChannelView()),
  /// not owned: a kernel writing this tensor in `mem`'s layout writes
  /// them in place.
  bool memBorrowed = false;
  /// Other tensors' storage are channel views of `memBuf`: it is never
  /// swapped for another buffer while they may point into it.
  bool memShared = false;
  bool memValid = false; ///< `mem` holds the current values.
  /// `mem` may hold u8 or bf16 values (a low-precision layer's output
  /// handed to the next layer as is): real value = stored value *
  /// memScale. Readers that need fp32 get it converted (currentMemory).
  float memScale = 1.f;
  uint64_t version = 0; ///< Changes whenever the values change.
  /// The values are known to be exactly representable in this precision
  /// (a reduced-precision op rounded them), so a consumer with that knob
  /// need not round them again; FP32 when nothing is known. Reset with
  /// every new version.
  hpvm::rt::Precision roundedTo = hpvm::rt::Precision::FP32;
  /// Weights derived from this tensor (reordered, folded, rounded), keyed
  /// by what they were derived with; dropped whenever the values change.
  struct Derived {
    std::string key;
    dnnl::memory weights, bias;
    /// The buffer behind `weights` where weightMemory() made it.
    std::shared_ptr<void> buffer;
    std::vector<float> scales; ///< int8: per-output-channel weight scales.
    /// derivedWeights()'s or packedFilter()'s request in raw form, matched
    /// before any key is built (a layer call at batch 1 must not pay for
    /// strings): the wanted and plain layouts (packedFilter: the packed
    /// one), the rounding, the folded tensors with their versions, and
    /// packedFilter's name (a string literal; null for derivedWeights).
    /// `raw` false: matched by `key` only.
    bool raw = false;
    const char* name = nullptr;
    dnnl::memory::desc want, plain;
    hpvm::rt::Precision round = hpvm::rt::Precision::FP32;
    std::array<const Tensor*, 5> folded{};
    std::array<uint64_t, 5> foldedVersions{};
    double eps = 0;
  };
  std::vector<Derived> derived;
};

namespace hpvm::rt::kern {

/// N, C, H, W of a tensor of 1..4 dims (missing trailing dims are 1).
using Dims4 = std::array<int64_t, 4>;
Dims4 dims4(const Tensor* t);
/// "NxCxHxW" for messages.
std::string dimsStr(const Tensor* t);
int64_t numElems(const Tensor* t);

/// The CPU engine and stream every kernel uses.
dnnl::engine& engine();
dnnl::stream& stream();

/// Returns t's impl, creating it (adopting a program-given host_data).
TensorImpl& implOf(Tensor* t);
inline TensorImpl& implOf(const Tensor* t) {
  return implOf(const_cast<Tensor*>(t));
}

/// Plain NCHW f32 descriptor of t's dims.
dnnl::memory::desc nchwDesc(const Tensor* t);
/// The memory holding t's current fp32 values: the oneDNN copy when valid
/// (and fp32), otherwise the host buffer wrapped as NCHW.
dnnl::memory currentMemory(const Tensor* t);
/// The memory holding t's current values as stored: like currentMemory(),
/// but a u8 or bf16 copy is returned as it is (its scale in
/// implOf(t).memScale), for kernels that consume such data directly.
dnnl::memory storedMemory(const Tensor* t);
/// True when t's only valid copy is its oneDNN memory, of \p want's dims
/// in another data type (u8 at scale memScale, bf16): one reorderScaled()
/// gives want's values.
bool storedInOtherType(const Tensor* t, const dnnl::memory::desc& want);
/// True when t's oneDNN memory is valid and holds want's dims in want's
/// data type, unscaled (a bf16 copy wanted as bf16): a reorder at most.
bool storedInType(const Tensor* t, const dnnl::memory::desc& want);
class PoolBuffer;
/// True when \p a and \p b lay out the same values at the same bytes:
/// equal, or NHWC and nChw16c of 16 channels (one block: the same order).
bool sameBytes(const dnnl::memory::desc& a, const dnnl::memory::desc& b);
/// Returns t's values in layout \p want: currentMemory() when it already
/// is (or is byte for byte, sameBytes()), otherwise a reorder into a pooled
/// buffer that \p hold keeps until the caller drops it (one scaled reorder
/// from a quantized or bf16 copy).
dnnl::memory memoryAs(const Tensor* t, const dnnl::memory::desc& want,
                      std::unique_ptr<PoolBuffer>& hold);
/// Prepares y to receive a kernel result in layout \p d: returns a memory
/// over y's host buffer when d is plain NCHW, else y's own oneDNN buffer
/// (reused when its layout matches). Marks the result as the valid copy.
dnnl::memory outputMemory(Tensor* y, const dnnl::memory::desc& d);
/// Marks y's host buffer as the only valid copy (a host kernel wrote it).
void markHostWritten(Tensor* y);
/// Marks the result of an in-place kernel (dst == src memory) as y's
/// current values.
void markInPlace(Tensor* y, const dnnl::memory& dst);
/// The memory y's result goes to when it has src's layout: src itself when
/// y is the input tensor (in place), else y's own buffer.
dnnl::memory sameLayoutOutput(const Tensor* x, const dnnl::memory& src,
                              Tensor* y);
/// The channel block of \p d when its only inner block is on dim 1 (the
/// 16 of nChw16c, the 4 of aBcd4b), else none.
std::optional<int64_t> channelBlock(const dnnl::memory::desc& d);
/// True when \p d pads its channels (dim 1) past their count.
bool hasChannelPadding(const dnnl::memory::desc& d);
/// Writes zeros over the padded channels of \p m, whose layout has a
/// channelBlock() (oneDNN's kernels expect that padding to hold zeros).
void zeroChannelPadding(const dnnl::memory& m);
/// nChw16c f32 descriptor of t's dims.
dnnl::memory::desc blocked16Desc(const Tensor* t);
/// f32 descriptor of t's dims with the channels in blocks of \p block (16:
/// nChw16c, 8: nChw8c).
dnnl::memory::desc channelBlockedDesc(const Tensor* t, int64_t block);
/// 16 or 8 when t's current values are fp32 (unscaled) in its oneDNN
/// memory as channelBlockedDesc(t, that block) lays them out (a
/// convolution's output), else 0.
int64_t heldChannelBlock(const Tensor* t);
/// True when \p whole's storage is planned for zero-copy concatenation
/// (bindChannelView() made it a channel view, or gave it views).
bool hasChannelViews(const Tensor* whole);
/// A memory descriptor's dims, type, layout and extra part (int8
/// compensation) as raw bytes, for cache keys (not for people to read).
std::string descKey(const dnnl::memory::desc& d);
/// Appends \p parts to a cache key as raw bytes: numbers, enums and arrays
/// of them at their size, strings (other keys' parts, each prefix-free) as
/// their bytes. Keys are built on every layer call; text would cost more.
template <typename... T> void appendKey(std::string& key, const T&... parts) {
  auto one = [&key](const auto& v) {
    using V = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<V, std::string>) {
      key += v;
    } else {
      static_assert(std::is_trivially_copyable_v<V>);
      key.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
  };
  (one(parts), ...);
}
/// A 4-D tensor the kernels own: its dims and storage live as long as it.
struct OwnedTensor {
  explicit OwnedTensor(const Dims4& d);
  OwnedTensor(const OwnedTensor&) = delete;
  OwnedTensor& operator=(const OwnedTensor&) = delete;
  ~OwnedTensor();
  size_t dims[4];
  Tensor t;
};

/// Host pointer of t's NCHW values (calls ensureHost()).
const float* hostData(const Tensor* t);
/// A new version number (monotonic, process wide).
uint64_t nextVersion();
/// Records that the values of the tensor behind `impl` changed: a new
/// version, nothing known about their rounding, derived weights dropped.
void newValues(TensorImpl& impl);

/// A 64-byte aligned buffer of \p bytes from the process-wide pool of
/// released tensor buffers (fresh memory when none fits). Reusing buffers
/// spares the page faults of fresh large allocations on every batch.
/// Fresh buffers of 2 MiB or more are 2 MiB aligned and asked for
/// transparent huge pages (bigAlloc()).
void* poolAlloc(size_t bytes);
/// Fresh memory for \p bytes, released with std::free: 64-byte aligned,
/// and from 2 MiB up 2 MiB aligned with madvise(MADV_HUGEPAGE). Streaming
/// large weights and activations through 4 KiB pages costs a TLB miss
/// every 4 KiB, dear under a hypervisor (VGG16-CIFAR's 9 MiB filters at
/// batch 1: 15% faster, Intel Xeon AMX VM). Throws std::bad_alloc.
void* bigAlloc(size_t bytes);
/// Memory for derived weights in \p d, its buffer from bigAlloc() and
/// owned by \p owner.
dnnl::memory weightMemory(const dnnl::memory::desc& d,
                          TensorImpl::Derived& owner);
/// Returns a poolAlloc() buffer to the pool (frees it when the pool is
/// full).
void poolFree(void* p, size_t bytes);

/// A buffer from the tensor buffer pool, returned on destruction.
class PoolBuffer {
public:
  explicit PoolBuffer(size_t bytes) : bytes_(bytes), p_(poolAlloc(bytes)) {}
  ~PoolBuffer() { poolFree(p_, bytes_); }
  PoolBuffer(const PoolBuffer&) = delete;
  PoolBuffer& operator=(const PoolBuffer&) = delete;
  void* get() const { return p_; }

private:
  size_t bytes_ = 0;
  void* p_ = nullptr;
};

/// Makes the calling thread's OpenMP team size the one setNumThreads()
/// chose (a program may run the graph on a thread of its own, whose
/// OpenMP settings start from the defaults). Called on entry to every
/// layer kernel.
void applyThreads();

/// Reorders \p from into \p to and waits.
void reorder(const dnnl::memory& from, const dnnl::memory& to);
/// The same, multiplying by \p scale on the way (to = scale * from: the
/// real values of quantized ones).
void reorderScaled(const dnnl::memory& from, const dnnl::memory& to,
                   float scale);
/// memcpy split over the kernel threads.
void parallelCopy(void* to, const void* from, size_t bytes);

} // namespace hpvm::rt::kern

#endif // HPVM_RT_KERNELS_TENSORIMPL_H
