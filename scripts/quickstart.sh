#!/usr/bin/env bash
# Sets everything up, builds, and runs the main job on the bundled default model
# (models/bert_tiny_legacy): shows the graph and kernels braze makes of it, compiles it into
# an engine file, runs that on the model's test inputs and checks the outputs against ONNX
# Runtime's. With a GPU it runs there and also diffs the GPU against the CPU reference;
# without one it runs the engine's graph on the CPU reference and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
model=models/bert_tiny_legacy
shapes=input_0:2x16,input_1:2x16
braze=build/cli/braze
echo
echo "== braze inspect $model/model.onnx (summary) =="
$braze inspect $model/model.onnx --shapes $shapes | awk '/^graph/ { stop = 1 } !stop'  # reads it all: no SIGPIPE
echo
echo "== braze compile $model/model.onnx -o build/bert_tiny_legacy.braze =="
$braze compile $model/model.onnx --shapes $shapes -o build/bert_tiny_legacy.braze
echo
echo "== braze run build/bert_tiny_legacy.braze (checked against ONNX Runtime's outputs) =="
$braze run build/bert_tiny_legacy.braze --inputs $model/test_data_set_0 --check $model/test_data_set_0
if $braze doctor >/dev/null 2>&1; then
  echo
  echo "== braze diff $model/model.onnx --a gpu --b reference =="
  $braze diff $model/model.onnx --a gpu --b reference --inputs $model/test_data_set_0
fi
