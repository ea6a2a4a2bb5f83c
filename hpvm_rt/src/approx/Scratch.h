// Scratch.h - reusable scratch buffers for the approximate convolutions, so
// that large temporaries are not re-faulted into memory on every call.
#ifndef HPVM_RT_APPROX_SCRATCH_H
#define HPVM_RT_APPROX_SCRATCH_H

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

namespace hpvm::rt::approx {

/// A set of grow-only, 64-byte aligned buffers. One call of an approximate
/// convolution leases the whole set; a concurrent call gets a private set
/// (correct, only slower).
class ScratchPool {
public:
  /// One aligned buffer.
  struct Buffer {
    void* data = nullptr;
    size_t bytes = 0;
  };

  /// Buffers of one lease; slot(i, bytes) returns buffer i with at least
  /// `bytes` bytes (contents undefined).
  class Lease {
  public:
    explicit Lease(ScratchPool& pool);
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    /// Buffer number `i`, grown to at least `bytes`.
    void* slot(size_t i, size_t bytes);

  private:
    ScratchPool& pool_;
    std::vector<Buffer> buffers_;
    bool shared_ = false; ///< buffers_ belong to the pool.
  };

  ScratchPool() = default;
  ~ScratchPool();
  ScratchPool(const ScratchPool&) = delete;
  ScratchPool& operator=(const ScratchPool&) = delete;

private:
  friend class Lease;
  std::mutex mutex_;
  bool leased_ = false;
  std::vector<Buffer> stored_;
};

/// The pool shared by perforation and sampling.
ScratchPool& scratchPool();

} // namespace hpvm::rt::approx

#endif // HPVM_RT_APPROX_SCRATCH_H
