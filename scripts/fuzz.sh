#!/usr/bin/env bash
# Runs the libFuzzer targets (fuzz/) for SECONDS each (default 120; `scripts/fuzz.sh 3600` for
# an hour): import_fuzz over the compile path without a GPU, seeded with the ONNX node-test
# models braze imports (fuzz/import_seeds.tar.xz), and engine_fuzz over the engine-file reader,
# seeded with engine files compiled here. Builds them with clang, ASan and UBSan into
# build-san (scripts/sanitizers.sh shares it). A crash, a sanitizer report, an input taking over
# 10 s or 2 GB fails the run; its reproducer is left in build-san/fuzz-findings/.
# With FUZZ_RUNS=N (and FUZZ_SEED, default 1) each target instead runs N inputs from a fixed seed,
# as CI (.ci/run) does: close to the same inputs on every machine (braze's own thread timing makes
# the coverage differ slightly), so CI's search does not wander off on each run; without it the
# seed is random and the search explores. Every input in fuzz/regressions/ (the findings fixed so
# far) is run first in every mode.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-120}
if [ -n "${FUZZ_RUNS:-}" ]; then
  budget=(-runs="$FUZZ_RUNS" -seed="${FUZZ_SEED:-1}")
  what="$FUZZ_RUNS inputs from seed ${FUZZ_SEED:-1}"
else
  budget=(-max_total_time="$seconds")
  what="$seconds s"
fi
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
for t in import engine; do
  [ ! -d "fuzz/regressions/$t" ] || find "fuzz/regressions/$t" -type f -exec cp {} "$work/$t/" \;
done
# Engine seeds: small node-test models compiled here (kernels by NVRTC; no GPU needed).
for t in add relu gemm_default_no_bias matmul_2d softmax_axis_1 reduce_mean_default_axes_keepdims_example \
         layer_normalization_2d_axis0 transpose_default; do
  "$build/cli/braze" compile "$work/import/test_$t.onnx" -o "$work/engine/$t.braze" >/dev/null
done

status=0
for target in import_fuzz engine_fuzz; do
  corpus=$work/${target%_fuzz}
  echo "fuzz: $target for $what on $(ls "$corpus" | wc -l) seed files"
  if ! "$build/fuzz/$target" "$corpus" "${budget[@]}" -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix="$build/fuzz-findings/$target-" -print_final_stats=1 >"$build/$target.log" 2>&1; then
    echo "fuzz: $target FAILED: $(grep -m1 -E 'ERROR|SUMMARY|==[0-9]+==' "$build/$target.log" || true)"
    tail -40 "$build/$target.log"
    status=1
  else
    grep -E "stat::number_of_executed_units|cov:" "$build/$target.log" | tail -2
  fi
done
exit $status
