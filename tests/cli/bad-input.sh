#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Bad input that fails before any RDMA is needed: each must end in one line
# naming the cause and the fix, with a non-zero exit status, and leave
# nothing running. Usage: bad-input.sh BINDIR CLIPDIR
set -u
bin=$1 clips=$2
failures=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# expect NAME STATUS REGEX -- COMMAND...: COMMAND exits STATUS (or any
# non-zero for "nonzero") within 20 s and its stderr matches REGEX.
expect() {
  name=$1 want=$2 regex=$3
  shift 4
  timeout 20 "$@" >/dev/null 2>"$out"
  got=$?
  if [ "$got" -eq 124 ]; then
    echo "FAIL $name: still running after 20 s"; failures=$((failures + 1)); return
  fi
  if [ "$got" -eq 0 ] || { [ "$want" != nonzero ] && [ "$got" -ne "$want" ]; }; then
    echo "FAIL $name: exit status $got, expected $want"; cat "$out"; failures=$((failures + 1)); return
  fi
  if ! grep -Eq -- "$regex" "$out"; then
    echo "FAIL $name: message does not match /$regex/:"; cat "$out"; failures=$((failures + 1)); return
  fi
  echo "ok $name: $(head -1 "$out")"
}

S=$bin/rdmasend R=$bin/rdmarecv C=$clips/h264.mp4
expect send_missing_input 2 'INPUT is required' -- "$S" --connect 192.0.2.1
expect send_unreadable 2 'rdmasend: cannot open input /nonexistent/clip.mp4: No such file or directory: check the path' -- "$S" /nonexistent/clip.mp4 --connect 192.0.2.1
expect send_not_media 2 'rdmasend: cannot (open input|read) .*bad-input.sh' -- "$S" "$0" --connect 192.0.2.1
expect send_unknown_codec 2 'no decoder for video codec .*transcode it first' -- "$S" "$clips/unknown_codec.mkv" --connect 192.0.2.1
expect send_no_connect_addr 2 'nothing to connect to: give --connect ADDR' -- "$S" "$C"
expect send_receivers_without_listen 2 '--receivers needs --listen: the receivers dial this sender' -- "$S" "$C" --receivers 2
expect send_receivers_with_connect 2 '--receivers needs --listen' -- "$S" "$C" --connect 192.0.2.1 --receivers 2
expect send_listen_and_connect 2 '--listen and --connect exclude each other' -- "$S" "$C" --listen --connect 192.0.2.1
expect send_bad_port 2 "bad port '99999'" -- "$S" "$C" --connect 192.0.2.1:99999
expect send_bad_policy 2 'policy' -- "$S" "$C" --connect 192.0.2.1 --policy fast
expect recv_bad_poll 2 'poll: spin not in \{event,busy\}' -- "$R" --null --poll spin
expect send_bad_slots 2 'slots' -- "$S" "$C" --connect 192.0.2.1 --slots 0
expect send_bad_fps 2 'fps' -- "$S" "$C" --connect 192.0.2.1 --fps -3
expect send_realtime_and_fps 2 '--realtime and --fps exclude each other' -- "$S" "$C" --connect 192.0.2.1 --realtime --fps 5
expect send_bad_pix_fmt 2 '--pix-fmt nonsense: not an FFmpeg pixel format' -- "$S" "$C" --connect 192.0.2.1 --pix-fmt nonsense
expect send_bad_stream 2 '--stream 3: .* has 1 video stream' -- "$S" "$C" --connect 192.0.2.1 --stream 3
expect recv_no_output 2 'no output: give --framemd5 FILE' -- "$R"
expect recv_bad_slot_size 2 'slot-size' -- "$R" --null --slot-size 10
expect recv_unwritable_md5 2 'cannot write --framemd5 /nonexistent/x.md5' -- "$R" --framemd5 /nonexistent/x.md5
expect recv_connect_no_addr 2 "--connect :5: the address is missing" -- "$R" --null --connect :5
expect recv_codec_without_output 2 '--codec libx264 encodes what -o writes: add -o FILE' -- "$R" --codec libx264
expect recv_output_unknown_type 2 '-o /tmp/x.qqq: FFmpeg knows no file type by that name: end it in .y4m' -- "$R" -o /tmp/x.qqq
expect recv_output_raw_in_mp4 2 '-o /tmp/x.mp4: the mp4 format cannot hold raw video: give --codec NAME' -- "$R" -o /tmp/x.mp4
expect recv_output_unknown_codec 2 '--codec nosuch: this FFmpeg has no video encoder of that name' -- "$R" -o /tmp/x.mkv --codec nosuch
expect recv_output_unwritable 2 'cannot write -o /nonexistent/x.mkv: No such file or directory: check the folder' -- "$R" -o /nonexistent/x.mkv
expect recv_gst_no_such_element 2 '--gst "nosuchelement ! fakesink": no element "nosuchelement"' -- "$R" --gst "nosuchelement ! fakesink"
expect send_bad_metrics_port 2 "--metrics 70000: bad port '70000'" -- "$S" "$C" --connect 192.0.2.1 --metrics 70000
expect recv_metrics_no_addr 2 '--metrics :9464: the address before the port is empty' -- "$R" --null --metrics :9464
# A metrics port in use (held here by python3): refused before anything else starts.
python3 -c 'import socket, time; s = socket.socket(); s.bind(("127.0.0.1", 19470)); s.listen(); time.sleep(60)' &
holder=$!
sleep 1
expect recv_metrics_port_in_use 2 '--metrics 19470: cannot listen on 127.0.0.1:19470: the port is in use' -- "$R" --null --metrics 19470
expect send_metrics_port_in_use 2 '--metrics 19470: cannot listen on 127.0.0.1:19470: the port is in use' -- "$S" "$C" --connect 192.0.2.1 --metrics 19470
kill $holder
expect recv_gst_cannot_start 2 '--gst pipeline: filesink0: Could not open file "/nonexistent/x" for writing' -- "$R" --gst "filesink location=/nonexistent/x"

# No RDMA device: only where this machine has none (CI and developers' do not).
if [ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
  expect recv_no_device 2 'no RDMA device on this machine .*Soft-RoCE' -- "$R" --null
  expect send_no_device 2 'no RDMA device on this machine .*Soft-RoCE' -- "$S" "$C" --connect 192.0.2.1
  expect send_named_device_missing 2 'no RDMA device on this machine' -- "$S" "$C" --connect 192.0.2.1 -d mlx5_9
else
  echo "skip no-device checks: this machine has RDMA devices ($(ls /sys/class/infiniband | tr '\n' ' '))"
fi

[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
