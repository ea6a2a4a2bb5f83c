// Sha256.h - SHA-256 of a byte string (FIPS 180-4), for model provenance.
#ifndef TORCH2HPVM_FRONTEND_ONNX_SHA256_H
#define TORCH2HPVM_FRONTEND_ONNX_SHA256_H

#include <string>
#include <string_view>

namespace hpvm::fe {

/// The SHA-256 digest of \p bytes as 64 lowercase hex digits.
std::string sha256Hex(std::string_view bytes);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_ONNX_SHA256_H
