#!/bin/sh
# check_install.sh BUILD_DIR WORK_DIR SOURCE_DIR - the installed toolchain
# works on its own: `cmake --install` of the build tree into a fresh
# prefix, which is then moved elsewhere (an installed tree must not depend
# on where it was installed, nor on the build or source tree); the
# installed torch2hpvm-dataset converts 200 Fashion-MNIST test images, the
# installed torch2hpvm-export exports the shipped LeNet with the installed
# templates and builds it against the installed hpvm_rt package, and the
# program's accuracy equals that of the build tree's tools on the same data.
set -eu
build=$1
work=$2
src=$3
fmnist=/usr/share/datasets/fashion-mnist

fail() {
  echo "check_install: $*" >&2
  exit 1
}

rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/installed" >"$work/install.log" 2>&1 ||
  fail "cmake --install failed; see $work/install.log"
mv "$work/installed" "$work/moved"
prefix="$work/moved"

"$prefix/bin/torch2hpvm-dataset" convert \
  "$fmnist/t10k-images-idx3-ubyte.gz" "$fmnist/t10k-labels-idx1-ubyte.gz" \
  --split tune=100,test=100 --limit 200 --scale 1/255 --normalize 0.5,0.5 \
  -o "$work/data" >"$work/convert.log" 2>&1 ||
  fail "installed torch2hpvm-dataset failed; see $work/convert.log"

# export TOOL OUT - exports and builds the shipped LeNet with TOOL.
export_lenet() {
  "$1" "$src/datasets/example/lenet_fashion.onnx" \
    --tune "$work/data/tune_input.bin" --test "$work/data/test_input.bin" \
    -o "$2" -v >"$2.log" 2>&1 || fail "$1 failed; see $2.log"
}
export_lenet "$prefix/bin/torch2hpvm-export" "$work/installed_lenet"
export_lenet "$build/frontend/torch2hpvm-export" "$work/build_lenet"

# The installed exporter used the installed package and templates only.
grep -q -- "-Dhpvm_rt_DIR=$prefix/lib" "$work/installed_lenet.log" ||
  fail "the installed exporter did not build against $prefix's hpvm_rt:
$(grep -- -Dhpvm_rt_DIR "$work/installed_lenet.log")"
if grep -q -e "$build/hpvm_rt" "$work/installed_lenet.log"; then
  fail "the installed exporter used the build tree's hpvm_rt:
$(grep -e "$build/hpvm_rt" "$work/installed_lenet.log")"
fi
# Templates: the installed ones are edited copies; hide the source tree's
# from the installed exporter by exporting once more with the installed
# templates changed (a marker line must reach the generated program).
sed -i '1i // installed-template-marker' \
  "$prefix/share/torch2hpvm/templates/hpvm_c.cpp.in"
"$prefix/bin/torch2hpvm-export" "$src/datasets/example/lenet_fashion.onnx" \
  --tune "$work/data/tune_input.bin" --test "$work/data/test_input.bin" \
  --no-build -o "$work/marker_lenet" >"$work/marker_lenet.log" 2>&1 ||
  fail "installed exporter failed; see $work/marker_lenet.log"
grep -q installed-template-marker "$work/marker_lenet/hpvm_c.cpp" ||
  fail "the installed exporter did not use the installed templates"

run() {
  (cd "$1" && ./build/lenet_fashion test -q) | grep '^Accuracy'
}
got=$(run "$work/installed_lenet")
want=$(run "$work/build_lenet")
[ -n "$got" ] || fail "the installed build printed no accuracy"
[ "$got" = "$want" ] ||
  fail "installed build: '$got', build tree: '$want'"
echo "check_install: installed toolchain OK ($got)"
