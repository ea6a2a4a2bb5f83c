// Decode.h - element types of stored arrays (IDX, NumPy, CIFAR, bin) and
// their conversion to float32 images and int64 labels.
#ifndef HPVM_DS_DECODE_H
#define HPVM_DS_DECODE_H

#include <cstdint>
#include <string>

namespace hpvm::ds {

/// A stored scalar type.
struct ElemType {
  char kind = 'u'; ///< 'u' unsigned, 'i' signed, 'f' floating point.
  int size = 1;    ///< Bytes.
  bool bigEndian = false;
  /// "uint8", "int64", "float32", ...
  std::string name() const;
  bool isInteger() const { return kind != 'f'; }
};

/// Converts \p n stored values at \p src to float32.
void decodeFloats(const unsigned char* src, const ElemType& t, int64_t n,
                  float* dst);
/// Converts \p n stored integer values at \p src to int64 (unsigned 64-bit
/// values above INT64_MAX saturate).
void decodeInts(const unsigned char* src, const ElemType& t, int64_t n,
                int64_t* dst);

/// Reorders \p n images of \p h x \p w x \p c (channels last) in \p src into
/// channels-first order in \p dst.
void nhwcToNchw(const float* src, int64_t n, int64_t c, int64_t h, int64_t w,
                float* dst);

} // namespace hpvm::ds

#endif // HPVM_DS_DECODE_H
