#!/bin/sh
# run-tests.sh - README command two: install what is missing, build everything
# (warnings are errors), check formatting, run the quickstart (the main job
# must never silently break) and every test with CTest.
# Usage: scripts/run-tests.sh [extra ctest arguments]
set -eu
cd "$(dirname "$0")/.."

sh scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DHPVM_WERROR=ON
cmake --build build -j "$(nproc)"
sh scripts/format.sh --check
sh scripts/quickstart.sh --skip-deps
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"
