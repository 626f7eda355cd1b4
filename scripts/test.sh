#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Runs every test: installs what is missing, builds, runs the unit tests
# natively (two at a time) and the RDMA tests on an RDMA device (the host's,
# or Soft-RoCE in QEMU guests that stay up for all of them: rdmabed serve,
# a ctest fixture); the fuzz targets are the ctest test "fuzz" (label fuzz,
# tests/fuzz/run.sh). Extra arguments go to every ctest run, e.g.
# `scripts/test.sh -L unit` or `scripts/test.sh -R ring_intact`.
# Then the sanitizer stage, scripts/test-sanitize.sh (ASan + UBSan build,
# native tests and a few RDMA tests): RDMASTREAM_SKIP_SANITIZE=1 skips it
# for a quick local run; CI runs it. Any stage failing fails the command.
# At the end: the time table (each stage's seconds, the 20 slowest tests,
# seconds per label; scripts/time-table.py). CI's budget is 30 minutes.
# --long (first argument): also the tests labelled long (a 15-minute soak),
# which the default run leaves out for that budget.
set -euo pipefail
long=0
if [ "${1:-}" = --long ]; then long=1; shift; fi
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=build-dir.sh
source scripts/build-dir.sh
build=$(rdmastream_build_dir "$root")

times=$(mktemp -d "${TMPDIR:-/tmp}/rdmastream-times.XXXXXX")
trap 'rm -rf "$times"' EXIT
export RDMASTREAM_TIME_TABLE=$times # test-sanitize.sh adds its stages here
status=0

# stage NAME CMD...: runs CMD, records its seconds and verdict; a failed
# stage fails the command but the next stages still run.
stage() {
  local name=$1 start=$SECONDS rc=0
  shift
  echo "test: ---- $name ----"
  "$@" || rc=$?
  printf '%s\t%s\t%s\n' "$((SECONDS - start))" "$( ((rc)) && echo "FAILED ($rc)" || echo ok)" "$name" >>"$times/stages"
  ((rc == 0)) || status=1
  return 0
}

# ctest_stage NAME CTEST-ARGS...: a ctest run whose per-test times go into the table.
ctest_runs=()
ctest_stage() {
  local name=$1 junit
  shift
  junit=$times/junit-${#ctest_runs[@]}.xml
  ctest_runs+=("$build:$junit")
  stage "$name" ctest --test-dir "$build" --output-on-failure --output-junit "$junit" "$@"
}

stage setup bash scripts/setup.sh
stage build bash scripts/build.sh
if ((status)); then
  echo "test: the build failed; no test runs" >&2
  python3 scripts/time-table.py "$times/stages"
  exit 1
fi
stage "bed prepare" scripts/softroce/rdmabed prepare
# Native first, two at a time; then the one-guest RDMA tests two at a time
# on two served beds, the two-guest ones two at a time on two served pairs
# (tests/CMakeLists.txt).
ctest_stage "native tests (-j2)" -LE 'rdma|fuzz' -j2 "$@"
ctest_stage "RDMA tests, one guest (-j2)" -L rdma-one -j2 "$@"
ctest_stage "RDMA tests, two guests (-j2)" -L rdma-two -LE long -j2 "$@"
if ((long)); then ctest_stage "long tests" -L long "$@"; fi
ctest_stage fuzz -L fuzz "$@"
if [ "${RDMASTREAM_SKIP_SANITIZE:-}" = 1 ]; then
  echo "test: sanitizer stage skipped (RDMASTREAM_SKIP_SANITIZE=1)"
else
  bash scripts/test-sanitize.sh || status=1
fi

python3 scripts/time-table.py "$times/stages" "${ctest_runs[@]}" $(cat "$times/sanitize-runs" 2>/dev/null)
exit "$status"
