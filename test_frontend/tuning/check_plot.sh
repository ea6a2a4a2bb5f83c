#!/bin/sh
# check_plot.sh [WORK_DIR] - scripts/plot_tuning.py draws the tuner's Pareto
# plot from the hand-made record plot_fixture.json (next to this script):
# exit status 0, a PNG and an SVG (well-formed XML naming the written
# configurations conf1 and conf2, with the sensitivity panel), no temporary files left behind, and the
# same bytes when run twice; a missing or malformed record fails with one
# line "plot_tuning.py: FILE: ..." and no traceback.
#
# Exits 0 on success, 1 on failure (python3-matplotlib missing included:
# scripts/install-deps.sh installs it). WORK_DIR defaults to a fresh
# temporary directory, removed on success.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
script="$here/../../scripts/plot_tuning.py"
fixture="$here/plot_fixture.json"
python=/usr/bin/python3

if [ $# -ge 1 ]; then
  work=$1
  rm -rf "$work"
  mkdir -p "$work"
  cleanup=false
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/check_plot.XXXXXX")
  cleanup=true
fi

fail() {
  echo "check_plot: $*" >&2
  exit 1
}

# expect_error RECORD WHAT - the script fails on RECORD with one line naming
# it.
expect_error() {
  if "$python" "$script" "$1" "$work/err.png" "$work/err.svg" \
    >"$work/err.out" 2>"$work/err.log"; then
    fail "$2: exit status 0"
  fi
  [ "$(wc -l <"$work/err.log")" -eq 1 ] ||
    fail "$2: expected a one-line error, got: $(cat "$work/err.log")"
  case $(cat "$work/err.log") in
  "plot_tuning.py: $1: "?*) ;;
  *)
    fail "$2: error does not start with 'plot_tuning.py: $1: ':" \
      "$(cat "$work/err.log")"
    ;;
  esac
  ! grep -q Traceback "$work/err.log" || fail "$2: traceback"
  if [ -e "$work/err.png" ] || [ -e "$work/err.svg" ]; then
    fail "$2: wrote an output file"
  fi
}

expect_error "$work/missing.json" "missing record"
printf '{"settings": {' >"$work/broken.json"
expect_error "$work/broken.json" "invalid JSON"
printf '{"settings": {}, "search": {"points": []}}\n' >"$work/partial.json"
expect_error "$work/partial.json" "record without 'validated'"

if ! "$python" -c "import matplotlib" 2>/dev/null; then
  fail "python3-matplotlib is not installed (scripts/install-deps.sh)"
fi

mkdir -p "$work/a" "$work/b"
for d in a b; do
  "$python" "$script" "$fixture" "$work/$d/front.png" "$work/$d/front.svg" \
    >"$work/$d/plot.log" 2>&1 ||
    fail "plot_tuning.py failed on the fixture: $(cat "$work/$d/plot.log")"
done
out="$work/a"
[ -s "$out/front.png" ] || fail "no PNG written"
[ -s "$out/front.svg" ] || fail "no SVG written"
for f in "$out"/* "$out"/.[!.]*; do
  case ${f##*/} in
  front.png | front.svg | plot.log | "*" | ".[!.]*") ;;
  *) fail "file left behind: $f" ;;
  esac
done

if ! "$python" - "$out/front.png" "$out/front.svg" <<'EOF'; then
import sys
import xml.etree.ElementTree as ET

png, svg = sys.argv[1], sys.argv[2]
with open(png, "rb") as f:
    if f.read(8) != b"\x89PNG\r\n\x1a\n":
        sys.exit("check_plot: %s does not start with the PNG signature" % png)
try:
    root = ET.parse(svg).getroot()
except ET.ParseError as e:
    sys.exit("check_plot: %s is not well-formed XML: %s" % (svg, e))
if root.tag != "{http://www.w3.org/2000/svg}svg":
    sys.exit("check_plot: %s: root element is %s, not svg" % (svg, root.tag))
ids = {e.get("id") for e in root.iter()}
with open(svg, encoding="utf-8") as f:
    text = f.read()
for name in ("conf1", "conf2"):
    # Labels are drawn as glyph paths: the name is in a comment, and the
    # label's group carries id="config-NAME".
    if "config-" + name not in ids or name not in text:
        sys.exit("check_plot: %s does not name configuration %s" % (svg, name))
# The record's sensitivity report is drawn as its own panel.
if "sensitivity" not in ids:
    sys.exit("check_plot: %s has no sensitivity panel" % svg)
EOF
  fail "output check failed"
fi

cmp -s "$work/a/front.png" "$work/b/front.png" ||
  fail "PNG differs between two runs on the same record"
cmp -s "$work/a/front.svg" "$work/b/front.svg" ||
  fail "SVG differs between two runs on the same record"

if $cleanup; then
  rm -rf "$work"
fi
echo "check_plot: ok"
