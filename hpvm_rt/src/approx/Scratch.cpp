// Scratch.cpp - the grow-only scratch buffers of the approximate
// convolutions.
#include "approx/Scratch.h"

#include <new>

namespace hpvm::rt::approx {

ScratchPool::Lease::Lease(ScratchPool& pool) : pool_(pool) {
  std::lock_guard<std::mutex> lock(pool_.mutex_);
  if (!pool_.leased_) {
    pool_.leased_ = true;
    shared_ = true;
    buffers_.swap(pool_.stored_);
  }
}

ScratchPool::Lease::~Lease() {
  if (shared_) {
    std::lock_guard<std::mutex> lock(pool_.mutex_);
    pool_.stored_.swap(buffers_);
    pool_.leased_ = false;
  }
  for (Buffer& b : buffers_)
    std::free(b.data);
}

void* ScratchPool::Lease::slot(size_t i, size_t bytes) {
  if (buffers_.size() <= i)
    buffers_.resize(i + 1);
  Buffer& b = buffers_[i];
  if (b.bytes < bytes) {
    std::free(b.data);
    b.data = nullptr;
    b.bytes = 0;
    const size_t rounded = (bytes + 63) / 64 * 64;
    b.data = std::aligned_alloc(64, rounded);
    if (!b.data)
      throw std::bad_alloc();
    b.bytes = rounded;
  }
  return b.data;
}

ScratchPool::~ScratchPool() {
  for (Buffer& b : stored_)
    std::free(b.data);
}

ScratchPool& scratchPool() {
  static ScratchPool pool;
  return pool;
}

} // namespace hpvm::rt::approx
