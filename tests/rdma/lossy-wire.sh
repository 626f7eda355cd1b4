#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Lossy and flapping wires between two guests (tc netem on both ends' eth0,
# so data and acknowledgements both suffer). Node 0 receives, node 1 sends;
# each case on its own port, netem set by each node before its side of the
# case:
#   no netem (the baseline), loss 0.1 %, 1 %, 5 %, reordering, duplication: a lossless stream stays
#       bit-exact (framemd5 equal to ffmpeg's own decode) and its rate is
#       written to RDMABED_OUT/lossy-wire-rates.txt;
#   loss 5 %, live policy: the stream stays live (both ends exit 0, the
#       frames that arrive are intact, the drops are counted);
#   the link down for half a second, with no frame in flight: the stream
#       resumes intact, or (rxe) ends with the sender naming its link.
#   lossy-wire.sh recv|send BINDIR
set -u
side=$1 bin=$2
export PATH="$PATH:/usr/sbin:/sbin"
out=$RDMABED_OUT
at=$RDMABED_SERVER_ADDR
src='testsrc2=size=160x120:rate=25'
frames=60
dev=eth0
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

[ "$RDMABED_TOPOLOGY" = two ] || { echo "lossy-wire.sh needs --topology two (a wire to spoil)"; exit 2; }
modprobe sch_netem || { echo "FAIL: no sch_netem module"; exit 1; }

# Our end of the wire: NETEM_ARGS or none.
wire() { # NETEM_ARGS...
  tc qdisc del dev $dev root 2>/dev/null
  [ $# -eq 0 ] || tc qdisc add dev $dev root netem "$@" || { echo "FAIL: tc netem $*"; exit 1; }
}

# name port netem-args (the cases, in order; both nodes read the same list)
cases='clean 18800
loss-0.1 18801 loss 0.1%
loss-1 18802 loss 1%
loss-5 18803 loss 5%
reorder 18804 delay 2ms reorder 25% 50%
duplicate 18805 duplicate 5%'

want=$out/lossy-want.md5
if [ "$side" = recv ]; then
  ffmpeg -v error -f lavfi -i "$src" -frames:v $frames -f framemd5 "$want" || exit 1
  : >"$out/lossy-wire-rates.txt"
fi
sums() { grep -v '^#' "$1" | awk -F, '{print $6}'; }

while read -r name port args; do
  # shellcheck disable=SC2086 # the netem arguments are words
  wire $args
  if [ "$side" = send ]; then
    "$bin/rdmasend" "lavfi:$src" --connect "$at:$port" --frames $frames -q --connect-timeout 120 \
      2>"$out/lossy-$name-send.log" || { fail "$name: rdmasend exited $?"; cat "$out/lossy-$name-send.log"; }
    continue
  fi
  "$bin/rdmarecv" --listen ":$port" --framemd5 "$out/lossy-$name.md5" --stats-json "$out/lossy-$name.json" -q \
    --connect-timeout 120 2>"$out/lossy-$name-recv.log" || { fail "$name: rdmarecv exited $?"; cat "$out/lossy-$name-recv.log"; }
  if [ "$(sums "$out/lossy-$name.md5")" = "$(sums "$want")" ]; then
    echo "ok $name ($args): $frames frames bit-exact"
  else
    fail "$name ($args): the frames differ from ffmpeg's ($(sums "$out/lossy-$name.md5" | wc -l) of $frames arrived)"
  fi
  rate=$(sed -n 's/.*"fps": \([0-9.]*\).*/\1/p' "$out/lossy-$name.json" | head -1)
  echo "$name ($args): $frames frames of 160x120 I420, $rate frames/s" >>"$out/lossy-wire-rates.txt"
done <<EOF
$cases
EOF

# Live under 5 % loss: the frames that arrive are intact, and the stream ends.
wire loss 5%
if [ "$side" = send ]; then
  "$bin/rdmasend" "lavfi:$src" --connect "$at:18806" --frames $frames --policy live --fps 25 -q \
    --connect-timeout 120 2>"$out/lossy-live-send.log" || { fail "live: rdmasend exited $?"; cat "$out/lossy-live-send.log"; }
else
  "$bin/rdmarecv" --listen :18806 --policy live --framemd5 "$out/lossy-live.md5" -q --connect-timeout 120 \
    2>"$out/lossy-live-recv.log" || { fail "live: rdmarecv exited $?"; cat "$out/lossy-live-recv.log"; }
  # Each frame that arrived is the source's frame of the same timestamp.
  grep -v '^#' "$want" | awk -F, '{print $2 $6}' >"$out/lossy-want-pts"
  bad=$(grep -v '^#' "$out/lossy-live.md5" | awk -F, '{print $2 $6}' | grep -cvxFf "$out/lossy-want-pts")
  got=$(grep -vc '^#' "$out/lossy-live.md5")
  if [ "$got" -ge 1 ] && [ "$bad" -eq 0 ]; then echo "ok live (loss 5%): $got of $frames frames arrived, each intact"
  else fail "live (loss 5%): $got frames arrived, $bad of them differ from the source's"; fi
fi
wire

# The link down for half a second between two frames (one a second), on
# the sender's side: within the QP's retries (about 1.9 s), so on a NIC the
# stream resumes intact. rxe fails a QP at once when it sends while its
# netdev is down ("local QP operation error"), and a frame or keepalive
# goes out every second: then the stream must end with the sender naming
# the port and its link, and the receiver ending too. (Last: the guests'
# 6.1 rxe may take no new connection after a flap.)
if [ "$side" = send ]; then
  "$bin/rdmasend" "lavfi:$src" --connect "$at:18807" --frames 8 --fps 1 --idle-timeout 20 \
    --connect-timeout 120 2>"$out/lossy-flap-send.log" &
  pid=$!
  until grep -q "rdmasend: connected" "$out/lossy-flap-send.log" 2>/dev/null; do
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  sleep 2.5 # between the third frame and the fourth
  ip link set $dev down && sleep 0.5 && ip link set $dev up
  wait $pid
  rc=$?
  if [ $rc -eq 0 ]; then echo "ok flap: rdmasend carried on after the link came back"
  elif grep -q "port 1 of rxe0 (link $dev)" "$out/lossy-flap-send.log"; then
    echo "ok flap: rdmasend ended naming the link: $(grep -m1 "link $dev" "$out/lossy-flap-send.log")"
  else fail "flap: rdmasend exited $rc without naming the link:"; cat "$out/lossy-flap-send.log"; fi
else
  "$bin/rdmarecv" --listen :18807 --framemd5 "$out/lossy-flap.md5" --idle-timeout 5 -q --connect-timeout 120 \
    2>"$out/lossy-flap-recv.log"
  rc=$?
  if [ $rc -eq 0 ] && [ "$(sums "$out/lossy-flap.md5")" = "$(sums "$want" | head -n 8)" ]; then
    echo "ok flap: the stream resumed after the link came back, 8 frames intact"
  elif [ $rc -ne 0 ] && grep -q "port 1 of rxe0 (link $dev)" "$out/lossy-flap-send.log"; then
    echo "ok flap: the stream ended, the sender naming its link: $(grep -m1 -o "port 1 of rxe0 (link $dev).*" "$out/lossy-flap-send.log")"
  else
    fail "flap: rdmarecv exited $rc with $(sums "$out/lossy-flap.md5" | wc -l) frames; neither resumed nor named:"
    cat "$out/lossy-flap-recv.log" "$out/lossy-flap-send.log"
  fi
fi
[ "$side" = recv ] && cat "$out/lossy-wire-rates.txt"
[ "$failures" -eq 0 ] || { echo "$failures check(s) failed on the $side side"; exit 1; }
echo "all lossy-wire checks passed on the $side side"
