// Decode.cpp - stored scalars (any size, either byte order) to float32 and
// int64; channels-last to channels-first reordering.
#include "Decode.h"

#include <cstring>
#include <limits>
#include <type_traits>

namespace hpvm::ds {

std::string ElemType::name() const {
  const char* k = kind == 'u' ? "uint" : kind == 'i' ? "int" : "float";
  return k + std::to_string(size * 8);
}

namespace {

/// Loads one value of type T stored with the given byte order.
template <typename T> T load(const unsigned char* p, bool swap) {
  unsigned char b[sizeof(T)];
  if (swap) {
    for (size_t i = 0; i < sizeof(T); ++i)
      b[i] = p[sizeof(T) - 1 - i];
  } else {
    std::memcpy(b, p, sizeof(T));
  }
  T v;
  std::memcpy(&v, b, sizeof(T));
  return v;
}

constexpr bool kHostBigEndian = false;
static_assert(sizeof(float) == 4 && sizeof(double) == 8,
              "IEEE-754 float32/float64 expected");

template <typename T, typename Out>
void convert(const unsigned char* src, bool swap, int64_t n, Out* dst) {
  if (!swap) {
    // Loop: each value (the compiler vectorises this for uint8 and float).
    for (int64_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, src + i * sizeof(T), sizeof(T));
      dst[i] = static_cast<Out>(v);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    dst[i] = static_cast<Out>(load<T>(src + i * sizeof(T), true));
}

template <typename Out>
void dispatch(const unsigned char* src, const ElemType& t, int64_t n,
              Out* dst) {
  bool swap = t.size > 1 && t.bigEndian != kHostBigEndian;
  switch (t.kind) {
  case 'u':
    switch (t.size) {
    case 1:
      return convert<uint8_t>(src, false, n, dst);
    case 2:
      return convert<uint16_t>(src, swap, n, dst);
    case 4:
      return convert<uint32_t>(src, swap, n, dst);
    default:
      break;
    }
    break;
  case 'i':
    switch (t.size) {
    case 1:
      return convert<int8_t>(src, false, n, dst);
    case 2:
      return convert<int16_t>(src, swap, n, dst);
    case 4:
      return convert<int32_t>(src, swap, n, dst);
    case 8:
      return convert<int64_t>(src, swap, n, dst);
    default:
      break;
    }
    break;
  case 'f':
    if (t.size == 4)
      return convert<float>(src, swap, n, dst);
    if (t.size == 8)
      return convert<double>(src, swap, n, dst);
    break;
  default:
    break;
  }
  // uint64 (and anything the readers let through unexpectedly).
  for (int64_t i = 0; i < n; ++i) {
    uint64_t v = load<uint64_t>(src + i * 8, swap);
    if constexpr (std::is_same_v<Out, int64_t>)
      dst[i] = v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                   ? std::numeric_limits<int64_t>::max()
                   : static_cast<int64_t>(v);
    else
      dst[i] = static_cast<Out>(v);
  }
}

} // namespace

void decodeFloats(const unsigned char* src, const ElemType& t, int64_t n,
                  float* dst) {
  dispatch(src, t, n, dst);
}

void decodeInts(const unsigned char* src, const ElemType& t, int64_t n,
                int64_t* dst) {
  dispatch(src, t, n, dst);
}

void nhwcToNchw(const float* src, int64_t n, int64_t c, int64_t h, int64_t w,
                float* dst) {
  int64_t plane = h * w;
  // Loop: images; pixels of the image; channels of the pixel.
  for (int64_t img = 0; img < n; ++img) {
    const float* s = src + img * plane * c;
    float* d = dst + img * plane * c;
    for (int64_t p = 0; p < plane; ++p)
      for (int64_t ch = 0; ch < c; ++ch)
        d[ch * plane + p] = s[p * c + ch];
  }
}

} // namespace hpvm::ds
