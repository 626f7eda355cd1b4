#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# One rdmasend to several rdmarecv (--receivers): the sender listens and
# waits for two lossless receivers, loops a 12-frame clip for 200 frames at
# 20 frames/s; a third receiver with --policy live joins once it streams and
# leaves after 5 frames. The stream lasts 10 s or more so that the third one
# has started and dialled in before it ends (a guest under TCG took more
# than the 3 s that 60 frames last).
#   fanout.sh send BINDIR CLIPDIR   node 0: the sender, then the late joiner
#   fanout.sh recv BINDIR CLIPDIR   node 1: the two receivers it waits for
# Checks: the two get every frame, each lap bit for bit the clip's framemd5;
# the late one gets 5 frames of the clip; the sender names it as it leaves,
# goes on, takes no copy and reports the two that stayed.
set -u
role=$1 bin=$2 clips=$3
port=18660 frames=200
ref=$clips/h264.mp4.ref.md5
out=$RDMABED_OUT
status=0
fail() { echo "FAIL: $*"; status=1; }

# RECEIVER_MD5 NAME: every frame's hash is the clip's, lap after lap, and the
# first lap is ffmpeg's framemd5 line for line (timestamps too).
check_full() {
  md5=$out/$1.md5
  n=$(grep -c '^0,' "$ref")
  got=$(grep '^0,' "$md5" | awk -F', *' '{print $6}')
  want=$(i=0; while [ $i -lt $frames ]; do grep '^0,' "$ref" | awk -F', *' '{print $6}'; i=$((i + n)); done | head -$frames)
  [ "$got" = "$want" ] || { fail "$1: its $(grep -c '^0,' "$md5") hashes are not $frames frames of $n-frame laps of the clip"; return; }
  [ "$(grep '^0,' "$md5" | head -"$n")" = "$(grep '^0,' "$ref")" ] || { fail "$1: the first lap differs from $ref"; return; }
  grep -q '"copies": 0' "$out/$1.json" || fail "$1: copies in its stats JSON"
  echo "ok $1: $frames frames, each lap bit for bit the clip's framemd5"
}

if [ "$role" = recv ]; then
  pids=
  for r in fan-r1 fan-r2; do
    "$bin/rdmarecv" --connect "$RDMABED_SERVER_ADDR:$port" --framemd5 "$out/$r.md5" -q --stats-json "$out/$r.json" \
      2>"$out/$r.log" &
    pids="$pids $!"
  done
  for pid in $pids; do wait "$pid" || fail "an rdmarecv exited $? (see $out/fan-r*.log)"; done
  check_full fan-r1
  check_full fan-r2
  exit $status
fi

log=$out/fan-send.log
"$bin/rdmasend" "$clips/h264.mp4" --listen=:$port --receivers 2 --loop --frames $frames --fps 20 -q \
  --stats-json "$out/fan-send.json" 2>"$log" &
sender=$!
# The late joiner starts once the sender streams (its log says so), not at a guessed time.
i=0
until grep -q 'connected: streaming' "$log"; do
  i=$((i + 1))
  if [ $i -gt 600 ] || ! kill -0 $sender 2>/dev/null; then
    cat "$log"; fail "the sender never started streaming to 2 receivers"; wait $sender; exit 1
  fi
  sleep 0.1
done
"$bin/rdmarecv" --connect "$RDMABED_SERVER_ADDR:$port" --policy live --frames 5 --framemd5 "$out/fan-late.md5" -q \
  --stats-json "$out/fan-late.json" 2>"$out/fan-late.log" || fail "the late rdmarecv exited $? (see $out/fan-late.log)"
wait $sender || fail "rdmasend exited $?"
cat "$log"

got=$(grep -c '^0,' "$out/fan-late.md5" 2>/dev/null)
grep '^0,' "$ref" | awk -F', *' '{print $6}' | sort -u >"$out/clip.hashes"
stray=$(grep '^0,' "$out/fan-late.md5" | awk -F', *' '{print $6}' | sort -u | comm -23 - "$out/clip.hashes")
if [ "${got:-0}" -ne 5 ] || [ -n "$stray" ]; then
  fail "the late receiver got ${got:-0} frames (want 5, all of the clip; stray hashes: $stray)"
else
  echo "ok fan-late: joined while streaming, took 5 frames of the clip, left"
fi
[ "$(grep -c 'receiver .* joined' "$log")" -eq 3 ] || fail "the sender's log does not show 3 receivers joining"
[ "$(grep -Ec 'receiver [^ ]* left after [0-9]+ frames: it has every frame it wants' "$log")" -eq 1 ] || fail "the sender's log does not show the late receiver leaving"
json=$out/fan-send.json
grep -q '"zero_copy_frames": '$frames "$json" && grep -q '"copies": 0' "$json" ||
  fail "the sender copied frames (want $frames zero-copy): $(cat "$json")"
[ "$(grep -c '"peer":' "$json")" -eq 3 ] && [ "$(grep -c '"left": true' "$json")" -eq 1 ] ||
  fail "the stats JSON's receivers array should list the 2 that stayed and the 1 that left: $(cat "$json")"
[ $status -eq 0 ] && echo "ok fan-send: 3 joined, 1 left, $frames frames zero-copy, per-receiver stats in the JSON"
exit $status
