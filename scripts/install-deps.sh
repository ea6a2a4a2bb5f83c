#!/bin/sh
# install-deps.sh - install every Debian package torch2hpvm needs to build, test
# and run its examples. Idempotent and non-interactive; run as root.
set -eu

# oneDNN's CMake package (Debian builds it with the OpenCL GPU runtime)
# looks for OpenCL, hence ocl-icd-opencl-dev and opencl-headers.
# libopenblas0-pthread: PyTorch's dense layers in the benchmarks (without it
# Debian's PyTorch uses the reference BLAS, 4x slower).
# libomp-dev, libclang-rt-dev: clang's OpenMP and sanitizer/libFuzzer
# runtimes, for the sanitized build (scripts/sanitize.sh) and the fuzzers.
# libtorch-dev: torch2hpvm's TorchScript class (python/torch2hpvm/ext), against
# the same PyTorch 1.13 as python3-torch; python3-dev and pybind11-dev: the
# headers of its Python module torch2hpvm._direct (torch's Python API
# includes pybind11's).
# git: torch2hpvm-export merges hand edits into a regeneration with
# 'git merge-file' (no repository needed).
# nodejs (and npm): ONNX Runtime's CPU build, onnxruntime-node from the npm
# registry, the benchmarks' peer and a test oracle (scripts/bench/ort_run.js);
# installed below into .deps/ort of this repository.
PACKAGES="
  build-essential cmake ninja-build clang clang-format git
  libonnx-dev libprotobuf-dev protobuf-compiler
  libfmt-dev libcli11-dev nlohmann-json3-dev libkainjow-mustache-dev
  libdnnl-dev ocl-icd-opencl-dev opencl-headers zlib1g-dev doctest-dev
  python3 python3-numpy python3-torch python3-torchvision python3-onnx
  python3-matplotlib
  dataset-fashion-mnist
  libopenblas0-pthread
  libomp-dev libclang-rt-dev
  libtorch-dev python3-dev pybind11-dev
  nettle-dev libzip-dev pkg-config
  nodejs
"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi

missing=""
for p in $PACKAGES; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done

if [ -z "$missing" ]; then
  echo "install-deps: all packages already installed"
else
  echo "install-deps: installing:$missing"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  # shellcheck disable=SC2086
  $SUDO apt-get install -y -q --no-install-recommends $missing
fi
# Debian's nodejs comes without npm (NodeSource's includes it).
if ! command -v npm >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -q --no-install-recommends npm
fi

# ONNX Runtime 1.30 (CPU) into .deps/ort. --ignore-scripts: the package's
# install script only fetches GPU parts; the CPU library is in the package.
# Installed beside and renamed into place, so an interrupted install never
# looks complete.
ORT_VERSION=1.30.0
root=$(cd "$(dirname "$0")/.." && pwd)
ort="$root/.deps/ort"
if grep -qs "\"version\": \"$ORT_VERSION\"" \
    "$ort/node_modules/onnxruntime-node/package.json"; then
  echo "install-deps: onnxruntime-node $ORT_VERSION already installed"
else
  echo "install-deps: installing onnxruntime-node $ORT_VERSION into $ort"
  mkdir -p "$root/.deps"
  tmp=$(mktemp -d "$root/.deps/ort.tmp-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  npm install --prefix "$tmp" --ignore-scripts --no-audit --no-fund \
    --loglevel=error "onnxruntime-node@$ORT_VERSION"
  rm -rf "$ort"
  mv "$tmp" "$ort"
  trap - EXIT
fi
