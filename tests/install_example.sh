#!/usr/bin/env bash
# The installed package as an app sees it: `cmake --install` into a fresh prefix, then
# examples/embed built against that prefix alone, by CMake (find_package(braze)) and by
# pkg-config, and examples/embed_c (the C API) by gcc, each run on models/bert_tiny_legacy's
# test inputs.
# usage: install_example.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d /tmp/braze_install_XXXXXX)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
for f in lib/libbraze.so include/braze/braze.h lib/cmake/braze/brazeConfig.cmake lib/pkgconfig/braze.pc bin/braze; do
  [ -e "$work/prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
m=$src/models/bert_tiny_legacy d=$m/test_data_set_0
cmake -S "$src/examples/embed" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/cmake" > "$work/build.log"
out=$("$work/cmake/embed" "$m/model.onnx" "$d/input_0.pb" "$d/input_1.pb")
echo "$out"
grep -q "^output \[2,16,128\]:" <<< "$out" || { echo "FAIL: no [2,16,128] output from the CMake-built example"; exit 1; }
flags=$(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs braze)
g++ "$src/examples/embed/main.cpp" $flags -Wl,-rpath,"$work/prefix/lib" -o "$work/embed_pc"
out=$("$work/embed_pc" "$m/model.onnx" "$d/input_0.pb" "$d/input_1.pb")
grep -q "^output \[2,16,128\]:" <<< "$out" || { echo "FAIL: no [2,16,128] output from the pkg-config-built example"; exit 1; }
gcc -std=c99 -Wall -Werror "$src/examples/embed_c/main.c" $flags -Wl,-rpath,"$work/prefix/lib" -o "$work/embed_c"
out=$("$work/embed_c" "$m/model.onnx" input_0:2x16,input_1:2x16 "$d/input_0.pb" "$d/input_1.pb")
echo "$out"
grep -q "^output \[2,16,128\]$" <<< "$out" || { echo "FAIL: no [2,16,128] output from the C example"; exit 1; }
echo "ok: installed package; the C++ example built by CMake and by pkg-config, the C example by gcc"
