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
. "$root/scripts/bench/build_bench.sh"
bin=${KNOB_E2E_BUILD:-${TMPDIR:-/tmp}/knob_e2e_build}/knob_e2e
build_bench "$bin" "$root/scripts/bench/knob_e2e.cpp" \
  "$root"/hpvm_rt/src/kernels/*.cpp "$root"/hpvm_rt/src/approx/*.cpp \
  "$root/hpvm_rt/src/core/OpTable.cpp"
exec "$bin" "$@"
