# shellcheck shell=sh disable=SC2154,SC3013
# build_bench.sh - sourced by the benchmark scripts (kernel_bench.sh,
# knob_speedups.sh); not run on its own.
#
# build_bench BIN SOURCE... - compiles the benchmark BIN from SOURCE... (a
# benchmark's .cpp with the hpvm_rt sources it needs) with the flags every
# benchmark uses, when BIN is missing or a source, an hpvm_rt header or
# Ops.def is newer than it. $root is the repository root; CXX picks the
# compiler (default c++).
#
# build_bench_rt BIN SOURCE - compiles the benchmark BIN from SOURCE and
# links it against the hpvm_rt library of the CMake build
# $HPVM_BUILD_DIR (default $root/build), as generated programs use it.
# Brings that library up to date first (cmake --build --target hpvm_rt
# -j2; skipped with HPVM_RT_NO_BUILD=1), then relinks BIN when it is
# missing or SOURCE, the library, an hpvm_rt header or Ops.def is newer.
bench_stale() {
  bin=$1
  shift
  [ -x "$bin" ] || return 0
  for s in "$@" "$root"/hpvm_rt/src/*/*.h "$root"/hpvm_rt/src/*.h \
           "$root"/hpvm_rt/include/*.h "$root"/hpvm_rt/include/hpvm_rt/*; do
    [ "$s" -nt "$bin" ] && return 0
  done
  return 1
}

build_bench() {
  bin=$1
  bench_stale "$@" || return 0
  shift
  echo "$(basename "$0"): building $bin" >&2
  mkdir -p "$(dirname "$bin")"
  ${CXX:-c++} -std=c++17 -O3 -march=native -fopenmp -DNDEBUG \
    -I"$root/hpvm_rt/include" -I"$root/hpvm_rt/src" \
    "$@" -o "$bin.tmp" -ldnnl -lfmt
  mv "$bin.tmp" "$bin"
}

build_bench_rt() {
  bin=$1
  src=$2
  build=${HPVM_BUILD_DIR:-$root/build}
  lib=$build/hpvm_rt/libhpvm_rt.a
  if [ "${HPVM_RT_NO_BUILD:-0}" != 1 ]; then
    if [ ! -f "$build/CMakeCache.txt" ]; then
      echo "$(basename "$0"): no CMake build in $build; configure one" \
        "(cmake -S $root -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release)" \
        "or set HPVM_BUILD_DIR" >&2
      return 1
    fi
    cmake --build "$build" --target hpvm_rt -j2 >&2
  fi
  case $(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" \
         2>/dev/null) in
  Release | RelWithDebInfo) ;;
  *) echo "$(basename "$0"): warning: $build is not a Release build;" \
       "its hpvm_rt may be slow" >&2 ;;
  esac
  if [ ! -f "$lib" ]; then
    echo "$(basename "$0"): $lib not found" >&2
    return 1
  fi
  bench_stale "$bin" "$src" "$lib" || return 0
  echo "$(basename "$0"): building $bin against $lib" >&2
  mkdir -p "$(dirname "$bin")"
  ${CXX:-c++} -std=c++17 -O3 -march=native -fopenmp -pthread -DNDEBUG \
    -I"$root/hpvm_rt/include" -I"$root/hpvm_rt/src" \
    "$src" "$lib" -o "$bin.tmp" -ldnnl -lfmt
  mv "$bin.tmp" "$bin"
}
