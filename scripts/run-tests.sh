#!/bin/sh
# run-tests.sh - README command two: install what is missing, build everything
# (warnings are errors), check formatting, run the quickstart (the main job
# must never silently break), every test with CTest, then the sanitizer job
# (ASan + UBSan build in build-asan/: unit tests, the hostile-input
# catalogue, the LeNet end to end, each fuzzer for 30 s).
# Usage: scripts/run-tests.sh [extra ctest arguments]
set -eu
cd "$(dirname "$0")/.."

sh scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DHPVM_WERROR=ON
cmake --build build -j "$(nproc)"
sh scripts/format.sh --check
sh scripts/quickstart.sh --skip-deps
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"
sh scripts/sanitize.sh 30
