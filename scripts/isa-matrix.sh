#!/bin/sh
# isa-matrix.sh - the ISA matrix: the kernel and approximation tests and the
# configuration sweeps (every knob on every node against the reference
# algorithms) once per ISA level this machine can emulate by capping
# ONEDNN_MAX_CPU_ISA below its own, so that any machine tests the paths
# other CPUs take (README, "CPU support"). The main ctest run covers the
# machine's own level. A build with -DHPVM_PORTABLE=ON (x86-64-v3
# baseline) runs its kernel tests at the machine's level and at every cap.
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

for cap in $caps; do
  echo "isa-matrix: ONEDNN_MAX_CPU_ISA=$cap"
  ONEDNN_MAX_CPU_ISA=$cap ctest --test-dir "$BUILD" --output-on-failure \
    -j "$(nproc)" -R '^(kernels|approx):|^configs: sweep '
done

if [ -n "$PORTABLE" ]; then
  for cap in "" $caps; do
    echo "isa-matrix: portable build, ONEDNN_MAX_CPU_ISA=${cap:-unset}"
    if [ -n "$cap" ]; then
      ONEDNN_MAX_CPU_ISA=$cap "$PORTABLE/tests/kernels_tests"
    else
      "$PORTABLE/tests/kernels_tests"
    fi
  done
fi
