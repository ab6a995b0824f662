#!/usr/bin/env bash
# compute-sanitizer's memcheck, racecheck and initcheck over every bench/models.py row at its
# model's smallest shape (bench/models.py --small: batch 1, 32 tokens or 64x64 images), on the
# GPU machine (#21). Each row is exported, compiled at its precision outside the sanitizer, then
# `braze run` on the GPU under each tool; the report lists every (row, tool) with its error count.
#
#   scripts/sanitize_models.sh OUTDIR [ROWS]     ROWS: bench/models.py --only patterns (default: one
#                                                row per model and precision)
#   BRAZE=build-gpu/cli/braze  TOOL_TIMEOUT=900 (seconds a sanitizer run may take)
#   TOOLS="memcheck racecheck initcheck" (the tools run, in order)
#
# Writes OUTDIR/sanitize_models.md (the table) and OUTDIR/<row>/<tool>.log; exits 1 when any run
# reports an error, fails, or times out.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/sanitize_models.sh OUTDIR [ROWS]}
# One row per (model, precision): at the smallest shape the other rows are the same model.
rows=${2:-bert-b1-s128-fp32,bert-b8-s128-fp16,gpt2-b1-s1024-fp16,llama4-b1-s512-fp16,resnet50-b1-fp16,mobilenetv2-b32-fp16}
braze=$(realpath "${BRAZE:-build-gpu/cli/braze}")
limit=${TOOL_TIMEOUT:-900}
command -v compute-sanitizer >/dev/null || { echo "sanitize_models: compute-sanitizer not found" >&2; exit 2; }
mkdir -p "$out"
python3 bench/models.py --braze "$braze" --out "$out" --export-only --small --only "$rows" \
  >"$out/export.log" 2>&1 || { echo "sanitize_models: export failed (see $out/export.log)" >&2; tail -20 "$out/export.log"; }

report=$out/sanitize_models.md
{
  echo "# compute-sanitizer over bench/models.py rows at their smallest shape"
  echo
  echo "$(date -u +%F) · $("$braze" --version) · $(compute-sanitizer --version | grep -m1 -o 'Version.*')"
  echo
  echo "| row | precision | tool | errors | seconds | status |"
  echo "| --- | --- | --- | --- | --- | --- |"
} >"$report"
status=0
# row name and precision of each exported row, from models.json
mapfile -t exported < <(python3 -c "
import json, sys
for name, r in json.load(open(sys.argv[1]))['rows'].items():
    if 'precision' in r: print(name, r['precision'])" "$out/models.json")
for line in "${exported[@]}"; do
  read -r row precision <<<"$line"
  dir=$out/$row
  inputs=$(ls "$dir"/*.npy)
  if ! XDG_CACHE_HOME=$dir/cache "$braze" compile "$dir/model.onnx" --precision "$precision" -o "$dir/engine.braze" \
       >"$dir/compile.log" 2>&1; then
    echo "| $row | $precision | compile | - | - | failed: $(tail -1 "$dir/compile.log") |" >>"$report"
    status=1
    continue
  fi
  for tool in ${TOOLS:-memcheck racecheck initcheck}; do
    t0=$(date +%s)
    # shellcheck disable=SC2086  # one argument per input file
    timeout "$limit" compute-sanitizer --tool "$tool" --print-limit 20 \
      "$braze" run "$dir/engine.braze" --backend gpu --inputs $inputs >"$dir/$tool.log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - t0 ))
    # memcheck and initcheck end with "ERROR SUMMARY: N errors"; racecheck with
    # "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)".
    errors=$(grep -oE 'ERROR SUMMARY: [0-9]+|RACECHECK SUMMARY: .*\(([0-9]+) errors' "$dir/$tool.log" |
      tail -1 | grep -oE '[0-9]+( errors)?$' | grep -oE '^[0-9]+')
    if [ "$rc" -eq 124 ]; then what="timed out after ${limit} s"
    elif [ -z "$errors" ]; then what="no summary (exit $rc)"
    elif [ "$rc" -ne 0 ]; then what="braze exit $rc"
    elif [ "$errors" -ne 0 ]; then what="errors"
    else what="clean"; fi
    [ "$what" = clean ] || status=1
    echo "| $row | $precision | $tool | ${errors:--} | $secs | $what |" >>"$report"
    echo "sanitize_models: $row $tool: ${errors:-?} errors, $secs s, $what"
  done
done
cat "$report"
exit $status
