#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The sanitizer stage of the test command (scripts/test.sh runs it after the
# normal tests): rdmastream built with ASan + UBSan (-DRDMASTREAM_SANITIZE=ON)
# into ${RDMASTREAM_SANITIZE_BUILD_DIR:-build-asan}, then
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
build=$(rdmastream_build_dir "$root" "${RDMASTREAM_SANITIZE_BUILD_DIR:-}" build-asan)
# ~6 quick ones, one guest boot each: frames and credits through the ring;
# a sender forging immediates; a live ring growth; rdmarecv's outputs
# (-o, --gst); rdmasink into rdmasrc; rdmasend's padded layouts into rdmasrc.
rdma_tests='^rdma\.(ring_intact|fault_wrong_imm|format_change_grows_ring|cli_outputs|gst_i420|gst_from_rdmasend)\.one$'

die() { printf 'test-sanitize: error: %s\n' "$*" >&2; exit 2; }

werror=OFF
if [ "${CI:-}" = true ]; then werror=ON; fi
# A report stops the program (halt_on_error; abort_on_error: exit 134, not
# an exit status a test may expect) and is printed on stderr, which ctest
# keeps in its log, also from the guests (the bed brings their output back).
# Natively, ASan's and LSan's reports go to a file instead (log_path), so a
# test script that swallows stderr cannot hide them; gcc's UBSan ignores
# log_path and reports on stderr only.
reports=$build/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
common=halt_on_error=1:abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=0
# GStreamer scans plugins in gst-plugin-scanner, which is not built with ASan.
asan_runtime=$(readlink -f "$(gcc -print-file-name=libasan.so)")
[[ -f $asan_runtime ]] || die "cannot find gcc's libasan.so (is gcc installed?)"
gst_scanner=$(pkg-config --variable=pluginscannerdir gstreamer-1.0)/gst-plugin-scanner
[[ -x $gst_scanner ]] || die "no gst-plugin-scanner at $gst_scanner (gstreamer1.0 not installed?)"
export RDMASTREAM_ASAN_RUNTIME=$asan_runtime RDMASTREAM_GST_SCANNER=$gst_scanner
export GST_PLUGIN_SCANNER_1_0=$root/tests/sanitize/gst-plugin-scanner

echo "test-sanitize: building with ASan + UBSan into $build"
# -O1 and line tables only (-g1): half the compile time of -O2 -g, and the
# reports' stacks still name file and line.
cmake -S . -B "$build" -G Ninja -DRDMASTREAM_SANITIZE=ON -DRDMASTREAM_WERROR="$werror" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" >/dev/null
cmake --build "$build"
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
ASAN_OPTIONS=$common:fast_unwind_on_malloc=0:log_path=$reports/native \
  ctest --test-dir "$build" --output-on-failure --test-output-size-passed 10000000 -LE 'rdma|fuzz' || status=1
reported_in_log native && status=1
if compgen -G "$reports/native.*" >/dev/null; then
  echo "test-sanitize: native: sanitizer report(s) in $reports:" >&2
  for f in "$reports"/native.*; do
    echo "---- $f" >&2
    head -n 80 "$f" >&2
  done
  status=1
fi

echo "test-sanitize: RDMA tests ($rdma_tests)"
scripts/softroce/rdmabed prepare
ASAN_OPTIONS=$common \
  ctest --test-dir "$build" --output-on-failure --test-output-size-passed 10000000 -L rdma -R "$rdma_tests" || status=1
reported_in_log rdma && status=1

if ((status)); then
  echo "test-sanitize: FAILED" >&2
else
  echo "test-sanitize: ok: no test failed, no sanitizer report"
fi
exit "$status"
