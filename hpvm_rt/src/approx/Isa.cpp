// Isa.cpp - the runtime's instruction-set level (Isa.h).
#include "approx/Isa.h"

#include "hpvm_rt/CpuFeatures.h"

#include <cpuid.h>

#include <cstring>

namespace hpvm::rt::approx {

namespace {

/// True when oneDNN's effective ISA includes all of `need`'s features
/// (dnnl::cpu_isa values are feature bit sets).
bool includes(dnnl::cpu_isa isa, dnnl::cpu_isa need) {
  const auto have = static_cast<unsigned>(isa);
  const auto want = static_cast<unsigned>(need);
  return (have & want) == want;
}

IsaLevel levelOf(dnnl::cpu_isa isa) {
  using I = dnnl::cpu_isa;
  if (includes(isa, I::avx512_core_amx))
    return IsaLevel::Amx;
  if (includes(isa, I::avx512_core_bf16))
    return IsaLevel::Avx512Bf16;
  if (includes(isa, I::avx512_core_vnni))
    return IsaLevel::Avx512Vnni;
  if (includes(isa, I::avx512_core))
    return IsaLevel::Avx512;
  return IsaLevel::Avx2;
}

/// The extent of a kernel of `k` taps with oneDNN's dilation `d` (0: none).
int64_t extent(int64_t k, int64_t d) { return (k - 1) * (d + 1) + 1; }

/// True when some stride of `desc` exceeds the kernel's extent along its
/// axis: the windows leave input rows or columns between them unread.
bool windowsHaveGaps(const dnnl::convolution_forward::desc& desc) {
  const dnnl_convolution_desc_t& d = desc.data;
  const int spatial = d.src_desc.ndims - 2;
  const int wnd = d.weights_desc.ndims;
  for (int i = 0; i < spatial; ++i) {
    const int64_t k = d.weights_desc.dims[wnd - spatial + i];
    if (d.strides[i] > extent(k, d.dilates[i]))
      return true;
  }
  return false;
}

/// True when `attr`'s post-ops hold two eltwise operations in a row (a
/// hard sigmoid: linear, then clip).
bool twoEltwiseInARow(const dnnl::primitive_attr& attr) {
  const dnnl::post_ops ops = attr.get_post_ops();
  for (int i = 1; i < ops.len(); ++i)
    if (ops.kind(i - 1) == dnnl::primitive::kind::eltwise &&
        ops.kind(i) == dnnl::primitive::kind::eltwise)
      return true;
  return false;
}

/// oneDNN 2.6's AMX brgconv kernels (not its 1x1 ones, which are only
/// chosen without padding and compute such strides right).
bool isAmxBrgconv(const dnnl::primitive_desc_base& pd) {
  const char* impl = pd.impl_info_str();
  return std::strncmp(impl, "brgconv:", 8) == 0 &&
         std::strstr(impl, "amx") != nullptr;
}

} // namespace

IsaLevel isaLevel() {
  static const IsaLevel level = levelOf(dnnl::get_effective_cpu_isa());
  return level;
}

const char* isaName(IsaLevel level) {
  switch (level) {
  case IsaLevel::Avx2:
    return "avx2";
  case IsaLevel::Avx512:
    return "avx512";
  case IsaLevel::Avx512Vnni:
    return "avx512_vnni";
  case IsaLevel::Avx512Bf16:
    return "avx512_bf16";
  case IsaLevel::Amx:
    return "amx";
  }
  return "avx2";
}

const char* buildFeatures() { return "" HPVM_RT_BUILD_FEATURES; }

bool haveAvx512() {
  static const bool have =
      isaLevel() >= IsaLevel::Avx512 && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return have;
}

bool haveAvx512Vbmi2() {
  static const bool have =
      haveAvx512() && __builtin_cpu_supports("avx512vbmi2");
  return have;
}

bool haveAvx512Fp16() {
  static const bool have = [] {
    // (CPUID leaf 7, EDX bit 23; GCC's __builtin_cpu_supports knows the
    // name, clang 14's does not.)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return isaLevel() >= IsaLevel::Avx512Bf16 && haveAvx512() &&
           __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 &&
           (edx & (1u << 23)) != 0;
  }();
  return have;
}

bool int8Vnni() { return isaLevel() >= IsaLevel::Avx512Vnni; }

dnnl::convolution_forward::primitive_desc
convolutionPd(const dnnl::convolution_forward::desc& desc,
              const dnnl::primitive_attr& attr, const dnnl::engine& eng) {
  dnnl::convolution_forward::primitive_desc pd(desc, attr, eng);
  if (!windowsHaveGaps(desc) && !twoEltwiseInARow(attr))
    return pd;
  while (isAmxBrgconv(pd))
    if (!pd.next_impl())
      throw dnnl::error(dnnl_unimplemented,
                        "no convolution implementation but AMX brgconv");
  return pd;
}

} // namespace hpvm::rt::approx
