#!/bin/sh
# quickstart.sh - README command one: from a fresh clone (as root, or a user
# with sudo) install the dependencies, build torch2hpvm, convert Fashion-MNIST
# to HPVM's bin format, export and build the shipped LeNet, run its test set
# exactly and with every configuration of datasets/example/tuner_confs.txt,
# print accuracy, images/s and speedup per configuration, then tune the
# LeNet on this machine (torch2hpvm-tune, small budget) and print the
# validated front and the fastest configuration within 1 point.
#
# Usage: scripts/quickstart.sh [--skip-deps] [--full-build]
#   --skip-deps   do not run scripts/install-deps.sh
#   --full-build  build every target (tests included), not only the tools
#                 and the runtime the quickstart uses
#   Environment: BUILD_DIR (default: build), QUICKSTART_THREADS (passed to
#   the program as --threads when set).
# Idempotent: a second run rebuilds nothing that is up to date and replaces
# the previous results under $BUILD_DIR/quickstart/.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${BUILD_DIR:-build}
QS="$BUILD/quickstart"
FMNIST=/usr/share/datasets/fashion-mnist
PY=/usr/bin/python3
SKIP_DEPS=0
FULL_BUILD=0

for arg in "$@"; do
  case "$arg" in
    --skip-deps) SKIP_DEPS=1 ;;
    --full-build) FULL_BUILD=1 ;;
    -h|--help)
      sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
      exit 0 ;;
    *) echo "quickstart: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

STEP=0
# step TITLE LOG COMMAND... - runs COMMAND with its output in LOG; on failure
# prints the command, the end of the log and exits 1.
step() {
  STEP=$((STEP + 1))
  title=$1; log=$2; shift 2
  printf '[%d] %s ... ' "$STEP" "$title"
  start=$(date +%s)
  if "$@" >"$log" 2>&1; then
    echo "done ($(( $(date +%s) - start )) s)"
  else
    rc=$?
    echo "FAILED (exit $rc)"
    echo "quickstart: step '$title' failed. Command:" >&2
    echo "  $*" >&2
    echo "quickstart: last lines of $log:" >&2
    tail -n 25 "$log" >&2
    exit 1
  fi
}

need_file() {
  if [ ! -e "$1" ]; then
    echo "quickstart: $1 is missing: $2" >&2
    exit 1
  fi
}

mkdir -p "$QS/logs"
LOGS="$QS/logs"

if [ "$SKIP_DEPS" -eq 0 ]; then
  step "install Debian packages (scripts/install-deps.sh)" "$LOGS/deps.log" \
    sh scripts/install-deps.sh
fi
need_file "$FMNIST/t10k-images-idx3-ubyte.gz" \
  "install the Debian package dataset-fashion-mnist (scripts/install-deps.sh)"
need_file "$PY" "install python3 (scripts/install-deps.sh)"

step "configure ($BUILD, Release)" "$LOGS/configure.log" \
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
if [ "$FULL_BUILD" -eq 1 ]; then
  step "build (all targets)" "$LOGS/build.log" cmake --build "$BUILD"
else
  step "build torch2hpvm-dataset, -export, -tune and hpvm_rt" \
    "$LOGS/build.log" cmake --build "$BUILD" --target torch2hpvm-dataset \
    torch2hpvm-export torch2hpvm-tune hpvm_rt hpvm_rt_library
fi

DATA="$QS/data"
step "convert Fashion-MNIST t10k to tune (0-4999) and test (5000-9999)" \
  "$LOGS/convert.log" \
  "$BUILD/datasets/torch2hpvm-dataset" convert \
    "$FMNIST/t10k-images-idx3-ubyte.gz" "$FMNIST/t10k-labels-idx1-ubyte.gz" \
    --split tune=5000,test=5000 --scale 1/255 --normalize 0.5,0.5 \
    -o "$DATA"

step "export and build datasets/example/lenet_fashion.onnx" \
  "$LOGS/export.log" \
  "$BUILD/frontend/torch2hpvm-export" datasets/example/lenet_fashion.onnx \
    --tune "$DATA/tune_input.bin" --test "$DATA/test_input.bin" \
    --config datasets/example/tuner_confs.txt --batch-size 1000 --force \
    -o "$QS/lenet"

BIN="$QS/lenet/build/lenet_fashion"
need_file "$BIN" \
  "torch2hpvm-export did not produce the program (see $LOGS/export.log)"
RESULTS=$(cd "$QS" && pwd)/results.json
rm -f "$RESULTS"
THREADS=""
if [ -n "${QUICKSTART_THREADS:-}" ]; then
  THREADS="--threads $QUICKSTART_THREADS"
fi
# The program writes final_accuracy and profile_info.txt into its working
# directory, as HPVM's do: run it inside $QS/run.
mkdir -p "$QS/run"
# shellcheck disable=SC2016,SC2086
step "run the test set exactly and with every configuration" \
  "$LOGS/run.log" \
  sh -c 'cd "$1" && shift && exec "$@"' run "$QS/run" \
    "$(cd "$(dirname "$BIN")" && pwd)/lenet_fashion" test --all-configs \
    --json "$RESULTS" $THREADS

need_file "$RESULTS" "the program wrote no results (see $LOGS/run.log)"

# Speed, measured apart from accuracy: ROUNDS rounds, each running the exact
# program and every configuration once as its own process (the order
# rotated each round so that no row always runs first); a row's speedup is
# the median over the rounds of exact time / its time in the same round,
# and a row whose rounds fall on both sides of 1.0 is within noise.
ROUNDS=5
# (Absolute: the runs write it from inside $QS/run.)
TIMING="$(cd "$QS" && pwd)/timing"
rm -rf "$TIMING"
mkdir -p "$TIMING"
NAMES=$("$PY" -c 'import json, sys
print(" ".join(c["name"] for c in json.load(open(sys.argv[1]))["configs"]))' \
  "$RESULTS")
ABS_BIN="$(cd "$(dirname "$BIN")" && pwd)/lenet_fashion"
ABS_CONF="$ROOT/datasets/example/tuner_confs.txt"
# time_rounds - runs the rounds; each run writes $TIMING/<round>_<row>.json.
time_rounds() {
  rows="exact $NAMES"
  n=$(echo "$rows" | wc -w)
  round=1
  while [ "$round" -le "$ROUNDS" ]; do
    k=0
    while [ "$k" -lt "$n" ]; do
      # Row (round + k) mod n: a different row starts each round.
      row=$(echo "$rows" | cut -d' ' -f"$(((round + k) % n + 1))")
      out="$TIMING/${round}_$row.json"
      if [ "$row" = exact ]; then
        # shellcheck disable=SC2086
        (cd "$QS/run" && "$ABS_BIN" test -q --json "$out" $THREADS) ||
          return 1
      else
        # shellcheck disable=SC2086
        (cd "$QS/run" && "$ABS_BIN" test -q -c "$ABS_CONF" --config "$row" \
          --json "$out" $THREADS) || return 1
      fi
      k=$((k + 1))
    done
    round=$((round + 1))
  done
}
step "time exact and every configuration, $ROUNDS interleaved rounds" \
  "$LOGS/timing.log" time_rounds

"$PY" - "$RESULTS" "$TIMING" "$ROUNDS" <<'EOF'
import json, os, statistics, sys
r = json.load(open(sys.argv[1]))
timing, rounds = sys.argv[2], int(sys.argv[3])
def total(name, k):
    with open(os.path.join(timing, f"{k}_{name}.json")) as f:
        return json.load(f)["time_ms"]["total"]
exact = [total("exact", k) for k in range(1, rounds + 1)]
images = r["images"]
print()
print(f"{r['model']}: {r['set']} set, {images} images, batch "
      f"{r['batch_size']}, {r['threads']} threads; speed: median of "
      f"{rounds} interleaved rounds (their range)")
print(f"{'configuration':<16} {'accuracy':>9} {'images/s':>10} "
      f"{'speedup':>8}  range")
print(f"{'exact fp32':<16} {r['exact']['accuracy']:>8.2f}% "
      f"{images / (statistics.median(exact) / 1000):>10.0f} {1.0:>7.2f}x")
for c in r["configs"]:
    times = [total(c["name"], k) for k in range(1, rounds + 1)]
    ratios = [e / t for e, t in zip(exact, times)]
    med, lo, hi = statistics.median(ratios), min(ratios), max(ratios)
    # Within noise: the rounds disagree on whether it is faster or slower.
    speed = (f"~{med:.2f}x  {lo:.2f}-{hi:.2f}, within noise"
             if lo <= 1.0 <= hi else f"{med:>7.2f}x  {lo:.2f}-{hi:.2f}")
    print(f"{c['name']:<16} {c['accuracy']:>8.2f}% "
          f"{images / (statistics.median(times) / 1000):>10.0f} {speed:>8}")
print(f"\nresults: {sys.argv[1]}, timing rounds: {timing}")
EOF

# Tuning: every (fused node, knob) timed and profiled on this machine, the
# front searched, validated on the tune set and measured on the test set.
# shellcheck disable=SC2086
step "tune the LeNet on this machine (torch2hpvm-tune, budget 500)" \
  "$LOGS/tune.log" \
  "$BUILD/frontend/torch2hpvm-tune" "$QS/lenet" --qos-loss 1,2,3 \
    --budget 500 --batch-size 100 $THREADS
need_file "$QS/lenet/tuning.json" \
  "the tuner wrote no record (see $LOGS/tune.log)"
"$PY" - "$QS/lenet/tuning.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
s, e = r["settings"], r["exact"]
print()
print(f"{r['model']} tuned on this machine: {s['mode']}, budget {s['budget']}, "
      f"batch {s['batch_size']}, {s['threads']} threads "
      f"({r['seconds']['total']:.0f} s)")
print(f"{'configuration':<16} {'test acc':>9} {'loss':>6} {'speedup':>8}  knobs")
print(f"{'exact fp32':<16} {e['test_qos']:>8.2f}% {0.0:>6.2f} {1.0:>7.2f}x")
best = None
for w in r["written"]:
    c = r["validated"][w["candidate"]]
    acc = c["test"]["qos"] if "test" in c else c["tune"]["qos"]
    print(f"{w['name']:<16} {acc:>8.2f}% {w['loss']:>6.2f} "
          f"{w['speedup']:>7.2f}x  {c['knobs']}")
    if w["loss"] <= 1.0 and (best is None or w["speedup"] > best["speedup"]):
        best = w
if best:
    print(f"\nfastest within 1 point of exact: {best['name']}, "
          f"{best['speedup']:.2f}x (tuner_confs.txt, first block)")
else:
    print("\nno configuration beat exact within 1 point on this machine")
print(f"front: {sys.argv[1].rsplit('/', 1)[0]}/tuning_front.png")
EOF
