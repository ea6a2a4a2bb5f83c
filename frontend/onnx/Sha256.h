// Sha256.h - SHA-256 of a byte string (FIPS 180-4), for model provenance.
#ifndef TORCH2HPVM_FRONTEND_ONNX_SHA256_H
#define TORCH2HPVM_FRONTEND_ONNX_SHA256_H

#include <memory>
#include <string>
#include <string_view>

namespace hpvm::fe {

/// The SHA-256 digest of \p bytes as 64 lowercase hex digits.
std::string sha256Hex(std::string_view bytes);

/// A SHA-256 digest of bytes given in parts (a file read in chunks).
class Sha256 {
public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void add(std::string_view bytes);
  /// The digest of everything added, as 64 lowercase hex digits.
  std::string hex();

private:
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_ONNX_SHA256_H
