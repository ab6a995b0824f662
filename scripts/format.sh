#!/usr/bin/env bash
# clang-format (14, Debian's) over the tracked C++ with the checked-in .clang-format; the CUDA
# text in codegen/device/ is left as written (its own .clang-format: its bytes are in every
# kernel's name hash). `scripts/format.sh` rewrites the files; `scripts/format.sh --check` lists
# those that differ and fails, as CI (.ci/run) does first.
set -euo pipefail
cd "$(dirname "$0")/.."
cf=clang-format-14
command -v "$cf" >/dev/null || { sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang-format-14 >/dev/null; }
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cuh')
if [ "${1:-}" != --check ]; then
  "$cf" -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do "$cf" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f"); done
if ((${#bad[@]})); then
  echo "clang-format: ${#bad[@]} files differ from .clang-format (scripts/format.sh rewrites them):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "clang-format: ${#files[@]} files as formatted"
