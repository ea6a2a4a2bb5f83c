#!/bin/sh
# format.sh - clang-format the project's C++ sources (frontend, hpvm_rt,
# datasets, tests, test_frontend, python). --check reports files that differ
# and fails; without it files are rewritten in place.
set -eu
cd "$(dirname "$0")/.."

files=$(git ls-files 'frontend/*.cpp' 'frontend/*.h' 'hpvm_rt/*.cpp' \
  'hpvm_rt/*.h' 'datasets/*.cpp' 'datasets/*.h' 'tests/*.cpp' 'tests/*.h' \
  'test_frontend/*.cpp' 'test_frontend/*.h' 'python/*.cpp' 'python/*.h' \
  | grep -v '/golden/' || true)
[ -n "$files" ] || exit 0

if [ "${1:-}" = "--check" ]; then
  bad=""
  for f in $files; do
    if ! clang-format --style=file "$f" | cmp -s - "$f"; then
      bad="$bad $f"
    fi
  done
  if [ -n "$bad" ]; then
    echo "format.sh: not clang-formatted (run scripts/format.sh):$bad" >&2
    exit 1
  fi
else
  # shellcheck disable=SC2086
  clang-format --style=file -i $files
fi
