#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# two-paths.sh recv|send: rdmasink -> rdmasrc over two paths between two
# guests joined by two wires (rdmabed --topology two --wires 2): rdmasrc
# listens on both (host, host-b), rdmasink dials both, videotestsrc paced
# at 25 frames/s. Mid-stream, the sender's node cuts wire B,
# heals it once rdmasink names B lost, and cuts wire A once B is back; each
# step waits for rdmasink's warning, not a clock. The receiver's digest of
# every frame (caps, timestamps from the first, flags, bytes) must equal the
# same source's without RDMA: every frame, in order, none missing. Needs GST_RDMA_CHECK
# (the gst-rdma-check binary).
set -uo pipefail
role=$1
out=$RDMABED_OUT
# GTP_SIZE=WxH GTP_RATE=N GTP_FRAMES=N GTP_PATTERN=P (env, both roles): the
# picture, its rate, length and videotestsrc pattern (the 1080p measurement
# in docs/reliability.md: 'smpte horizontal-speed=8', as the bed's CPUs draw
# a 1080p ball at 3 to 5 frames/s).
frames=${GTP_FRAMES:-600} size=${GTP_SIZE:-160x120} rate=${GTP_RATE:-25} pattern=${GTP_PATTERN:-ball}
source="videotestsrc num-buffers=$frames pattern=$pattern ! video/x-raw,format=I420,width=${size%x*},height=${size#*x},framerate=$rate/1"
# The sender's pace: the clock's (identity sync), the buffers untouched.
paced="$source ! identity sync=true"
fault_after=$(dirname "$0")/../rdma/fault-after-line.sh
port=18660
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

case $role in
recv)
  "$GST_RDMA_CHECK" --digest "$out/gtp.rdma" --stats rdma \
    "rdmasrc name=rdma role=listen host=$RDMABED_SERVER_ADDR host-b=$RDMABED_SERVER_ADDR_B port=$port ! fakesink name=digest" \
    >"$out/gtp-recv.log" 2>&1 || { fail "rdmasrc's pipeline exited $?"; cat "$out/gtp-recv.log"; }
  "$GST_RDMA_CHECK" --digest "$out/gtp.ref" "$source ! fakesink name=digest" >/dev/null 2>&1 || fail "the reference pipeline failed"
  n=$(grep -c '^pts' "$out/gtp.ref")
  # pts relative to the first frame's: the digests' pts carry each
  # pipeline's own start (seen 71 ms here, 108 ms there).
  relative() { awk '$1 == "pts" { if (first == "") first = $2; $2 = $2 - first } { print }' "$1"; }
  if diff -u <(relative "$out/gtp.ref") <(relative "$out/gtp.rdma") >"$out/gtp.diff"; then
    gap=$(grep -o 'max-frame-gap-ms=(double)[0-9.]*' "$out/gtp-recv.log" | tail -1 | cut -d')' -f2)
    echo "two-paths (gst): $n frames ($size at $rate/s) through rdmasink -> rdmasrc identical to the pipeline without RDMA, through B cut, B back, A cut; longest gap between two frames ${gap:-?} ms"
  else
    fail "what came over two paths differs from the pipeline without RDMA:"
    head -20 "$out/gtp.diff"
  fi
  grep -E 'path [AB] ' "$out/gtp-recv.log" | sed 's/^/two-paths (gst): rdmasrc: /'
  ;;
send)
  modprobe sch_netem || { echo "FAIL: no sch_netem module"; exit 1; }
  log=$out/gtp-send.log
  gst-launch-1.0 $paced ! rdmasink host="$RDMABED_SERVER_ADDR" host-b="$RDMABED_SERVER_ADDR_B" port=$port \
    connect-timeout=120000 >"$log" 2>&1 &
  pid=$!
  after() { "$fault_after" "$log" "$pid" "$@" || { fail "$3 $4 after '$1'"; return 1; }; }
  after 'path B \(.*\) up' 1 partition "$RDMABED_DEVICE_B" &&
    after 'path B \(.*\) lost' 1 heal "$RDMABED_DEVICE_B" &&
    after 'path B \(.*\) back' 1 partition "$RDMABED_DEVICE" &&
    after 'path A \(.*\) lost' 3 heal "$RDMABED_DEVICE"
  wait "$pid" || { fail "rdmasink's pipeline exited $?"; cat "$log"; }
  grep -E 'path [AB] ' "$log" | sed 's/^/two-paths (gst): rdmasink: /'
  ;;
*)
  echo "role must be recv or send, not '$role'"
  exit 2
  ;;
esac
[ $failures = 0 ]
