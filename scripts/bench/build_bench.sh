# build_bench.sh - sourced by the benchmark scripts (kernel_bench.sh,
# knob_e2e.sh, knob_speedups.sh); not run on its own.
#
# build_bench BIN SOURCE... - compiles the benchmark BIN from SOURCE... (a
# benchmark's .cpp with the hpvm_rt sources it needs) with the flags every
# benchmark uses, when BIN is missing or a source, an hpvm_rt header or
# Ops.def is newer than it. $root is the repository root; CXX picks the
# compiler (default c++).
build_bench() {
  bin=$1
  shift
  stale=1
  if [ -x "$bin" ]; then
    stale=0
    for s in "$@" "$root"/hpvm_rt/src/*/*.h "$root"/hpvm_rt/src/*.h \
             "$root/hpvm_rt/include/hpvm_rt/Ops.def"; do
      [ "$s" -nt "$bin" ] && stale=1
    done
  fi
  [ "$stale" = 1 ] || return 0
  echo "$(basename "$0"): building $bin" >&2
  mkdir -p "$(dirname "$bin")"
  ${CXX:-c++} -std=c++17 -O3 -march=native -fopenmp -DNDEBUG \
    -I"$root/hpvm_rt/include" -I"$root/hpvm_rt/src" \
    "$@" -o "$bin.tmp" -ldnnl -lfmt
  mv "$bin.tmp" "$bin"
}
