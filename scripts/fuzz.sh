#!/usr/bin/env bash
# Runs the libFuzzer targets (fuzz/) for SECONDS each (default 120; `scripts/fuzz.sh 3600` for
# an hour): import_fuzz over the compile path without a GPU, seeded with the ONNX node-test
# models braze imports (fuzz/import_seeds.tar.xz), and engine_fuzz over the engine-file reader,
# seeded with engine files compiled here. Builds them with clang, ASan and UBSan into
# build-san (scripts/sanitizers.sh shares it). A crash, a sanitizer report, an input taking over
# 10 s or 2 GB fails the run; its reproducer is left in build-san/fuzz-findings/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-120}
build=build-san
if [ ! -f "$build/build.ninja" ]; then
  CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBRAZE_FUZZ=ON -DBRAZE_PYTHON=OFF >/dev/null
fi
cmake --build "$build" --target import_fuzz engine_fuzz braze
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

work=$build/fuzz-work
rm -rf "$work" && mkdir -p "$work/import" "$work/engine" "$build/fuzz-findings"
tar -C "$work/import" -xJf fuzz/import_seeds.tar.xz
# Engine seeds: small node-test models compiled here (kernels by NVRTC; no GPU needed).
for t in add relu gemm_default_no_bias matmul_2d softmax_axis_1 reduce_mean_default_axes_keepdims_example \
         layer_normalization_2d_axis0 transpose_default; do
  "$build/cli/braze" compile "$work/import/test_$t.onnx" -o "$work/engine/$t.braze" >/dev/null
done

status=0
for target in import_fuzz engine_fuzz; do
  corpus=$work/${target%_fuzz}
  echo "fuzz: $target for $seconds s on $(ls "$corpus" | wc -l) seeds"
  if ! "$build/fuzz/$target" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix="$build/fuzz-findings/$target-" -print_final_stats=1 >"$build/$target.log" 2>&1; then
    echo "fuzz: $target FAILED: $(grep -m1 -E 'ERROR|SUMMARY|==[0-9]+==' "$build/$target.log" || true)"
    tail -40 "$build/$target.log"
    status=1
  else
    grep -E "stat::number_of_executed_units|cov:" "$build/$target.log" | tail -2
  fi
done
exit $status
