// Npy.h - writes float32 arrays in NumPy's .npy format (version 1.0).
#ifndef HPVM_RT_COMMAND_NPY_H
#define HPVM_RT_COMMAND_NPY_H

#include <cstdint>
#include <string>
#include <vector>

namespace hpvm::rt {

/// The .npy header (magic, version 1.0, padded dictionary) of a C-order
/// little-endian float32 array of \p shape; its size is a multiple of 64.
std::string npyHeader(const std::vector<int64_t>& shape);

/// Writes \p data (C order, product of \p shape elements) to \p path as a
/// .npy file, atomically. Throws UserError on failure.
void writeNpy(const std::string& path, const std::vector<int64_t>& shape,
              const float* data);

/// One array of a .npz file.
struct NpzArray {
  std::string name; ///< Its key in NumPy's np.load (the member "name.npy").
  std::vector<int64_t> shape;
  const float* data;
};

/// Writes \p arrays to \p path as a .npz file (an uncompressed zip of
/// .npy members), atomically. Names are made keys NumPy reads back: bytes
/// other than letters, digits, '_', '-' and '.' become '_', repeats gain a
/// suffix. Throws UserError on failure or past zip's 4 GiB limit.
void writeNpz(const std::string& path, const std::vector<NpzArray>& arrays);

} // namespace hpvm::rt

#endif // HPVM_RT_COMMAND_NPY_H
