#!/usr/bin/env bash
# Sets everything up, builds, and runs the main job on the bundled default model
# (models/bert_tiny_legacy): shows the graph braze makes of it, then runs it on its test
# inputs and checks the outputs against ONNX Runtime's.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
model=models/bert_tiny_legacy
echo
echo "== braze inspect $model/model.onnx --shapes input_ids:2x16,attention_mask:2x16 (summary) =="
build/cli/braze inspect $model/model.onnx --shapes input_ids:2x16,attention_mask:2x16 | sed -n '/^graph/q;p'
echo
echo "== braze run $model/model.onnx (reference executor, checked against ONNX Runtime) =="
build/cli/braze run $model/model.onnx --inputs $model/test_data_set_0 --check $model/test_data_set_0
