#!/bin/sh
# knob_speedups.sh - builds scripts/bench/knob_speedups.cpp against hpvm_rt's
# approximate kernels and runs it: per-layer speedup of every convolution
# knob over the exact oneDNN convolution (VGG16-CIFAR, ResNet-18-CIFAR).
# Usage: scripts/bench/knob_speedups.sh [knob_speedups options]
#   (--batch N, --reps N, --net vgg16_cifar10|resnet18_cifar10,
#    --knobs 121,123,..., --json FILE; threads: OMP_NUM_THREADS)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${KNOB_BENCH_BUILD:-${TMPDIR:-/tmp}/knob_speedups_build}
mkdir -p "$out"
cxx=${CXX:-c++}
bin="$out/knob_speedups"
srcs="$root/scripts/bench/knob_speedups.cpp $root/hpvm_rt/src/approx/*.cpp
      $root/hpvm_rt/src/core/OpTable.cpp"
# Rebuild when any source is newer than the binary.
stale=1
if [ -x "$bin" ]; then
  stale=0
  for s in $srcs "$root"/hpvm_rt/src/approx/*.h \
           "$root/hpvm_rt/src/kernels/Kernels.h" \
           "$root/hpvm_rt/include/hpvm_rt/Ops.def"; do
    [ "$s" -nt "$bin" ] && stale=1
  done
fi
if [ "$stale" = 1 ]; then
  set -x
  $cxx -std=c++17 -O3 -march=native -fopenmp -DNDEBUG \
    -I"$root/hpvm_rt/include" -I"$root/hpvm_rt/src" \
    $srcs -o "$bin.tmp" -ldnnl
  mv "$bin.tmp" "$bin"
  set +x
fi
exec "$bin" "$@"
