#!/bin/sh
# kernel_bench.sh - builds scripts/bench/kernel_bench.cpp with hpvm_rt's
# kernel and approximation sources (no executor needed) and runs it.
# Usage: scripts/bench/kernel_bench.sh --net NAME [--batch N] [--threads N]
#          [--repeat N] [--warmup N] [--json]
# The binary is cached in $KERNEL_BENCH_BUILD (default /tmp/kernel_bench_build)
# and rebuilt when a source is newer.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/scripts/bench/build_bench.sh"
bin=${KERNEL_BENCH_BUILD:-${TMPDIR:-/tmp}/kernel_bench_build}/kernel_bench
build_bench "$bin" "$root/scripts/bench/kernel_bench.cpp" \
  "$root"/hpvm_rt/src/kernels/*.cpp "$root"/hpvm_rt/src/approx/*.cpp \
  "$root"/hpvm_rt/src/base/*.cpp
exec "$bin" "$@"
