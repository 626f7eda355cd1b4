#!/usr/bin/env bash
# Runs every test: installs what is missing, builds, runs the unit tests
# natively and the RDMA tests on an RDMA device (the host's, or Soft-RoCE in
# QEMU guests via scripts/softroce/rdmabed). Extra arguments go to ctest,
# e.g. `scripts/test.sh -L unit` or `scripts/test.sh -R ring_intact`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
scripts/softroce/rdmabed prepare
ctest --test-dir "${RDMASTREAM_BUILD_DIR:-build}" --output-on-failure "$@"
