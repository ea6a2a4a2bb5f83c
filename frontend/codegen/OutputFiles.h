// OutputFiles.h - writing generated files: atomic writes, weight binaries,
// dataset copies and file digests.
#ifndef TORCH2HPVM_FRONTEND_CODEGEN_OUTPUTFILES_H
#define TORCH2HPVM_FRONTEND_CODEGEN_OUTPUTFILES_H

#include "ir/Graph.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace hpvm::fe {

/// SHA-256 of the file at \p path as hex (sha256Hex() of onnx/Sha256.h);
/// UserError if it cannot be read.
std::string sha256File(const std::string& path);

/// Writes \p bytes to \p path atomically: a temporary file in the same
/// directory, flushed, then renamed over \p path. UserError on failure, with
/// the temporary file removed.
void writeFileAtomic(const std::string& path, std::string_view bytes);

/// Writes constant \p data as raw little-endian float32 (converting from any
/// numeric dtype), atomically; returns the SHA-256 (hex) of the bytes
/// written, computed from memory.
std::string writeWeightFile(const std::string& path, const TensorData& data);

/// The start of the temporary names beside a file or folder named
/// \p leaf: "." + leaf (cut with a hash past 200 bytes, so that a name of
/// 255 bytes still has one) + ".tmp-".
std::string tempPrefixFor(const std::string& leaf);

/// Copies \p from to \p to atomically (copy_file_range: a reflink where the
/// file system supports it).
void copyFileAtomic(const std::string& from, const std::string& to);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_CODEGEN_OUTPUTFILES_H
