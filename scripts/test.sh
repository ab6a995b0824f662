#!/usr/bin/env bash
# Sets everything up, builds, and runs the whole test suite: unit, conformance (ONNX node
# tests and models/), model and gpu tests. GPU tests skip cleanly on a machine without one.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd build
ctest --output-on-failure -j "$(nproc)" "$@"
