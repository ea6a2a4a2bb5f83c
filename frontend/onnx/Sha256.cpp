// Sha256.cpp - SHA-256 through nettle (Debian's nettle-dev), not our own
// implementation of the hash.
#include "onnx/Sha256.h"

#include <nettle/sha2.h>

#include <cstdint>

namespace hpvm::fe {

std::string sha256Hex(std::string_view bytes) {
  sha256_ctx ctx;
  sha256_init(&ctx);
  // nettle takes size_t lengths: any size in one call.
  sha256_update(&ctx, bytes.size(),
                reinterpret_cast<const uint8_t*>(bytes.data()));
  uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_digest(&ctx, sizeof digest, digest);
  static const char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * SHA256_DIGEST_SIZE);
  for (uint8_t b : digest) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

} // namespace hpvm::fe
