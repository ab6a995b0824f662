#!/usr/bin/env bash
# Installs what braze needs on a fresh Debian machine with the CUDA toolkit at
# /usr/local/cuda (missing Debian packages; from PyPI onnx, onnxruntime and numpy for the
# test oracles, nanobind and scikit-build-core for the Python module, pytest), then configures
# and builds into build/. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ python3 python3-pip libonnx-dev libprotobuf-dev protobuf-compiler
          libgtest-dev libcli11-dev nlohmann-json3-dev libfmt-dev libxxhash-dev libonnx-testdata pkg-config)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

pip_packages=(onnx onnxruntime numpy nanobind scikit-build-core pytest)
if [ "${BRAZE_SKIP_PIP:-0}" != 1 ] && ! python3 -c "import onnx, onnxruntime, numpy, nanobind, scikit_build_core, pytest" 2>/dev/null; then
  echo "setup: installing ${pip_packages[*]} from PyPI (test oracles, the Python module's build and tests)"
  python3 -m pip install -q "${pip_packages[@]}" 2>/dev/null ||
    python3 -m pip install -q --break-system-packages "${pip_packages[@]}"
fi

build_type=${BRAZE_BUILD_TYPE:-Release}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$build_type" >/dev/null
cmake --build build
