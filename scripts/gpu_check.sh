#!/usr/bin/env bash
# Run on the GPU machine from the project root (after `source .gpu-deps/setup.sh`):
# builds, then runs everything that needs the GPU, writing logs under $OUT (or ./gpu-out).
#   doctor, ctest -L gpu, conformance on the GPU backend fused and unfused (ONNX node tests
#   and models/), diff of fused vs unfused and per kernel on the models, and
#   compute-sanitizer memcheck over the GPU conformance run and over the GPU search-space
#   tests (every reduction, tensor-core and SIMT GEMM candidate; BRAZE_MEMCHECK_SECONDS caps it);
#   step sanitize_models (not in the default steps: it exports the real models, minutes):
#   memcheck, racecheck and initcheck over every bench/models.py row at its smallest shape
#   (scripts/sanitize_models.sh; BRAZE_SANITIZE_ROWS picks rows);
#   step models (not in the default steps): bench/models.py over BRAZE_MODEL_ROWS (default every
#   row) with --no-tune --no-torch, and where BRAZE_BASE_TREE names another source tree (say
#   `git archive COMMIT | tar -x -C .base`, carried to the GPU machine) that tree's braze built
#   into build-base and timed on the same exports, alternated (--base): a before / after table.
# Prints a short table last.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
steps=${BRAZE_GPU_STEPS:-build,doctor,ctest,conformance,unfused,diff,memcheck,memcheck_search}
has() { [[ ",$steps," == *",$1,"* ]]; }
if has build; then
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >"$out/cmake.txt" 2>&1 &&
    cmake --build build-gpu >"$out/build.txt" 2>&1 || { tail -30 "$out/build.txt"; exit 1; }
fi
b=build-gpu/cli/braze
node=/usr/share/libonnx-testdata/data/node
summary=()
if has doctor; then
  $b doctor 2>&1 | tee "$out/doctor.txt"
  summary+=("doctor: $(grep -o '[0-9]* GB/s' "$out/doctor.txt")")
fi
if has ctest; then
  (cd build-gpu && ctest -L gpu --output-on-failure -j 4) >"$out/ctest_gpu.txt" 2>&1
  summary+=("ctest -L gpu: $(grep -E 'tests passed|tests failed' "$out/ctest_gpu.txt")")
  grep -E "Failed|FAILED|Failure" "$out/ctest_gpu.txt" | head -20
fi
if has conformance; then
  $b conformance $node --backend gpu --json "$out/conf_gpu.json" >"$out/conf_gpu.txt" 2>&1
  summary+=("node tests, gpu: $(tail -1 "$out/conf_gpu.txt")")
  grep ^FAIL "$out/conf_gpu.txt" | cut -c1-400 | head -30
  $b conformance models --backend gpu --json "$out/models_gpu.json" >"$out/models_gpu.txt" 2>&1
  summary+=("models, gpu: $(tail -1 "$out/models_gpu.txt")")
  grep ^FAIL "$out/models_gpu.txt" | cut -c1-400
fi
if has unfused; then
  $b conformance $node --backend gpu-unfused >"$out/conf_gpu_unfused.txt" 2>&1
  summary+=("node tests, gpu-unfused: $(tail -1 "$out/conf_gpu_unfused.txt")")
  $b conformance models --backend gpu-unfused >"$out/models_gpu_unfused.txt" 2>&1
  summary+=("models, gpu-unfused: $(tail -1 "$out/models_gpu_unfused.txt")")
fi
if has diff; then
  : >"$out/diff_models.txt"
  for m in models/*/; do
    $b diff "$m/model.onnx" --a gpu --b gpu-unfused --inputs "$m/test_data_set_0" >>"$out/diff_models.txt" 2>&1
    $b diff "$m/model.onnx" --per-kernel --inputs "$m/test_data_set_0" >>"$out/diff_models.txt" 2>&1
  done
  summary+=("diff gpu vs gpu-unfused and per kernel, models: $(grep -c 'agree within tolerance' "$out/diff_models.txt") of 12 agree")
fi
if has memcheck; then
  compute-sanitizer --tool memcheck --print-limit 20 $b conformance $node --backend gpu \
    >"$out/memcheck.txt" 2>&1
  summary+=("memcheck: $(grep -E 'ERROR SUMMARY' "$out/memcheck.txt" | sort | uniq -c | tr '\n' ' ') $(tail -1 "$out/memcheck.txt")")
fi
if has memcheck_search; then
  timeout "${BRAZE_MEMCHECK_SECONDS:-1800}" compute-sanitizer --tool memcheck --print-limit 20 build-gpu/tests/gpu_tests \
    --gtest_filter='*GpuSearchSpace*:*GpuGemmTc*:*GpuGemmSimt*:*GpuGemmWgmma*' >"$out/memcheck_search.txt" 2>&1
  summary+=("memcheck, search-space tests: $(grep -E 'ERROR SUMMARY' "$out/memcheck_search.txt" | sort | uniq -c | tr '\n' ' ') $(grep -E 'PASSED|FAILED' "$out/memcheck_search.txt" | head -2 | tr '\n' ' ')")
fi
if has sanitize_models; then
  BRAZE=$b scripts/sanitize_models.sh "$out/sanitize_models" "${BRAZE_SANITIZE_ROWS:-}" >"$out/sanitize_models.txt" 2>&1
  summary+=("compute-sanitizer over the models rows (exit $?): $(grep -c '| clean |' "$out/sanitize_models/sanitize_models.md" 2>/dev/null) clean runs of $(grep -cE '^\| [a-z0-9]+-' "$out/sanitize_models/sanitize_models.md" 2>/dev/null)")
fi
if has models; then
  base=()
  if [ -n "${BRAZE_BASE_TREE:-}" ]; then
    cmake -S "$BRAZE_BASE_TREE" -B build-base -G Ninja -DCMAKE_BUILD_TYPE=Release -DBRAZE_PYTHON=OFF \
      >"$out/cmake_base.txt" 2>&1 && cmake --build build-base --target braze >"$out/build_base.txt" 2>&1 ||
      { tail -30 "$out/build_base.txt"; exit 1; }
    base=(--base build-base/cli/braze)
  fi
  python3 bench/models.py --braze "$b" "${base[@]}" --out build-models --no-tune --no-torch \
    --only "${BRAZE_MODEL_ROWS:-*}" >"$out/models.txt" 2>&1
  rc=$?
  cp build-models/models.md build-models/models.json "$out/" 2>/dev/null
  summary+=("bench/models.py (exit $rc): $(grep -c '^== ' "$out/models.txt") rows; $out/models.md")
  grep -E "^==|paired|error" "$out/models.txt" | cut -c1-200
fi
printf '%s\n' "${summary[@]}"
