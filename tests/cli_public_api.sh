#!/usr/bin/env bash
# Every file of the CLI is built on the public API (include/braze/) alone: none includes an
# internal header — graph/, fusion/, codegen/, frontend/, api/ or runtime/ — but
# runtime/compare.h, which needs only braze/tensor.h (#18).
set -euo pipefail
cd "$1/cli"
files=(*.h *.cpp)
status=0
for f in "${files[@]}"; do
  if grep -nE '#include "(graph|fusion|codegen|frontend|api|runtime)/' "$f" | grep -v '"runtime/compare.h"'; then
    echo "cli/$f includes an internal header (above): go through include/braze/"
    status=1
  fi
done
grep -q 'braze_api' CMakeLists.txt || { echo "cli/CMakeLists.txt: the CLI should link the library (braze_api)"; status=1; }
[ $status -eq 0 ] && echo "${#files[@]} CLI files on the public API alone"
exit $status
