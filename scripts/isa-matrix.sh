#!/bin/sh
# isa-matrix.sh - the ISA matrix: the kernel and approximation tests and the
# configuration sweeps (every knob on every node against the reference
# algorithms) under each ISA level this machine can emulate by capping
# ONEDNN_MAX_CPU_ISA below its own, so that any machine tests the paths
# other CPUs take (README, "CPU support"). The main ctest run covers the
# machine's own level. Each cap runs the tests whose path it changes:
#   AVX2              all of them (oneDNN's 8-channel kernels, our portable
#                     loops, 7-bit int8 weights)
#   AVX512_CORE       the int8 and bf16 ones (fp32 and fp16 take the paths
#                     they take at every AVX-512 level)
#   AVX512_CORE_VNNI  the int8 ones (bf16 as under AVX512_CORE)
#   AVX512_CORE_BF16  the bf16 ones (int8 as under AVX512_CORE_VNNI)
# and every sweep. A build with -DHPVM_PORTABLE=ON (x86-64-v3 baseline)
# runs its kernel tests at the machine's level and under AVX2: our AVX-512
# loops are compiled per function, the same in both builds.
# Usage: scripts/isa-matrix.sh [BUILD_DIR (default build)] [PORTABLE_DIR]
set -eu
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
PORTABLE="${2:-}"

# The levels, lowest first, as ONEDNN_MAX_CPU_ISA names them, with the CPU
# flags each needs (hpvm_rt/src/approx/Isa.h).
flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() {
  for f in "$@"; do
    case " $flags " in *" $f "*) ;; *) return 1 ;; esac
  done
}
native=AVX2
has avx512f avx512bw avx512vl avx512dq && native=AVX512_CORE
[ "$native" = AVX512_CORE ] && has avx512_vnni && native=AVX512_CORE_VNNI
[ "$native" = AVX512_CORE_VNNI ] && has avx512_bf16 &&
  native=AVX512_CORE_BF16
[ "$native" = AVX512_CORE_BF16 ] && has amx_tile amx_int8 amx_bf16 &&
  native=AVX512_CORE_AMX

# Every level below the native one.
caps=""
for level in AVX2 AVX512_CORE AVX512_CORE_VNNI AVX512_CORE_BF16; do
  [ "$level" = "$native" ] && break
  caps="$caps $level"
done
echo "isa-matrix: this CPU's level is $native; capped runs:${caps:- none}"

# The test names that say which precision a case runs in; "Isa:" cases
# check the level itself and the implementations oneDNN picks. (fp16 runs
# in half arithmetic from avx512_bf16 up where the CPU has AVX512-FP16,
# emulated below: its cases go with bf16's.)
int8='int8|Isa:'
bf16='bf16|fp16|half|precision|Isa:'
for cap in $caps; do
  case $cap in
    AVX2) only='' ;;
    AVX512_CORE) only="int8|$bf16" ;;
    AVX512_CORE_VNNI) only="$int8" ;;
    AVX512_CORE_BF16) only="$bf16" ;;
  esac
  echo "isa-matrix: ONEDNN_MAX_CPU_ISA=$cap${only:+ (the cases matching $only)}"
  ONEDNN_MAX_CPU_ISA=$cap ctest --test-dir "$BUILD" --output-on-failure \
    -j "$(nproc)" -R "^(kernels|approx):.*(${only:-.})|^configs: sweep "
done

if [ -n "$PORTABLE" ]; then
  echo "isa-matrix: portable build, ONEDNN_MAX_CPU_ISA unset"
  "$PORTABLE/tests/kernels_tests"
  case " $caps " in
    *" AVX2 "*)
      echo "isa-matrix: portable build, ONEDNN_MAX_CPU_ISA=AVX2"
      ONEDNN_MAX_CPU_ISA=AVX2 "$PORTABLE/tests/kernels_tests"
      ;;
  esac
fi
