#!/bin/sh
# update_golden.sh - rewrite test_frontend/golden/* from the current
# templates and code generator, then show what changed.
# Usage: scripts/update_golden.sh [BUILD_DIR]   (default: build)
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}

if [ ! -f "$build/build.ninja" ] && [ ! -f "$build/Makefile" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$build" --target frontend_tests
# Golden tests write their files instead of comparing when asked to.
HPVM_UPDATE_GOLDEN=1 "$build/tests/frontend_tests" --test-case='Codegen:*,Cli:*'
# Then they must pass as they are.
"$build/tests/frontend_tests" --test-case='Codegen:*,Cli:*'
git --no-pager diff --stat -- test_frontend/golden
git --no-pager status --short -- test_frontend/golden
