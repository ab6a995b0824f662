#!/usr/bin/env bash
# The CLI files rebuilt on the public API (include/braze/) include no internal header —
# graph/, fusion/, codegen/, frontend/, api/ or runtime/gpu/ — and no CLI header that does
# (#18). runtime/compare.h is allowed: it needs only braze/tensor.h. The other commands
# (inspect, diff) still work on the internal graph.
set -euo pipefail
cd "$1/cli"
public=(main.cpp commands.h printable.h printable.cpp build_summary.h build_summary.cpp model_options.h
        model_options.cpp run_inputs.h run_inputs.cpp cmd_run.cpp cmd_compile.cpp cmd_doctor.cpp
        cmd_conformance.cpp cmd_bench.cpp)
status=0
for f in "${public[@]}"; do
  [ -f "$f" ] || { echo "cli/$f: listed as on the public API but missing"; status=1; continue; }
  if grep -nE '#include "(graph|fusion|codegen|frontend|api|runtime/gpu)/' "$f"; then
    echo "cli/$f includes an internal header (above): go through include/braze/"
    status=1
  fi
  for h in $(grep -oE '#include "cli/[a-z_]+\.h"' "$f" | sed -E 's/#include "cli\/(.*)"/\1/'); do
    printf '%s\n' "${public[@]}" | grep -qx "$h" || { echo "cli/$f includes cli/$h, which is not on the public API"; status=1; }
  done
done
[ $status -eq 0 ] && echo "${#public[@]} CLI files on the public API alone"
exit $status
