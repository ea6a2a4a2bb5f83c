// FuzzDatasets.cpp - libFuzzer target: the dataset readers (IDX, CIFAR,
// .npy, .npz, HPVM bin) on any bytes, read to the end. The first byte picks
// the format; the rest is the file, handed over as an in-memory file
// (memfd) so that the readers run exactly as on disk. DatasetError is the
// expected answer to bad input.
#include "hpvm_ds/Dataset.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace {

/// An anonymous in-memory file holding bytes, named /proc/self/fd/N.
struct MemFile {
  int fd = -1;
  std::string path;
  MemFile(const uint8_t* data, size_t size) {
    fd = ::memfd_create("fuzz", MFD_CLOEXEC);
    if (fd < 0 || ::write(fd, data, size) != static_cast<ssize_t>(size))
      __builtin_trap(); // the harness itself failed
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  ~MemFile() { ::close(fd); }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hpvm::ds;
  if (size < 1)
    return 0;
  static const char* formats[] = {"idx",     "npy",      "npz",
                                  "cifar10", "cifar100", "bin"};
  OpenOptions opt;
  opt.format = formats[data[0] % 6];
  opt.labelsOptional = true;
  if (opt.format == "bin")
    opt.shape = ImageShape{1, 2, 2};
  MemFile file(data + 1, size - 1);
  try {
    std::unique_ptr<Source> src = openSource({file.path}, opt);
    // Read everything in chunks of at most 64 samples (bounded memory).
    const int64_t per = src->shape().c * src->shape().h * src->shape().w;
    if (per <= 0 || per > (int64_t(1) << 22))
      return 0;
    std::vector<float> images;
    std::vector<int32_t> labels;
    while (src->position() < src->count()) {
      const int64_t n = std::min<int64_t>(64, src->count() - src->position());
      images.resize(static_cast<size_t>(n * per));
      labels.resize(static_cast<size_t>(n));
      src->read(n, images.data(), labels.data());
    }
  } catch (const DatasetError&) {
  }
  return 0;
}
