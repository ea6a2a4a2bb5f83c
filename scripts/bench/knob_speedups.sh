#!/bin/sh
# knob_speedups.sh - builds scripts/bench/knob_speedups.cpp against hpvm_rt's
# approximate kernels and runs it: per-layer speedup of every convolution
# knob over the exact oneDNN convolution (VGG16-CIFAR, ResNet-18-CIFAR).
# Usage: scripts/bench/knob_speedups.sh [knob_speedups options]
#   (--batch N, --reps N, --net vgg16_cifar10|resnet18_cifar10,
#    --knobs 121,123,..., --json FILE; threads: OMP_NUM_THREADS)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/scripts/bench/build_bench.sh"
bin=${KNOB_BENCH_BUILD:-${TMPDIR:-/tmp}/knob_speedups_build}/knob_speedups
build_bench "$bin" "$root/scripts/bench/knob_speedups.cpp" \
  "$root"/hpvm_rt/src/approx/*.cpp \
  "$root/hpvm_rt/src/core/OpTable.cpp"
exec "$bin" "$@"
