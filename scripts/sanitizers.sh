#!/usr/bin/env bash
# The CPU test suite under AddressSanitizer and UndefinedBehaviorSanitizer (clang, build-san),
# then the fuzz targets (scripts/fuzz.sh: FUZZ_SECONDS each, default 120, or FUZZ_RUNS inputs from
# FUZZ_SEED): what CI runs after scripts/test.sh.
# The Python module and the tests that load it into an unsanitized interpreter are left out.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang++ >/dev/null || { sudo="" ; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang libclang-rt-14-dev >/dev/null; }
CXX=clang++ cmake -S . -B build-san -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBRAZE_FUZZ=ON -DBRAZE_PYTHON=OFF >/dev/null
cmake --build build-san
export ASAN_OPTIONS=detect_leaks=1
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# LSan's own tracer sometimes crashes at a test's exit (google/sanitizers#1353; seen while it
# reads a dlopen'ed module's dynamic TLS — the emulator's kernels — and for one test on every run
# from ctest's working folder, not from others: it depends on the process's memory layout): such a test, and only such a test, is run again, up to twice
# (scripts/lsan_tracer_failures.py sorts them); one that crashes LSan every time runs a last time
# under ASan and UBSan without leak detection, and the log says so.
san_ctest() { (cd build-san && ctest --output-on-failure -j "$(nproc)" --output-junit "$PWD/junit.xml" "$@"); }
if ! san_ctest -LE gpu -E "python|pip_install|install.example"; then
  for attempt in 1 2 3; do
    rerun=$(python3 scripts/lsan_tracer_failures.py build-san/junit.xml) || exit 1
    [ -n "$rerun" ] || { echo "sanitizers.sh: ctest failed with no failed test in its report"; exit 1; }
    if [ "$attempt" -lt 3 ]; then
      echo "sanitizers.sh: rerunning after an LSan tracer crash (attempt $attempt): $rerun"
      san_ctest -R "$rerun" && break
    else
      echo "sanitizers.sh: LSan's tracer crashed on every run of $rerun; running it under ASan and" \
           "UBSan without leak detection"
      (export ASAN_OPTIONS=detect_leaks=0; san_ctest -R "$rerun") || exit 1
    fi
  done
fi
scripts/fuzz.sh "${FUZZ_SECONDS:-120}"
