#!/bin/sh
# fuzz-campaign.sh - the long fuzzing campaign (outside CI, which runs each
# target briefly in scripts/sanitize.sh): builds the libFuzzer targets with
# UndefinedBehaviorSanitizer only in build-fuzz/ (1.1-2.4x the speed of
# the AddressSanitizer build on the same corpora), runs each for RUNS executions or SECONDS, whichever
# ends first, then replays every corpus and finding under AddressSanitizer
# (build-asan, from scripts/sanitize.sh) when that build exists. Writes
# WORK/campaign.json: executions, rate, corpus size and findings per target.
# Usage: scripts/fuzz-campaign.sh [RUNS (default 10000000)]
#        [SECONDS_PER_TARGET (default 14400)] [WORK (default build-fuzz/
#        campaign)]
# FUZZ_TARGETS limits the targets (default: all five).
set -eu
cd "$(dirname "$0")/.."
RUNS="${1:-10000000}"
SECONDS_PER="${2:-14400}"
WORK="${3:-build-fuzz/campaign}"
TARGETS="${FUZZ_TARGETS:-fuzz_config fuzz_config_calibration fuzz_command_line fuzz_datasets fuzz_onnx}"
export FUZZ_TARGETS="$TARGETS"

CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DHPVM_FUZZ=ON > build-fuzz.configure.log
# shellcheck disable=SC2086 # the target list is words
cmake --build build-fuzz -j "$(nproc)" --target $TARGETS

status=0
sh scripts/fuzz.sh "$SECONDS_PER" build-fuzz "$WORK" "$RUNS" || status=1

# Replay under AddressSanitizer: each corpus input and finding once.
if [ -d build-asan/tests/fuzz ]; then
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}"
  export LSAN_OPTIONS="suppressions=$(pwd)/tests/fuzz/lsan.supp:print_suppressions=0"
  for t in $TARGETS; do
    [ -x "build-asan/tests/fuzz/$t" ] || continue
    if ! "build-asan/tests/fuzz/$t" -runs=0 -rss_limit_mb=2048 -timeout=10 \
        "$WORK/$t/corpus" > "$WORK/$t/asan-replay.txt" 2>&1; then
      echo "fuzz-campaign.sh: $t: the corpus fails under AddressSanitizer;" \
        "see $WORK/$t/asan-replay.txt" >&2
      status=1
    else
      echo "fuzz-campaign.sh: $t: corpus replayed under AddressSanitizer"
    fi
  done
else
  echo "fuzz-campaign.sh: no build-asan (scripts/sanitize.sh): corpora not" \
    "replayed under AddressSanitizer" >&2
fi

/usr/bin/python3 - "$WORK" $TARGETS <<'PY'
import glob, json, os, re, sys
work, targets = sys.argv[1], sys.argv[2:]
out = {}
for t in targets:
    log = open(os.path.join(work, t, "log.txt"), errors="replace").read()
    stat = dict(re.findall(r"^stat::(\w+):\s*(\d+)", log, re.M))
    replay = os.path.join(work, t, "asan-replay.txt")
    out[t] = {
        "executions": int(stat.get("number_of_executed_units", 0)),
        "executions_per_second": int(stat.get("average_exec_per_sec", 0)),
        "peak_rss_mb": int(stat.get("peak_rss_mb", 0)),
        "corpus_files": len(os.listdir(os.path.join(work, t, "corpus"))),
        "findings": sorted(os.path.basename(p) for p in
                           glob.glob(os.path.join(work, t, "*-*"))
                           if re.match(r"(crash|leak|timeout|oom)-",
                                       os.path.basename(p))),
        "asan_replay": (None if not os.path.exists(replay) else
                        "passed" if "Done" in open(replay, errors="replace").read()
                        else "failed"),
    }
json.dump(out, open(os.path.join(work, "campaign.json"), "w"), indent=2)
for t, r in out.items():
    print(f"{t}: {r['executions']} executions ({r['executions_per_second']}/s), "
          f"{r['corpus_files']} corpus files, {len(r['findings'])} findings, "
          f"ASan replay {r['asan_replay']}")
PY
exit $status
