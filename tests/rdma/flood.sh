#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A flood of half-open connect requests does not lock a genuine peer out.
# One guest (topology one): a listener KIND starts; rdma-rogue-peer sends it
# 64 connect requests with good hellos that it never completes, holding them
# (up to a minute); then a genuine peer dials with a dial patience of 5 s
# (--connect-timeout 5) and must get in and deliver its frames. With
# handshakes served one at a time it waited out the flood and gave up.
#   flood.sh KIND BINDIR ROGUE [same]
# KIND: rdmarecv | rdmasrc | rdmasend (rdmasend --listen) | fanout
# (rdmasend --listen --receivers 1). The flood comes from a second address
# of the guest (198.18.0.3), the genuine peer from the first; `same`: both
# from the first, where the per-address bound makes room for the newcomer.
set -u
kind=$1 bin=$2 rogue=$3 from=${4:-other}
out=$RDMABED_OUT/flood-$kind-$from
mkdir -p "$out"
port=18730
addr=$RDMABED_SERVER_ADDR
src='testsrc2=size=64x64:rate=30'
frames=30
fail() { echo "FAIL: $*"; exit 1; }

# Waits (at most $2 s) until file $1 has a line matching $3, or process $4 ends.
wait_line() {
  local end=$((SECONDS + $2))
  until grep -qE "$3" "$1" 2>/dev/null; do
    ((SECONDS < end)) || return 1
    [ -z "${4:-}" ] || kill -0 "$4" 2>/dev/null || return 1
    sleep 0.1
  done
}

flood_from=()
if [ "$from" = other ]; then
  # A second address on the netdev that carries the listener's (rdma0 in a
  # guest, rdmabed0 on a host): the RDMA device adds its GID, so it can be
  # a connect request's source. Root is needed (the bed's guests are).
  dev=$(ip -o -4 addr show | awk -v a="$addr" 'index($4, a "/") == 1 {print $2; exit}')
  [ -n "$dev" ] || fail "no netdev carries $addr"
  ip addr add 198.18.0.3/32 dev "$dev" 2>/dev/null
  ip -o -4 addr show dev "$dev" | grep -q ' 198\.18\.0\.3/' ||
    fail "could not add 198.18.0.3 to $dev (needs root): the flood needs a second source address"
  flood_from=(--from 198.18.0.3)
fi

case $kind in
  rdmarecv)
    "$bin/rdmarecv" --listen ":$port" --frames $frames --null -q 2>"$out/listener.log" &
    ready='listening on' as=sender ;;
  rdmasrc)
    # Its INFO line says when it listens; each refusal is an element warning.
    GST_DEBUG=rdmasrc:4 GST_DEBUG_NO_COLOR=1 gst-launch-1.0 rdmasrc port=$port ! fakesink >"$out/listener.log" 2>&1 &
    ready='listening on' as=sender ;;
  rdmasend)
    "$bin/rdmasend" "lavfi:$src" --listen ":$port" --frames $frames -q 2>"$out/listener.log" &
    ready='listening on' as=receiver ;;
  fanout)
    "$bin/rdmasend" "lavfi:$src" --listen ":$port" --receivers 1 --frames $frames -q 2>"$out/listener.log" &
    ready='listening on|waiting for' as=receiver ;;
  *) fail "unknown kind $kind" ;;
esac
listener=$!
trap 'kill $listener $flooder 2>/dev/null' EXIT
flooder=
wait_line "$out/listener.log" 60 "$ready" $listener || { cat "$out/listener.log"; fail "the listener did not start"; }

"$rogue" --connect "$addr:$port" --mode flood --count 64 "${flood_from[@]}" --as $as --hold 60 >"$out/flood.log" 2>&1 &
flooder=$!
wait_line "$out/flood.log" 60 'requests sent' $flooder || { cat "$out/flood.log"; fail "the flood did not go out"; }

# The genuine peer, while the flood is held: it must be in within 5 s of
# dialling (its own start-up, FFmpeg's included, is not counted).
if [ $as = sender ]; then
  "$bin/rdmasend" "lavfi:$src" --connect "$addr:$port" --frames $frames --connect-timeout 5 -q 2>"$out/genuine.log"
else
  "$bin/rdmarecv" --connect "$addr:$port" --frames $frames --null --connect-timeout 5 -q 2>"$out/genuine.log"
fi
rc=$?
cat "$out/genuine.log"
[ $rc -eq 0 ] || fail "the genuine peer did not get through the flood (exit $rc)"
grep -qE "done: $frames frames" "$out/genuine.log" || fail "the genuine peer did not deliver its $frames frames"

kill $flooder 2>/dev/null
# The listener ends with the stream (rdmasrc at the sender's end of stream).
for _ in $(seq 300); do kill -0 $listener 2>/dev/null || break; sleep 0.1; done
kill -0 $listener 2>/dev/null && fail "the listener did not end with the stream"
wait $listener
lrc=$?
grep -v 'dropped for a newer request' "$out/listener.log"
echo "($(grep -c 'dropped for a newer request' "$out/listener.log") lines 'dropped for a newer request' left out)"
[ $lrc -eq 0 ] || fail "the listener exited $lrc"
# The flood was bounded and said so, one line per request it cost.
flood_addr=$([ "$from" = other ] && echo 198.18.0.3 || echo "$addr")
grep -qE "refused $flood_addr:[0-9]+: dropped for a newer request from its address" "$out/listener.log" ||
  fail "no flood request was dropped for a newer one (the per-address bound)"
if [ "$from" = other ]; then
  ! grep -qE "refused $addr:[0-9]+" "$out/listener.log" || fail "the genuine peer's address was refused"
fi
echo "ok: the genuine $as got through a flood of 64 half-open requests from ${flood_addr}"
