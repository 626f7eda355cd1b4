#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Configures and builds rdmastream into ${RDMASTREAM_BUILD_DIR:-build}.
# Warnings are errors under CI (CI=true). A unity build (several .cpp files
# compiled as one: a third less compile time, which the test command's
# budget needs); RDMASTREAM_UNITY=OFF builds file by file, for quicker
# rebuilds after a one-file change.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${RDMASTREAM_BUILD_DIR:-build}
werror=OFF
if [ "${CI:-}" = true ]; then werror=ON; fi
cmake -S . -B "$build" -G Ninja -DRDMASTREAM_WERROR="$werror" -DCMAKE_UNITY_BUILD="${RDMASTREAM_UNITY:-ON}" >/dev/null
cmake --build "$build"
