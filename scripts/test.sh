#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Runs every test: installs what is missing, builds, runs the unit tests
# natively and the RDMA tests on an RDMA device (the host's, or Soft-RoCE in
# QEMU guests via scripts/softroce/rdmabed); the fuzz targets are the ctest
# test "fuzz" (label fuzz, tests/fuzz/run.sh). Extra arguments go to this
# ctest run, e.g. `scripts/test.sh -L unit` or `scripts/test.sh -R ring_intact`.
# Then the sanitizer stage, scripts/test-sanitize.sh (ASan + UBSan build,
# native tests and a few RDMA tests): RDMASTREAM_SKIP_SANITIZE=1 skips it
# for a quick local run; CI runs it. Either failing fails the command.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
scripts/softroce/rdmabed prepare
status=0
ctest --test-dir "${RDMASTREAM_BUILD_DIR:-build}" --output-on-failure "$@" || status=1
if [ "${RDMASTREAM_SKIP_SANITIZE:-}" = 1 ]; then
  echo "test: sanitizer stage skipped (RDMASTREAM_SKIP_SANITIZE=1)"
else
  bash scripts/test-sanitize.sh || status=1
fi
exit "$status"
