#!/usr/bin/env bash
# Run on the GPU machine from the project root (after `source .gpu-deps/setup.sh`):
# builds, then runs everything that needs the GPU, writing logs under ./gpu-out (see below).
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
#   Steps for the GEMM and attention work of #16 / #17 (not in the default steps):
#   gemm_tests: the wgmma GEMM's every-candidate GPU test on BRAZE_GEMM_CASES (a gtest filter);
#   probe: bench/gemm_probe.py with --tune over BRAZE_PROBE_ROWS (each candidate's median in
#   probe/ROW/tuned.txt), then the GEMM kernel's median with and without the fault step note
#   (BRAZE_STEP_NOTES=0/1, alternated three times) on the first of those rows;
#   attention: the attention GPU tests, then bench/run_bench.py over BRAZE_ATTN_ROWS (default A4);
#   ncu_source: Nsight Compute per-instruction samples (SASS with stall reasons, CSV) of the
#   GEMM kernel of each of BRAZE_NCU_ROWS (gemm_probe.py's products; default b32_out_proj_res,ffn_up).
# BRAZE_BUILD_TARGETS (say "braze gpu_tests") builds only those targets.
# Logs go under $BRAZE_GPU_RESULTS (default ./gpu-out). Where $OUT is set (the device tool,
# which returns at most 8 files), they are packed into $OUT/results.tgz after every step, so a
# call cut off at its time limit still returns what the finished steps wrote; the summary is
# also $OUT/summary.txt. Prints a short table last.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${BRAZE_GPU_RESULTS:-gpu-out}
mkdir -p "$out"
steps=${BRAZE_GPU_STEPS:-build,doctor,ctest,conformance,unfused,diff,memcheck,memcheck_search}
has() { [[ ",$steps," == *",$1,"* ]]; }
t0=$(date +%s)
# After each step: the step's line in summary.txt, and everything packed where $OUT asks.
done_step() {
  echo "[$(($(date +%s) - t0)) s] $1" >>"$out/summary.txt"
  if [ -n "${OUT:-}" ]; then
    tar -czf "$OUT/results.tgz.part" --exclude='*.onnx' --exclude='*.onnx.data' --exclude='*.braze' \
      --exclude='*.ncu-rep' --exclude='*.npy' --exclude='*.bin' -C "$out" . && mv "$OUT/results.tgz.part" "$OUT/results.tgz"
    cp "$out/summary.txt" "$OUT/summary.txt"
  fi
}
if has build; then
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >"$out/cmake.txt" 2>&1 &&
    cmake --build build-gpu ${BRAZE_BUILD_TARGETS:+--target $BRAZE_BUILD_TARGETS} >"$out/build.txt" 2>&1 || { tail -30 "$out/build.txt"; done_step "build failed"; exit 1; }
  done_step "built"
fi
b=build-gpu/cli/braze
node=/usr/share/libonnx-testdata/data/node
summary=()
if has doctor; then
  $b doctor 2>&1 | tee "$out/doctor.txt"
  summary+=("doctor: $(grep -o '[0-9]* GB/s' "$out/doctor.txt")")
  done_step "doctor: ${summary[-1]:-done}"
fi
if has ctest; then
  (cd build-gpu && ctest -L gpu --output-on-failure -j 4) >"$out/ctest_gpu.txt" 2>&1
  summary+=("ctest -L gpu: $(grep -E 'tests passed|tests failed' "$out/ctest_gpu.txt")")
  grep -E "Failed|FAILED|Failure" "$out/ctest_gpu.txt" | head -20
  done_step "ctest: ${summary[-1]:-done}"
fi
if has conformance; then
  $b conformance $node --backend gpu --json "$out/conf_gpu.json" >"$out/conf_gpu.txt" 2>&1
  summary+=("node tests, gpu: $(tail -1 "$out/conf_gpu.txt")")
  grep ^FAIL "$out/conf_gpu.txt" | cut -c1-400 | head -30
  $b conformance models --backend gpu --json "$out/models_gpu.json" >"$out/models_gpu.txt" 2>&1
  summary+=("models, gpu: $(tail -1 "$out/models_gpu.txt")")
  grep ^FAIL "$out/models_gpu.txt" | cut -c1-400
  done_step "conformance: ${summary[-1]:-done}"
fi
if has unfused; then
  $b conformance $node --backend gpu-unfused >"$out/conf_gpu_unfused.txt" 2>&1
  summary+=("node tests, gpu-unfused: $(tail -1 "$out/conf_gpu_unfused.txt")")
  $b conformance models --backend gpu-unfused >"$out/models_gpu_unfused.txt" 2>&1
  summary+=("models, gpu-unfused: $(tail -1 "$out/models_gpu_unfused.txt")")
  done_step "unfused: ${summary[-1]:-done}"
fi
if has diff; then
  : >"$out/diff_models.txt"
  for m in models/*/; do
    $b diff "$m/model.onnx" --a gpu --b gpu-unfused --inputs "$m/test_data_set_0" >>"$out/diff_models.txt" 2>&1
    $b diff "$m/model.onnx" --per-kernel --inputs "$m/test_data_set_0" >>"$out/diff_models.txt" 2>&1
  done
  summary+=("diff gpu vs gpu-unfused and per kernel, models: $(grep -c 'agree within tolerance' "$out/diff_models.txt") of 12 agree")
  done_step "diff: ${summary[-1]:-done}"
fi
if has memcheck; then
  compute-sanitizer --tool memcheck --print-limit 20 $b conformance $node --backend gpu \
    >"$out/memcheck.txt" 2>&1
  summary+=("memcheck: $(grep -E 'ERROR SUMMARY' "$out/memcheck.txt" | sort | uniq -c | tr '\n' ' ') $(tail -1 "$out/memcheck.txt")")
  done_step "memcheck: ${summary[-1]:-done}"
fi
if has memcheck_search; then
  timeout "${BRAZE_MEMCHECK_SECONDS:-1800}" compute-sanitizer --tool memcheck --print-limit 20 build-gpu/tests/gpu_tests \
    --gtest_filter='*GpuSearchSpace*:*GpuGemmTc*:*GpuGemmSimt*:*GpuGemmWgmma*' >"$out/memcheck_search.txt" 2>&1
  summary+=("memcheck, search-space tests: $(grep -E 'ERROR SUMMARY' "$out/memcheck_search.txt" | sort | uniq -c | tr '\n' ' ') $(grep -E 'PASSED|FAILED' "$out/memcheck_search.txt" | head -2 | tr '\n' ' ')")
  done_step "memcheck_search: ${summary[-1]:-done}"
fi
if has sanitize_models; then
  BRAZE=$b scripts/sanitize_models.sh "$out/sanitize_models" "${BRAZE_SANITIZE_ROWS:-}" >"$out/sanitize_models.txt" 2>&1
  summary+=("compute-sanitizer over the models rows (exit $?): $(grep -c '| clean |' "$out/sanitize_models/sanitize_models.md" 2>/dev/null) clean runs of $(grep -cE '^\| [a-z0-9]+-' "$out/sanitize_models/sanitize_models.md" 2>/dev/null)")
  done_step "sanitize_models: ${summary[-1]:-done}"
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
  done_step "models: ${summary[-1]:-done}"
fi
if has gemm_tests; then
  timeout "${BRAZE_GEMM_TEST_SECONDS:-300}" build-gpu/tests/gpu_tests \
    --gtest_filter="${BRAZE_GEMM_CASES:-Cases/GpuGemmWgmma.*}" >"$out/gemm_tests.txt" 2>&1
  summary+=("wgmma GEMM tests (exit $?): $(grep -E '^\[  (PASSED|FAILED)' "$out/gemm_tests.txt" | tr '\n' ' ')")
  grep -E "Failure|FAILED" "$out/gemm_tests.txt" | head -10
  done_step "${summary[-1]}"
fi
if has probe; then
  rows=${BRAZE_PROBE_ROWS:-ffn_down_res,b32_out_proj_res,ffn_up}
  PYTHONUNBUFFERED=1 timeout "${BRAZE_PROBE_SECONDS:-420}" python3 bench/gemm_probe.py --braze "$b" \
    --out "$out/probe" --only "$rows" >"$out/probe.txt" 2>&1
  summary+=("gemm_probe (exit $?): $(grep -c ratio "$out/probe.txt") rows; $out/probe.txt")
  cat "$out/probe.txt"
  first=$out/probe/${rows%%,*}
  if [ -f "$first/model.onnx" ]; then
    for n in 1 0 1 0 1 0; do
      BRAZE_STEP_NOTES=$n $b bench "$first/model.onnx" --json "$out/notes.json" >/dev/null 2>&1
      echo "BRAZE_STEP_NOTES=$n $(python3 -c "import json; print([(k['name'], k['median_us']) for k in json.load(open('$out/notes.json'))['kernels'] if k.get('gemm')])")" \
        >>"$out/notes.txt"
    done
    summary+=("step note A/B on ${rows%%,*}: $out/notes.txt")
    cat "$out/notes.txt"
  fi
  done_step "${summary[-1]}"
fi
if has attention; then
  # In shards side by side: each case compiles every candidate (NVRTC, one CPU core a process).
  shards=${BRAZE_ATTN_SHARDS:-4}
  for i in $(seq 0 $((shards - 1))); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout "${BRAZE_ATTN_TEST_SECONDS:-300}" build-gpu/tests/gpu_tests \
      --gtest_filter="${BRAZE_ATTN_TESTS:-Cases/GpuAttention.*:GpuAttentionAtModelSize.*}" \
      >"$out/attention_tests_$i.txt" 2>&1 &
  done
  wait
  summary+=("attention tests: $(cat "$out"/attention_tests_*.txt | grep -cE '^\[       OK') passed, $(grep -hE '^\[  FAILED  \] [A-Z]' "$out"/attention_tests_*.txt | sort -u | wc -l) failed, unfinished in shards: $(grep -LE '^\[==========\] .* ran\.' "$out"/attention_tests_*.txt | tr '\n' ' ')")
  PYTHONUNBUFFERED=1 timeout "${BRAZE_ATTN_SECONDS:-300}" python3 bench/run_bench.py --braze "$b" \
    --out "$out/attention" --only "${BRAZE_ATTN_ROWS:-A4}" --no-max-autotune >"$out/attention.txt" 2>&1
  summary+=("run_bench ${BRAZE_ATTN_ROWS:-A4} (exit $?): $out/attention.txt")
  tail -12 "$out/attention.txt"
  done_step "${summary[-2]}; ${summary[-1]}"
fi
if has ncu_source; then
  ncu_rows=${BRAZE_NCU_ROWS:-b32_out_proj_res,ffn_up}
  for row in ${ncu_rows//,/ }; do
    python3 -c "import sys; sys.path.insert(0, 'bench'); import gemm_probe as g; s = g.SHAPES['$row']
g.build_onnx('$out/ncu_$row.onnx', *s[:5], len(s) > 5)"
    timeout 180 ncu -f --clock-control none -k regex:braze_gemm -c 1 --set none --section SourceCounters \
      --section WarpStateStats --section SpeedOfLight --import-source yes -o "$out/ncu_$row" \
      "$b" run "$out/ncu_$row.onnx" >"$out/ncu_$row.txt" 2>&1
    ncu --import "$out/ncu_$row.ncu-rep" --page source --csv --print-source sass >"$out/ncu_${row}_sass.csv" 2>&1
    ncu --import "$out/ncu_$row.ncu-rep" --page details >>"$out/ncu_$row.txt" 2>&1
    summary+=("ncu source samples of $row: $out/ncu_${row}_sass.csv")
    done_step "${summary[-1]}"
  done
fi
printf '%s\n' "${summary[@]}"
