#!/bin/sh
# knob_speedups.sh - builds scripts/bench/knob_speedups.cpp against the
# hpvm_rt library of the CMake build (bringing it up to date first) and runs
# it: per-layer speedup of every convolution knob of Ops.def over the exact
# fp32 knob, both through runConv (VGG16-CIFAR10, ResNet-18-CIFAR10).
# Usage: scripts/bench/knob_speedups.sh [knob_speedups options]
#   (--batch N, --reps N, --net vgg16_cifar10|resnet18_cifar10,
#    --layer NAME, --knobs 12,301,..., --threads N, --json FILE;
#    --help lists all; threads default to OMP_NUM_THREADS)
# Environment: HPVM_BUILD_DIR (default <repo>/build), HPVM_RT_NO_BUILD=1
# (use the library as it is), KNOB_BENCH_BUILD (binary's directory, default
# /tmp/knob_speedups_build), CXX.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/scripts/bench/build_bench.sh"
bin=${KNOB_BENCH_BUILD:-${TMPDIR:-/tmp}/knob_speedups_build}/knob_speedups
build_bench_rt "$bin" "$root/scripts/bench/knob_speedups.cpp"
exec "$bin" "$@"
