#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Flags the programs refuse (unknown, missing, out of range): exit status 2,
# as for every mistake the user can fix, with CLI11's message, the usage
# line and where to look on stderr, nothing on stdout. --help and --version
# still exit 0 on stdout. No RDMA, no clips. Usage: bad-flags.sh RDMASEND RDMARECV
set -u
send=$1 recv=$2
failures=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
fail() { echo "FAIL $*"; sed 's/^/  stderr: /' "$err"; failures=$((failures + 1)); }

# refused NAME PROGRAM MESSAGE-REGEX ARGS...: exit 2, stderr is the three lines.
refused() {
  name=$1 prog=$2 regex=$3
  shift 3
  timeout 20 "$@" >"$out" 2>"$err"
  got=$?
  [ "$got" -eq 2 ] || { fail "$name: exit status $got, expected 2"; return; }
  [ ! -s "$out" ] || { fail "$name: wrote to stdout: $(head -1 "$out")"; return; }
  sed -n 1p "$err" | grep -Eq "^$prog: $regex\$" || { fail "$name: first line is not '$prog: $regex'"; return; }
  sed -n 2p "$err" | grep -Eq "^Usage: $prog \[OPTIONS\]" || { fail "$name: second line is not the usage line"; return; }
  [ "$(sed -n 3p "$err")" = "try: $prog --help" ] || { fail "$name: third line is not 'try: $prog --help'"; return; }
  [ "$(wc -l <"$err")" -eq 3 ] || { fail "$name: more than three lines on stderr"; return; }
  echo "ok $name: $(head -1 "$err")"
}

# fine NAME REGEX ARGS...: exit 0, stdout matches REGEX.
fine() {
  name=$1 regex=$2
  shift 2
  timeout 20 "$@" >"$out" 2>"$err"
  got=$?
  [ "$got" -eq 0 ] || { fail "$name: exit status $got, expected 0"; return; }
  grep -Eq "$regex" "$out" || { fail "$name: stdout does not match /$regex/"; return; }
  echo "ok $name"
}

# Alone, rdmasend's first complaint is the missing INPUT (CLI11 checks that first).
refused send_unknown_flag_alone rdmasend 'INPUT is required' "$send" --no-such-flag
refused send_unknown_flag rdmasend 'The following argument was not expected: --no-such-flag' "$send" clip.mp4 --no-such-flag
refused recv_unknown_flag rdmarecv 'The following argument was not expected: --no-such-flag' "$recv" --no-such-flag
refused send_bad_fps rdmasend '--fps: Value -3 not in range .*' "$send" clip.mp4 --fps -3
refused recv_bad_poll rdmarecv '--poll: spin not in \{event,busy\}' "$recv" --null --poll spin
# mistaken NAME PROGRAM MESSAGE-REGEX ARGS...: a setting that parses but
# cannot be (a UserError before any RDMA): exit 2, one line naming the fix.
mistaken() {
  name=$1 prog=$2 regex=$3
  shift 3
  timeout 20 "$@" >"$out" 2>"$err"
  got=$?
  [ "$got" -eq 2 ] || { fail "$name: exit status $got, expected 2"; return; }
  grep -Eq "^$prog: $regex" "$err" && [ "$(wc -l <"$err")" -eq 1 ] || { fail "$name: stderr is not one line '$prog: $regex'"; return; }
  echo "ok $name: $(head -1 "$err")"
}
mistaken recv_pending_without_listen rdmarecv '--max-pending and --max-pending-per-address need --listen' \
  "$recv" --null --connect 192.0.2.1 --max-pending 3
mistaken send_pending_per_address_above_total rdmasend '--max-pending-per-address 40 is more than --max-pending 32' \
  "$send" clip.mp4 --listen --max-pending-per-address 40
# Two paths: --listen / --connect once per path (two at most), -d as often,
# and path B at an address of its own.
mistaken recv_three_paths rdmarecv '--listen given 3 times: once per path, and a stream has two at most' \
  "$recv" --null --listen 192.0.2.1 --listen 192.0.2.2 --listen 192.0.2.3
mistaken send_device_b_one_path rdmasend '-d given 2 times: once per path, the second for path B, and this stream has 1' \
  "$send" clip.mp4 --connect 192.0.2.1 -d rxe0 -d rxe1
mistaken send_path_b_same_address rdmasend '--connect 192.0.2.1 twice: path B needs an address of its own' \
  "$send" clip.mp4 --connect 192.0.2.1 --connect 192.0.2.1
# --map: one stream of input 0, by FFmpeg's specifier syntax; lavfi inputs
# (libavdevice) stand in for files. Checked before any RDMA.
mistaken send_map_other_input rdmasend '--map 1:a:0: rdmasend reads one input, input 0: write 0:SPEC' \
  "$send" clip.mp4 --map 1:a:0
mistaken send_map_bad_spec rdmasend '--map 0:q:0: "q:0" is not an FFmpeg stream specifier' \
  "$send" lavfi:testsrc2=size=64x64:rate=5 --map 0:q:0 --connect 192.0.2.1
mistaken send_map_no_stream rdmasend '--map 0:a:0: no stream of lavfi:testsrc2=size=64x64:rate=5 matches \(it has: 0:0 video rawvideo\)' \
  "$send" lavfi:testsrc2=size=64x64:rate=5 --map 0:a:0 --connect 192.0.2.1
mistaken send_map_audio_fps rdmasend '--fps paces video frames, and --map names only audio' \
  "$send" lavfi:sine --map 0:a:0 --fps 25 --connect 192.0.2.1
mistaken send_audio_only_pix_fmt rdmasend '--pix-fmt converts pictures, and lavfi:sine has only audio' \
  "$send" lavfi:sine --pix-fmt rgba --connect 192.0.2.1
mistaken send_map_twice rdmasend '--map 0:0: stream 0:0 is named by an earlier --map too: each stream goes once' \
  "$send" lavfi:testsrc2=size=64x64:rate=5 --map 0:v:0 --map 0:0 --connect 192.0.2.1
refused send_map_and_stream rdmasend '--stream excludes --map' "$send" clip.mp4 --map 0:a:0 --stream 1
refused send_map_and_no_audio rdmasend '--map excludes --no-audio' "$send" clip.mp4 --map 0:v:0 --no-audio
fine send_help '^Usage: rdmasend \[OPTIONS\] INPUT' "$send" --help
fine recv_help '^Usage: rdmarecv \[OPTIONS\]' "$recv" --help
fine send_version '^rdmasend [0-9]' "$send" --version
fine recv_version '^rdmarecv [0-9]' "$recv" --version

[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
