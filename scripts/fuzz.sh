#!/bin/sh
# fuzz.sh - runs each libFuzzer target (tests/fuzz) for a given time, seeded
# from the test fixtures, and fails on any crash, hang, leak or sanitizer
# report. Findings are left in WORK/<target>/ (crash-*, leak-*, timeout-*);
# turn each into a case of tests/hostile/catalogue.py where the tools can
# reach it, and keep the input in tests/fuzz/regressions/TARGET (a seed of
# later runs; fuzz_onnx's are replayed by tests/frontend/FuzzRegressionTest).
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET (default 60)] [BUILD_DIR
#        (default build-asan, configured by scripts/sanitize.sh)] [WORK]
#        [RUNS_PER_TARGET (default: no limit; each target stops at the
#        first of SECONDS and RUNS)]
set -eu
cd "$(dirname "$0")/.."
SECONDS_PER="${1:-60}"
BUILD="${2:-build-asan}"
WORK="${3:-$BUILD/fuzz}"
RUNS="${4:--1}"

for t in ${FUZZ_TARGETS:-fuzz_onnx fuzz_config fuzz_datasets fuzz_command_line fuzz_config_calibration}; do
  if [ ! -x "$BUILD/tests/fuzz/$t" ]; then
    echo "fuzz.sh: $BUILD/tests/fuzz/$t is not built (run scripts/sanitize.sh," \
      "or configure with clang and -DHPVM_FUZZ=ON)" >&2
    exit 1
  fi
done

mkdir -p "$WORK"
BUILD=$(cd "$BUILD" && pwd)
/usr/bin/python3 tests/fuzz/seeds.py "$WORK"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
status=0
for t in ${FUZZ_TARGETS:-fuzz_onnx fuzz_config fuzz_datasets fuzz_command_line fuzz_config_calibration}; do
  corpus="$WORK/$t/corpus"
  mkdir -p "$corpus"
  # -rss_limit_mb and -timeout make hangs and memory blow-ups findings too;
  # -max_len keeps inputs near the fixtures' size.
  if ! (cd "$WORK/$t" && "$BUILD/tests/fuzz/$t" \
      -max_total_time="$SECONDS_PER" -runs="$RUNS" -timeout=10 \
      -rss_limit_mb=2048 \
      -max_len=65536 -print_final_stats=1 corpus "seeds" \
      > log.txt 2>&1); then
    echo "fuzz.sh: $t found a problem; see $WORK/$t/log.txt:" >&2
    grep -E "ERROR|SUMMARY|Test unit written" "$WORK/$t/log.txt" | head -5 >&2
    status=1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$WORK/$t/log.txt")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$WORK/$t/log.txt")
  echo "fuzz.sh: $t: ${runs:-?} executions (${rate:-?}/s)"
done
exit $status
