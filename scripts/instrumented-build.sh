#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# instrumented-build.sh BUILD [TARGET...]
# The one instrumented tree of the test command: clang-16 with ASan + UBSan
# and libFuzzer's coverage (-DRDMASTREAM_SANITIZE=ON -DRDMASTREAM_FUZZ=ON),
# -O1 with line tables only (-g1: half the compile time of -O2 -g, and the
# reports' stacks still name file and line), no bench/. Configures BUILD so
# and builds TARGETs (default: everything). tests/fuzz/run.sh builds the fuzz
# targets in it, scripts/test-sanitize.sh the rest and runs the tests: one
# compile of the code for both, where there were two (gcc ASan, clang fuzz).
# Warnings are the gcc build's to fail on (CI=true makes them errors there).
# A unity build, as scripts/build.sh's (RDMASTREAM_UNITY=OFF: file by file).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: instrumented-build.sh BUILD [TARGET...]}
shift
for tool in clang-16 clang++-16; do
  command -v "$tool" >/dev/null || {
    echo "instrumented-build: $tool is not installed: run scripts/setup.sh (clang-16, libclang-rt-16-dev)" >&2
    exit 2
  }
done
CC=clang-16 CXX=clang++-16 cmake -S . -B "$build" -G Ninja \
  -DRDMASTREAM_SANITIZE=ON -DRDMASTREAM_FUZZ=ON -DRDMASTREAM_BUILD_BENCH=OFF -DCMAKE_UNITY_BUILD="${RDMASTREAM_UNITY:-ON}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" >/dev/null
if (($#)); then
  cmake --build "$build" --target "$@"
else
  cmake --build "$build"
fi
