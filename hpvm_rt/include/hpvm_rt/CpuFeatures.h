// CpuFeatures.h - the instruction-set extensions a build of hpvm_rt assumes
// (its -march baseline), and which of them this CPU lacks.
//
// hpvm_rt's kernels are compiled for the build machine (-march=native) or
// for x86-64-v3 (HPVM_PORTABLE). A program library carried to another CPU
// (a saved TorchScript module) must be refused there before any of its code
// runs, not die of SIGILL: its library records the baseline
// (hpvm_rt_build_features()), and missingCpuFeatures() is compiled for any
// x86-64 CPU.
#ifndef HPVM_RT_CPUFEATURES_H
#define HPVM_RT_CPUFEATURES_H

#include <cpuid.h>

#include <sstream>
#include <string>

namespace hpvm_rt {

/// The baseline of the translation unit that expands it, as the
/// space-separated names missingCpuFeatures() knows ("avx2 fma ...").
#define HPVM_RT_BUILD_FEATURES                                                 \
  HPVM_RT_FEATURE_AVX2 HPVM_RT_FEATURE_FMA HPVM_RT_FEATURE_BMI                 \
      HPVM_RT_FEATURE_BMI2 HPVM_RT_FEATURE_AVX512F HPVM_RT_FEATURE_AVX512VL    \
          HPVM_RT_FEATURE_AVX512BW HPVM_RT_FEATURE_AVX512DQ                    \
              HPVM_RT_FEATURE_AVX512CD HPVM_RT_FEATURE_AVX512VBMI              \
                  HPVM_RT_FEATURE_AVX512VBMI2 HPVM_RT_FEATURE_AVX512VNNI       \
                      HPVM_RT_FEATURE_AVX512BF16 HPVM_RT_FEATURE_AVX512FP16    \
                          HPVM_RT_FEATURE_AVXVNNI
#ifdef __AVX2__
#define HPVM_RT_FEATURE_AVX2 " avx2"
#else
#define HPVM_RT_FEATURE_AVX2 ""
#endif
#ifdef __FMA__
#define HPVM_RT_FEATURE_FMA " fma"
#else
#define HPVM_RT_FEATURE_FMA ""
#endif
#ifdef __BMI__
#define HPVM_RT_FEATURE_BMI " bmi"
#else
#define HPVM_RT_FEATURE_BMI ""
#endif
#ifdef __BMI2__
#define HPVM_RT_FEATURE_BMI2 " bmi2"
#else
#define HPVM_RT_FEATURE_BMI2 ""
#endif
#ifdef __AVX512F__
#define HPVM_RT_FEATURE_AVX512F " avx512f"
#else
#define HPVM_RT_FEATURE_AVX512F ""
#endif
#ifdef __AVX512VL__
#define HPVM_RT_FEATURE_AVX512VL " avx512vl"
#else
#define HPVM_RT_FEATURE_AVX512VL ""
#endif
#ifdef __AVX512BW__
#define HPVM_RT_FEATURE_AVX512BW " avx512bw"
#else
#define HPVM_RT_FEATURE_AVX512BW ""
#endif
#ifdef __AVX512DQ__
#define HPVM_RT_FEATURE_AVX512DQ " avx512dq"
#else
#define HPVM_RT_FEATURE_AVX512DQ ""
#endif
#ifdef __AVX512CD__
#define HPVM_RT_FEATURE_AVX512CD " avx512cd"
#else
#define HPVM_RT_FEATURE_AVX512CD ""
#endif
#ifdef __AVX512VBMI__
#define HPVM_RT_FEATURE_AVX512VBMI " avx512vbmi"
#else
#define HPVM_RT_FEATURE_AVX512VBMI ""
#endif
#ifdef __AVX512VBMI2__
#define HPVM_RT_FEATURE_AVX512VBMI2 " avx512vbmi2"
#else
#define HPVM_RT_FEATURE_AVX512VBMI2 ""
#endif
#ifdef __AVX512VNNI__
#define HPVM_RT_FEATURE_AVX512VNNI " avx512vnni"
#else
#define HPVM_RT_FEATURE_AVX512VNNI ""
#endif
#ifdef __AVX512BF16__
#define HPVM_RT_FEATURE_AVX512BF16 " avx512bf16"
#else
#define HPVM_RT_FEATURE_AVX512BF16 ""
#endif
#ifdef __AVX512FP16__
#define HPVM_RT_FEATURE_AVX512FP16 " avx512fp16"
#else
#define HPVM_RT_FEATURE_AVX512FP16 ""
#endif
#ifdef __AVXVNNI__
#define HPVM_RT_FEATURE_AVXVNNI " avxvnni"
#else
#define HPVM_RT_FEATURE_AVXVNNI ""
#endif

/// Whether this CPU has extension \p name (a name of
/// HPVM_RT_BUILD_FEATURES; an unknown name counts as absent).
inline bool cpuHasFeature(const std::string& name) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (name == "avx512fp16") // (clang 14's builtin does not know it)
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d & (1u << 23));
  if (name == "avxvnni")
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 4));
#define HPVM_RT_CPU_HAS(feature)                                               \
  if (name == feature)                                                         \
    return __builtin_cpu_supports(feature);
  HPVM_RT_CPU_HAS("avx2")
  HPVM_RT_CPU_HAS("fma")
  HPVM_RT_CPU_HAS("bmi")
  HPVM_RT_CPU_HAS("bmi2")
  HPVM_RT_CPU_HAS("avx512f")
  HPVM_RT_CPU_HAS("avx512vl")
  HPVM_RT_CPU_HAS("avx512bw")
  HPVM_RT_CPU_HAS("avx512dq")
  HPVM_RT_CPU_HAS("avx512cd")
  HPVM_RT_CPU_HAS("avx512vbmi")
  HPVM_RT_CPU_HAS("avx512vbmi2")
  HPVM_RT_CPU_HAS("avx512vnni")
  HPVM_RT_CPU_HAS("avx512bf16")
#undef HPVM_RT_CPU_HAS
  return false;
}

/// The extensions of \p features (space-separated) this CPU lacks, joined
/// by ", " ("" when it has them all).
inline std::string missingCpuFeatures(const std::string& features) {
  std::istringstream in(features);
  std::string name, missing;
  while (in >> name)
    if (!cpuHasFeature(name))
      missing += (missing.empty() ? "" : ", ") + name;
  return missing;
}

} // namespace hpvm_rt

#endif // HPVM_RT_CPUFEATURES_H
