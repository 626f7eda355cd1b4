#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The live policy decides before rdmasend copies: a source whose decoder
# cannot write into registered memory (lavfi: no DR1) takes one copy per
# frame, and a frame the live policy would drop must not cost one. A live
# receiver far slower than the source (2 slots, 50 ms per frame in its
# pipeline) makes the sender drop most frames; its stats must show no more
# copies than frames posted, and drops (the live path ran).
#   live-copies.sh recv BINDIR   node 0: the single receiver, then the fan-out sender
#   live-copies.sh send BINDIR   node 1: the single sender, then the fan-out's receiver
# Once with one receiver (FrameSender), once through the fan-out
# (rdmasend --receivers 1, FanoutSender), where the frames posted are the
# receiver's.
set -u
role=$1 bin=$2
out=$RDMABED_OUT
addr=$RDMABED_SERVER_ADDR
frames=200
# --realtime at 60 frames/s against a receiver taking 20: the drops fall
# between posted frames, where the receiver sees them as gaps. Unpaced, the
# whole source can be read before the first credit comes home (a slow
# guest), all drops trail the last posted frame and no gap is visible.
source='lavfi:testsrc2=size=320x240:rate=60'
slow='identity sleep-time=50000 ! fakesink sync=false'
status=0
fail() { echo "FAIL: $*"; status=1; }

# json_number FILE KEY INDENT: the number KEY holds at that indentation
# (rdmasend writes its JSON with 2 spaces a level: 2 top level, 6 in "receivers").
json_number() {
  sed -n "s/^ \{$3\}\"$2\": \([0-9][0-9]*\).*/\1/p" "$1" | head -1
}

# check_copies NAME JSON POSTED: copies <= POSTED, drops > 0.
check_copies() {
  copies=$(json_number "$2" copies 2) drops=$(json_number "$2" drops 2) posted=$3
  if [ -z "$copies" ] || [ -z "$drops" ] || [ -z "$posted" ]; then
    fail "$1: no stats in $2: $(cat "$2" 2>/dev/null)"
  elif [ "$copies" -gt "$posted" ]; then
    fail "$1: $copies copies for $posted frames posted: frames the live policy dropped were copied first"
  elif [ "$drops" -eq 0 ]; then
    fail "$1: no frame dropped: the receiver kept up, so the live path did not run (a slower receiver is needed)"
  else
    echo "ok $1: $frames frames from the source, $posted posted, $copies copies, $drops dropped"
  fi
}

if [ "$role" = recv ]; then
  "$bin/rdmarecv" --listen :18680 --policy live --slots 2 --gst "$slow" -q --stats-json "$out/live-recv.json" \
    2>"$out/live-recv.log" || fail "the live rdmarecv exited $? (see $out/live-recv.log)"
  # The frames the sender dropped unwritten still used their numbers: gaps here.
  gaps=$(json_number "$out/live-recv.json" gaps 2)
  [ "${gaps:-0}" -gt 0 ] && echo "ok single: the receiver counted $gaps gaps" ||
    fail "the receiver counted no gaps: frames dropped before the copy took no number"
  json=$out/live-fan-send.json
  "$bin/rdmasend" "$source" --listen=:18681 --receivers 1 --frames $frames --realtime -q --stats-json "$json" \
    2>"$out/live-fan-send.log" || fail "the fan-out rdmasend exited $? (see $out/live-fan-send.log)"
  cat "$out/live-fan-send.log"
  check_copies fan-out "$json" "$(json_number "$json" frames 6)"
  exit $status
fi

json=$out/live-send.json
"$bin/rdmasend" "$source" --connect "$addr:18680" --frames $frames --realtime -q --stats-json "$json" \
  2>"$out/live-send.log" || fail "rdmasend exited $? (see $out/live-send.log)"
cat "$out/live-send.log"
check_copies single "$json" "$(json_number "$json" frames 2)"
"$bin/rdmarecv" --connect "$addr:18681" --policy live --slots 2 --gst "$slow" -q \
  --stats-json "$out/live-fan-recv.json" 2>"$out/live-fan-recv.log" ||
  fail "the fan-out's rdmarecv exited $? (see $out/live-fan-recv.log)"
exit $status
