#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The sanitizer stage of the test command (scripts/test.sh runs it after the
# normal tests): rdmastream built in the instrumented tree (clang-16, ASan +
# UBSan, scripts/instrumented-build.sh; the fuzz test built its fuzz targets
# there already) in ${RDMASTREAM_SANITIZE_BUILD_DIR:-BUILD-asan}, BUILD being
# the normal build folder (build), then
#   1. the native tests: unit, cli and gst (ctest -LE 'rdma|fuzz')
#   2. a few RDMA tests through the test bed (the guests get the sanitizer
#      options too): the transport, a hostile sender, the CLIs, GStreamer
# Fails on a failed test and on any sanitizer report, also one from a program
# whose failure a test expected, or whose stderr a test script kept to itself.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=build-dir.sh
source scripts/build-dir.sh # absolute or relative to the project
build=$(rdmastream_build_dir "$root" "${RDMASTREAM_SANITIZE_BUILD_DIR:-}" "$(rdmastream_build_dir "$root")-asan")
# ~6 quick ones, jobs of one served guest: frames and credits through the ring;
# a sender forging immediates; a live ring growth; rdmasend's decoder into
# registered memory, looping, into rdmarecv --framemd5 (rdmarecv's other
# outputs, -o and --gst, run natively: tests/cli/sinks_test.cpp); rdmasink
# into rdmasrc; rdmasend's padded layouts into rdmasrc.
rdma_tests='^rdma\.(ring_intact|fault_wrong_imm|format_change_grows_ring|cli_receiver_leaves|gst_i420|gst_from_rdmasend)\.one$'

die() { printf 'test-sanitize: error: %s\n' "$*" >&2; exit 2; }

reports=$build/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
common=halt_on_error=1:abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=0
# GStreamer scans plugins in gst-plugin-scanner, which is not built with ASan.
# clang links its runtime into our programs; the scanner (not ours) gets
# the shared one, for our plugin's sake.
asan_runtime=$(readlink -f "$(clang++-16 -print-file-name=libclang_rt.asan-x86_64.so 2>/dev/null)" || true)
[[ -f $asan_runtime ]] || die "cannot find clang's libclang_rt.asan-x86_64.so (run scripts/setup.sh: libclang-rt-16-dev)"
gst_scanner=$(pkg-config --variable=pluginscannerdir gstreamer-1.0)/gst-plugin-scanner
[[ -x $gst_scanner ]] || die "no gst-plugin-scanner at $gst_scanner (gstreamer1.0 not installed?)"
export RDMASTREAM_ASAN_RUNTIME=$asan_runtime RDMASTREAM_GST_SCANNER=$gst_scanner
export GST_PLUGIN_SCANNER_1_0=$root/tests/sanitize/gst-plugin-scanner

# The time table of scripts/test.sh (RDMASTREAM_TIME_TABLE: its folder):
# each step's seconds and verdict, and each ctest run's junit file.
table=${RDMASTREAM_TIME_TABLE:-}
record() { # NAME START STATUS
  [[ -n $table ]] || return 0
  printf '%s\t%s\t%s\n' "$((SECONDS - $2))" "$( (($3)) && echo FAILED || echo ok)" "$1" >>"$table/stages"
}
junit() { # NAME: the --output-junit argument of a ctest run, noted for the table
  [[ -n $table ]] || return 0
  echo "$build:$table/junit-sanitize-$1.xml" >>"$table/sanitize-runs"
  printf '%s\n' --output-junit "$table/junit-sanitize-$1.xml"
}

start=$SECONDS
echo "test-sanitize: building with ASan + UBSan into $build"
built=0
scripts/instrumented-build.sh "$build" || built=1
record "sanitizer build" "$start" "$built"
((built == 0)) || { echo "test-sanitize: FAILED: the build failed" >&2; exit 1; }
# A registry written by a scanner without the ASan runtime lists our plugin
# as broken until the plugin file changes: the tests' registries start anew.
rm -f "$build"/tests/gst/registry-*.bin

# Sanitizer reports in a ctest run's full log (passed tests' output included).
report_pattern='ERROR: (Address|Leak)Sanitizer|SUMMARY: UndefinedBehaviorSanitizer|: runtime error: '
reported_in_log() { # STAGE
  local log=$build/Testing/Temporary/LastTest.log
  if grep -Eq -- "$report_pattern" "$log" 2>/dev/null; then
    echo "test-sanitize: $1: sanitizer report(s) in the tests' output ($log):" >&2
    grep -En -B2 -A30 -- "$report_pattern" "$log" | head -n 120 >&2
    return 0
  fi
  return 1
}

status=0
echo "test-sanitize: native tests (ctest -LE 'rdma|fuzz')"
# Full malloc stacks (the fast unwinder stops in libraries built without
# frame pointers, GLib's among them), so that tests/sanitize/lsan.supp can
# tell a library's own allocation at load time from a leak of ours: three
# times slower, half a minute more.
start=$SECONDS
ASAN_OPTIONS=$common:fast_unwind_on_malloc=0:log_path=$reports/native \
  ctest --test-dir "$build" --output-on-failure --test-output-size-passed 10000000 -LE 'rdma|fuzz' -j2 $(junit native) || status=1
reported_in_log native && status=1
if compgen -G "$reports/native.*" >/dev/null; then
  echo "test-sanitize: native: sanitizer report(s) in $reports:" >&2
  for f in "$reports"/native.*; do
    echo "---- $f" >&2
    head -n 80 "$f" >&2
  done
  status=1
fi

record "sanitizer native tests (-j2)" "$start" "$status"

echo "test-sanitize: RDMA tests ($rdma_tests)"
start=$SECONDS
rstatus=0
scripts/softroce/rdmabed prepare
ASAN_OPTIONS=$common \
  ctest --test-dir "$build" --output-on-failure --test-output-size-passed 10000000 -L rdma -R "$rdma_tests" -j2 $(junit rdma) || rstatus=1
reported_in_log rdma && rstatus=1
record "sanitizer RDMA tests" "$start" "$rstatus"
((rstatus == 0)) || status=1

if ((status)); then
  echo "test-sanitize: FAILED" >&2
else
  echo "test-sanitize: ok: no test failed, no sanitizer report"
fi
exit "$status"
