#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The other direction and the looping sender: rdmasend listens, rdmarecv
# connects; the sender loops a 12-frame clip for 30 frames with --fps
# pacing. The receiver's hashes must be the clip's, lap after lap, and its
# timestamps must keep rising across laps.
#   loop-reverse.sh send|recv BINDIR CLIPDIR
set -u
role=$1 bin=$2 clips=$3
if [ "$role" = send ]; then
  exec "$bin/rdmasend" "$clips/h264.mp4" --listen=:18650 --loop --frames 30 --fps 200 -q \
    --stats-json "$RDMABED_OUT/loop-send.json"
fi
out=$RDMABED_OUT/loop.md5
"$bin/rdmarecv" --connect "$RDMABED_SERVER_ADDR:18650" --framemd5 "$out" -q --stats-json "$RDMABED_OUT/loop-recv.json" || exit 1
ref=$clips/h264.mp4.ref.md5
n=$(grep -c '^0,' "$ref")
got=$(grep '^0,' "$out" | awk -F', *' '{print $6}')
want=$(for lap in 1 2 3; do grep '^0,' "$ref" | awk -F', *' '{print $6}'; done | head -30)
[ "$got" = "$want" ] || { echo "FAIL: the looped hashes differ from $n-frame laps of the clip"; exit 1; }
grep '^0,' "$out" | awk -F', *' 'NR > 1 && $3 <= last { print "FAIL: pts " $3 " after " last; bad = 1 } { last = $3 } END { exit bad }' || exit 1
grep -q '"frames": 30' "$RDMABED_OUT/loop-recv.json" || { echo "FAIL: stats JSON lacks 30 frames"; cat "$RDMABED_OUT/loop-recv.json"; exit 1; }
echo "ok: 30 frames over $n-frame laps, timestamps rising, stats JSON written"
