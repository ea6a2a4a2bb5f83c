#!/bin/sh
# run-tests.sh - README command two: install what is missing, build everything
# (warnings are errors), check formatting, run the quickstart (the main job
# must never silently break), every test with CTest, the ISA matrix
# (scripts/isa-matrix.sh), then the sanitizer job
# (ASan + UBSan build in build-asan/: unit tests, the hostile-input
# catalogue, the LeNet end to end, each fuzzer for 30 s).
# Usage: scripts/run-tests.sh [extra ctest arguments]
set -eu
cd "$(dirname "$0")/.."
# CTest runs one test per core, and most tests run OpenMP programs (ours,
# oneDNN's, PyTorch's) that would spin on every core between parallel
# regions: two such processes on two cores then slow each other by 2-4x.
# Waiting threads sleep instead.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"

sh scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DHPVM_WERROR=ON
cmake --build build -j "$(nproc)"
sh scripts/format.sh --check
sh scripts/quickstart.sh --skip-deps
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"
# The ISA matrix (README, "CPU support"): the kernel tests and the
# configuration sweeps under each ONEDNN_MAX_CPU_ISA cap below this CPU's
# level, and the kernel tests of a portable (x86-64-v3) build.
cmake -S . -B build-portable -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DHPVM_WERROR=ON -DHPVM_PORTABLE=ON
cmake --build build-portable -j "$(nproc)" --target kernels_tests
sh scripts/isa-matrix.sh build build-portable
sh scripts/sanitize.sh 20
