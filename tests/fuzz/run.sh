#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Builds the libFuzzer targets of tests/fuzz in the instrumented tree
# (scripts/instrumented-build.sh: clang-16, ASan + UBSan + libFuzzer; the
# sanitizer stage builds and tests the rest of it) and runs each for SECONDS
# (default 20), two at a time, seeded from tests/fuzz/corpus/TARGET/ (only
# read: what the fuzzer adds goes to the build folder). Exits 1 if any
# target found a crash, a sanitizer report, a broken property or an
# exception other than ProtocolError, and prints each reproducer.
#
# Usage: tests/fuzz/run.sh [SECONDS] [TARGET...]   (targets: fuzz_*.cpp here)
# Env:   RDMASTREAM_FUZZ_BUILD_DIR  build folder (default: build-asan)
set -euo pipefail
cd "$(dirname "$0")/../.."

die() { printf 'fuzz: error: %s\n' "$*" >&2; exit 2; }

seconds=${1:-20}
[[ $seconds =~ ^[1-9][0-9]*$ ]] || die "SECONDS must be a positive number, not '$seconds' (usage: tests/fuzz/run.sh [SECONDS] [TARGET...])"
shift $(($# > 0 ? 1 : 0))
build=${RDMASTREAM_FUZZ_BUILD_DIR:-build-asan}

if (($#)); then
  targets=("$@")
else
  targets=()
  for f in tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi
for t in "${targets[@]}"; do
  [[ -f tests/fuzz/$t.cpp ]] || die "no fuzz target $t (tests/fuzz/$t.cpp)"
  [[ -d tests/fuzz/corpus/$t ]] || die "$t has no seed corpus tests/fuzz/corpus/$t (fuzz_make_seeds writes it)"
done
echo "fuzz: building ${#targets[@]} targets in $build (clang-16, ASan + UBSan + libFuzzer)"
scripts/instrumented-build.sh "$build" "${targets[@]}"

# A finding aborts the run; ASan's and UBSan's reports carry the stack.
asan_options=halt_on_error=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

children=()
stop_children() {
  local c
  for c in "${children[@]}"; do kill "$c" 2>/dev/null || true; done
  for c in "${children[@]}"; do wait "$c" 2>/dev/null || true; done
}
trap 'stop_children' EXIT
trap 'echo "fuzz: interrupted" >&2; exit 130' INT
trap 'echo "fuzz: terminated" >&2; exit 143' TERM

launch() { # TARGET: starts it in the background; its pid is the last of children
  local t=$1 work=$build/fuzz-runs/$1
  rm -rf "$work/findings"
  mkdir -p "$work/corpus" "$work/findings"
  local args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
              -artifact_prefix="$work/findings/")
  # Caps grammar tokens help the targets that read caps strings.
  case $t in *caps* | fuzz_video_meta) args+=(-dict=tests/fuzz/caps.dict) ;; esac
  # GStreamer's caps parser and GLib leak on malformed caps (their bug, not
  # ours; without frame pointers in their frames LSan cannot tell whose), so
  # the targets that parse caps with GStreamer do not hunt leaks.
  local leaks=1
  case $t in fuzz_raw_caps | fuzz_gst_caps | fuzz_caps_agree | fuzz_video_meta) leaks=0 ;; esac
  ASAN_OPTIONS=$asan_options:detect_leaks=$leaks \
    "$build/tests/fuzz/$t" "${args[@]}" "$work/corpus" "tests/fuzz/corpus/$t" >"$work/log" 2>&1 &
  children+=($!)
}

verdict() { # TARGET STATUS: its line, or its report and reproducers
  local t=$1 status=$2 work=$build/fuzz-runs/$1 runs found
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n1)
  found=("$work"/findings/*)
  [[ -e ${found[0]} ]] || found=()
  if ((status == 0 && ${#found[@]} == 0)); then
    printf 'fuzz: %-20s ok, %s runs in %s s\n' "$t" "${runs:-?}" "$seconds"
    return
  fi
  failed+=("$t")
  printf 'fuzz: %-20s FAILED (exit %s); its report:\n' "$t" "$status" >&2
  # The report: from the first sanitizer/libFuzzer line on, at most 60 lines.
  sed -n '/==[0-9]*==\|^fuzz property broken\|^fuzz: GLib critical from\|runtime error:\|terminate called\|deadly signal/,$p' "$work/log" \
    | head -n 60 >&2 || true
  local f
  for f in "${found[@]}"; do
    printf 'fuzz: reproducer %s\nfuzz:   run it: %s %s\n' "$f" "$build/tests/fuzz/$t" "$f" >&2
  done
  printf 'fuzz:   full log: %s\n' "$work/log" >&2
}

# Two at a time: each runs for the same SECONDS, and the test command's
# machine has two cores.
failed=()
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  pair=("${targets[@]:i:2}")
  children=()
  for t in "${pair[@]}"; do launch "$t"; done
  for j in "${!pair[@]}"; do
    status=0
    wait "${children[$j]}" || status=$?
    verdict "${pair[$j]}" "$status"
  done
  children=()
done

if ((${#failed[@]})); then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ok (${seconds} s each)"
