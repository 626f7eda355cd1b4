#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# fanout-two-paths.sh send|recv|check BINDIR: a fan-out whose receivers
# have one path or two (issue 25: "a fan-out member with one path and one
# with two can share a sender"), on two guests joined by two wires
# (rdmabed --topology two --wires 2). Node 0 runs rdmasend listening on
# both wires for two receivers, lossless, at the source's rate; node 1 runs
# one rdmarecv dialling both wires and one dialling wire A only. Mid-stream
# node 1 cuts its wire B (a partition) once the two-path receiver's path B
# is up, heals it once that receiver names B lost, and the sender ends the
# stream (Ctrl-C) once that receiver names B back. Each step waits for a
# log line, not a clock.
#   check (on the host): each receiver got every frame the sender sent,
#   bit-exact and in order (framemd5 against ffmpeg's decode of the
#   source); the two-path receiver and the sender name B's loss and return.
set -uo pipefail
role=$1 bin=$2
out=$RDMABED_OUT
src='testsrc2=size=320x240:rate=25'
port=18680
fault=$(dirname "$0")/../rdma/fabric-fault.sh
fault_after=$(dirname "$0")/../rdma/fault-after-line.sh
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

case $role in
send)
  log=$out/fo2-send.log
  "$bin/rdmasend" "lavfi:$src" --listen "$RDMABED_SERVER_ADDR:$port" --listen "$RDMABED_SERVER_ADDR_B:$port" \
    --receivers 2 --realtime --frames 100000 --stats-json "$out/fo2-send.json" -q --connect-timeout 120 2>"$log" &
  pid=$!
  # The end: a while after the two-path receiver (node 1) has path B back.
  "$fault_after" "$out/fo2-two.log" "$pid" 'path B \(.*\) back' 2 wait "$RDMABED_DEVICE" ||
    fail "the two-path receiver never had path B back"
  kill -INT "$pid" 2>/dev/null
  wait "$pid"
  status=$?
  [ $status = 130 ] || { fail "rdmasend exited $status, not 130 (interrupted, clean end)"; cat "$log"; }
  ;;
recv)
  modprobe sch_netem || { echo "FAIL: no sch_netem module"; exit 1; }
  "$bin/rdmarecv" --connect "$RDMABED_SERVER_ADDR:$port" --framemd5 "$out/fo2-one.md5" \
    --stats-json "$out/fo2-one.json" -q --connect-timeout 120 2>"$out/fo2-one.log" &
  one=$!
  log=$out/fo2-two.log
  "$bin/rdmarecv" --connect "$RDMABED_SERVER_ADDR:$port" --connect "$RDMABED_SERVER_ADDR_B:$port" \
    --framemd5 "$out/fo2-two.md5" --stats-json "$out/fo2-two.json" -q --connect-timeout 120 2>"$log" &
  two=$!
  after() { "$fault_after" "$log" "$two" "$@" || { fail "$3 $4 after '$1'"; return 1; }; }
  after 'path B \(.*\) up' 1 partition "$RDMABED_DEVICE_B" &&
    after 'path B \(.*\) lost' 1 heal "$RDMABED_DEVICE_B"
  wait "$two" || { fail "the two-path rdmarecv exited $?"; cat "$log"; }
  wait "$one" || { fail "the one-path rdmarecv exited $?"; cat "$out/fo2-one.log"; }
  "$fault" 0 heal "$RDMABED_DEVICE_B" >/dev/null 2>&1 || true
  ;;
check)
  want=$out/fo2-want.md5
  ffmpeg -y -v error -f lavfi -i "$src" -frames:v 3000 -f framemd5 "$want" || exit 1
  sent=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['frames'])" "$out/fo2-send.json") ||
    { fail "no sender stats"; exit 1; }
  for r in one two; do
    [ -s "$out/fo2-$r.json" ] && [ -s "$out/fo2-$r.md5" ] || { fail "$r: no stats or framemd5"; continue; }
    read -r got gaps < <(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['frames'], d['gaps'])" \
      "$out/fo2-$r.json")
    # A receiver joins at the frame the stream is at: it got every frame from its first on.
    first=$(grep -v '^#' "$out/fo2-$r.md5" | head -1 | awk -F, '{print $2 + 0}')
    [ "$gaps" = 0 ] || fail "$r path(s): $gaps frames missing"
    [ $((got + first)) = "$sent" ] ||
      fail "$r path(s): the sender sent $sent frames, this receiver got $got from frame $first on"
    bad=$(awk -F, 'FNR == NR { if ($0 !~ /^#/) want[n++] = $6; next } $0 !~ /^#/ && want[($2 + 0) % n] != $6 { bad++ } END { print bad + 0 }' \
      "$want" "$out/fo2-$r.md5")
    [ "$bad" = 0 ] || fail "$r path(s): $bad frames are not the source's frame of their pts"
    grep -v '^#' "$out/fo2-$r.md5" | awk -F, 'NR > 1 && $2 + 0 <= prev { bad = 1 } { prev = $2 + 0 } END { exit bad }' ||
      fail "$r path(s): frames out of order"
    echo "fanout-two-paths: the receiver with $r path(s): $got frames (from frame $first) bit-exact and in order of the $sent sent"
  done
  # The sender's own count of each receiver, and its paths for the one with two.
  python3 - "$out/fo2-send.json" "$sent" <<'PY' || fail "the sender's report of its receivers"
import json, sys
d, sent = json.load(open(sys.argv[1])), int(sys.argv[2])
rs = d["receivers"]
assert len(rs) == 2, rs
assert all(r["frames"] == sent for r in rs), [(r["peer"], r["frames"]) for r in rs]
assert sorted(len(r.get("paths", [])) for r in rs) == [0, 2], rs
PY
  for line in 'path B \(.*\) lost: ' 'path B \(.*\) back'; do
    grep -Eq "$line" "$out/fo2-two.log" || fail "the two-path receiver's log has no line like '$line'"
    grep -Eq "$line" "$out/fo2-send.log" || fail "the sender's log has no line like '$line'"
  done
  grep -hE 'path [AB] |joined' "$out/fo2-send.log" "$out/fo2-two.log" | sed 's/^/fanout-two-paths: /'
  ;;
*)
  echo "role must be send, recv or check, not '$role'"
  exit 2
  ;;
esac
[ $failures = 0 ]
