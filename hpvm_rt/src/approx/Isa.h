// Isa.h - the instruction-set level the whole runtime runs at, and the
// oneDNN primitive descriptors that depend on it.
//
// One level for everything: oneDNN's effective ISA (the CPU's, capped by
// ONEDNN_MAX_CPU_ISA) decides which of our own vector loops run too, so that
// capping it makes the whole program behave as it would on an older CPU.
// The levels, lowest first (README, "CPU support"):
//   avx2         any x86-64 CPU with AVX2 and FMA (x86-64-v3): oneDNN's
//                8-channel kernels, our loops in their portable form; int8
//                weights are 7-bit (no VNNI: vpmaddubsw would saturate)
//   avx512       AVX-512 (F, BW, VL, DQ): our AVX-512 loops
//   avx512_vnni  int8 dot products in one instruction: 8-bit weights
//   avx512_bf16  native bf16 convolutions
//   amx          AMX int8 and bf16 tiles
// AVX512-FP16 (fp16 knobs in half-precision arithmetic) is no level of its
// own: it runs where the CPU has it, at avx512_bf16 or above.
#ifndef HPVM_RT_APPROX_ISA_H
#define HPVM_RT_APPROX_ISA_H

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>

namespace hpvm::rt::approx {

/// Marks a function holding AVX-512 code: compiled for AVX-512 whatever the
/// build's baseline (-march=native or the portable x86-64-v3), called only
/// where haveAvx512() (haveAvx512Vbmi2() for the _VBMI2 one) says so.
#define HPVM_TARGET_AVX512                                                     \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#define HPVM_TARGET_AVX512_VBMI2                                               \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi2")))
#define HPVM_TARGET_AVX512_FP16                                                \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512fp16")))

enum class IsaLevel : uint8_t { Avx2, Avx512, Avx512Vnni, Avx512Bf16, Amx };

/// The level this process runs at (read once, from oneDNN).
IsaLevel isaLevel();
/// Its name as above ("avx2" .. "amx").
const char* isaName(IsaLevel level);

/// The instruction-set extensions this build's baseline (-march) assumes,
/// space-separated (hpvm_rt/CpuFeatures.h).
const char* buildFeatures();

/// Our AVX-512 loops may run (the level is avx512 or above).
bool haveAvx512();
/// ... and AVX512-VBMI2's 8- and 16-bit compress too (the CPU has it).
bool haveAvx512Vbmi2();
/// ... and AVX512-FP16's half-precision arithmetic (the _FP16 functions):
/// the CPU has it and the level is avx512_bf16 or above, so that a cap
/// below (ONEDNN_MAX_CPU_ISA) runs the fp16 knobs' emulation instead.
bool haveAvx512Fp16();
/// oneDNN's int8 kernels sum u8 x s8 products without saturating (VNNI or
/// AMX). Below that, int8 weights are quantized to 7 bits (|q| <= 63) and
/// stored doubled (even, |q| <= 126), which oneDNN's s8-source kernels
/// halve exactly (README, "CPU support").
bool int8Vnni();

/// A convolution primitive descriptor for `desc`, skipping the
/// implementations oneDNN 2.6 gets wrong: its AMX brgconv kernels (int8 and
/// bf16) compute wrong rows or crash when a stride exceeds the kernel's
/// extent along its axis (windows with gaps between them: perforation's
/// class convolutions, 2x2 stride 3), and they read out of bounds while
/// created with two eltwise post-ops in a row (a hard sigmoid: linear,
/// clip); the next implementation is used.
/// Throws dnnl::error as the constructor does when there is none.
dnnl::convolution_forward::primitive_desc
convolutionPd(const dnnl::convolution_forward::desc& desc,
              const dnnl::primitive_attr& attr, const dnnl::engine& eng);

} // namespace hpvm::rt::approx

#endif // HPVM_RT_APPROX_ISA_H
