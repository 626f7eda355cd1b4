#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# --allow: a listening rdmarecv refuses a peer outside its list at the
# connect request, in one line naming it, and serves a peer inside it.
#   allow-list.sh listen BINDIR ROGUE   node 0
#   allow-list.sh peers  BINDIR ROGUE   node 1
# Port A allows only 192.0.2.0/24 (no peer of the bed): node 1's probe must
# be refused "not allowed". Port B allows 198.18.0.0/16 (the bed's peers):
# node 1's rdmasend must get its frames through.
set -u
role=$1 bin=$2 rogue=$3
out=$RDMABED_OUT
a=18694 b=18695
if [ "$role" = peers ]; then
  "$rogue" --connect "$RDMABED_SERVER_ADDR:$a" --mode probe >"$out/allow-probe.log" 2>&1
  cat "$out/allow-probe.log"
  grep -q "refused: this listener does not take connections from your address" "$out/allow-probe.log" ||
    { echo "FAIL: the peer outside --allow was not refused as such"; exit 1; }
  exec "$bin/rdmasend" 'lavfi:testsrc2=size=64x64:rate=30' --connect "$RDMABED_SERVER_ADDR:$b" --frames 10 -q
fi
"$bin/rdmarecv" --listen ":$a" --allow 192.0.2.0/24 --null -q --connect-timeout 40 2>"$out/allow-a.log" &
outside=$!
"$bin/rdmarecv" --listen ":$b" --allow 192.0.2.1,198.18.0.0/16 --null -q --stats-json "$out/allow-b.json" \
  --connect-timeout 200 2>"$out/allow-b.log"
rc=$?
kill $outside 2>/dev/null; wait $outside 2>/dev/null
cat "$out/allow-a.log" "$out/allow-b.log"
status=0
[ $rc -eq 0 ] && grep -q '"frames": 10' "$out/allow-b.json" ||
  { echo "FAIL: the peer inside --allow was not served"; status=1; }
n=$(grep -cE "rdmarecv: refused [0-9.]+:[0-9]+: its address is not allowed \(allowed: 192.0.2.0/24\)" "$out/allow-a.log")
[ "$n" -eq 1 ] || { echo "FAIL: $n refusal lines for the peer outside --allow (want 1)"; status=1; }
[ $status -eq 0 ] && echo "ok: outside --allow refused in one line, inside served"
exit $status
