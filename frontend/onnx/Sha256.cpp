// Sha256.cpp - SHA-256 through nettle (Debian's nettle-dev), not our own
// implementation of the hash.
#include "onnx/Sha256.h"

#include <nettle/sha2.h>

#include <cstdint>

namespace hpvm::fe {

struct Sha256::State {
  sha256_ctx ctx;
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
  sha256_init(&state_->ctx);
}

Sha256::~Sha256() = default;

void Sha256::add(std::string_view bytes) {
  // nettle takes size_t lengths: any size in one call.
  sha256_update(&state_->ctx, bytes.size(),
                reinterpret_cast<const uint8_t*>(bytes.data()));
}

std::string Sha256::hex() {
  uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_digest(&state_->ctx, sizeof digest, digest);
  static const char hexDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * SHA256_DIGEST_SIZE);
  for (uint8_t b : digest) {
    out += hexDigits[b >> 4];
    out += hexDigits[b & 15];
  }
  return out;
}

std::string sha256Hex(std::string_view bytes) {
  Sha256 hash;
  hash.add(bytes);
  return hash.hex();
}

} // namespace hpvm::fe
