#!/bin/sh
# knob_e2e.sh - builds scripts/bench/knob_e2e.cpp with hpvm_rt's kernel and
# approximation sources and runs it: per-layer time of every convolution
# knob through runConv, as generated programs call it (issue #4).
# Usage: scripts/bench/knob_e2e.sh [--batch N] [--reps N] [--knobs ID,...]
#          [--layer SUBSTRING] [--blocked-input]   (threads: OMP_NUM_THREADS)
# The binary is cached in $KNOB_E2E_BUILD (default /tmp/knob_e2e_build) and
# rebuilt when a source is newer.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${KNOB_E2E_BUILD:-${TMPDIR:-/tmp}/knob_e2e_build}
mkdir -p "$out"
cxx=${CXX:-c++}
bin="$out/knob_e2e"
srcs="$root/scripts/bench/knob_e2e.cpp $root/hpvm_rt/src/kernels/*.cpp
      $root/hpvm_rt/src/approx/*.cpp
      $root/hpvm_rt/src/core/OpTable.cpp"
stale=1
if [ -x "$bin" ]; then
  stale=0
  for s in $srcs "$root"/hpvm_rt/src/kernels/*.h \
           "$root"/hpvm_rt/src/approx/*.h \
           "$root/hpvm_rt/include/hpvm_rt/Ops.def"; do
    [ "$s" -nt "$bin" ] && stale=1
  done
fi
if [ "$stale" = 1 ]; then
  echo "knob_e2e.sh: building $bin" >&2
  # shellcheck disable=SC2086
  $cxx -std=c++17 -O3 -march=native -fopenmp -DNDEBUG \
    -I"$root/hpvm_rt/include" -I"$root/hpvm_rt/src" \
    $srcs -o "$bin.tmp" -ldnnl -lfmt
  mv "$bin.tmp" "$bin"
fi
exec "$bin" "$@"
