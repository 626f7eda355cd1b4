#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Configures and builds rdmastream into ${RDMASTREAM_BUILD_DIR:-build}.
# Warnings are errors under CI (CI=true).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${RDMASTREAM_BUILD_DIR:-build}
werror=OFF
if [ "${CI:-}" = true ]; then werror=ON; fi
cmake -S . -B "$build" -G Ninja -DRDMASTREAM_WERROR="$werror" >/dev/null
cmake --build "$build"
