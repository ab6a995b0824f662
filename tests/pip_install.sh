#!/usr/bin/env bash
# `pip install .` as a user runs it: the package built from SOURCE by scikit-build-core into
# a fresh virtual environment (which sees the system's numpy, onnx, onnxruntime and pytest),
# then tests/python run against the installed package from outside the source tree.
# usage: pip_install.sh SOURCE PYTHON
set -euo pipefail
src=$1 python=$2
work=$(mktemp -d /tmp/braze_pip_XXXXXX)
trap 'rm -rf "$work"' EXIT
"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install -q --config-settings=build-dir="$work/build" "$src" > "$work/pip.log" 2>&1 ||
  { tail -40 "$work/pip.log"; echo "FAIL: pip install $src"; exit 1; }
cd "$work"
"$work/venv/bin/python" -c "import braze, os; assert braze.__file__.startswith('$work/venv'), braze.__file__; print('installed', braze.__file__)"
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$src/tests/python"
