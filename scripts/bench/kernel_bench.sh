#!/bin/sh
# kernel_bench.sh - builds scripts/bench/kernel_bench.cpp with hpvm_rt's
# kernel and approximation sources (no executor needed) and runs it.
# Usage: scripts/bench/kernel_bench.sh --net NAME [--batch N] [--threads N]
#          [--repeat N] [--warmup N] [--json]
# The binary is cached in $KERNEL_BENCH_BUILD (default /tmp/kernel_bench_build)
# and rebuilt when a source is newer.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${KERNEL_BENCH_BUILD:-${TMPDIR:-/tmp}/kernel_bench_build}
mkdir -p "$out"
cxx=${CXX:-c++}
bin="$out/kernel_bench"
srcs="$root/scripts/bench/kernel_bench.cpp $root/hpvm_rt/src/kernels/*.cpp
      $root/hpvm_rt/src/approx/*.cpp"
stale=1
if [ -x "$bin" ]; then
  stale=0
  for s in $srcs "$root"/hpvm_rt/src/kernels/*.h \
           "$root"/hpvm_rt/src/approx/*.h; do
    [ "$s" -nt "$bin" ] && stale=1
  done
fi
if [ "$stale" = 1 ]; then
  echo "kernel_bench.sh: building $bin" >&2
  # shellcheck disable=SC2086
  $cxx -std=c++17 -O3 -march=native -fopenmp -DNDEBUG \
    -I"$root/hpvm_rt/include" -I"$root/hpvm_rt/src" \
    $srcs -o "$bin.tmp" -ldnnl -lfmt
  mv "$bin.tmp" "$bin"
fi
exec "$bin" "$@"
