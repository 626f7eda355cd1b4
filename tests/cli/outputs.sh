#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# rdmarecv's outputs over a real connection, one clip each, each on its own
# port: -o .y4m and -o .mkv (ffprobe's frame count and the written file's
# framemd5 equal ffmpeg's decode of the source), --gst with zero copies in
# the stats (GstSink counts the copies it makes: 0 means none), --gst into
# a pipeline that holds every frame (copies > 0, every frame intact, no
# stall), --policy live on the receiver, and a truncated input (the
# receiver gets end of stream after the frames before the cut), and per-frame
# captions through -o with an encoder that writes them (libx264: every
# frame's caption bytes read back equal the source's), and the clock anchor
# rdmasend sends with its first frame. The written files are read back
# (ffmpeg, side_data_clip) on the host after the job (HOST_CHECK): seconds
# a program in a TCG guest.
#   outputs.sh recv|send|check BINDIR CLIPDIR SIDE_DATA_CLIP
set -u
role=$1 bin=$2 clips=$3 side_data_clip=$4
out=${RDMABED_OUT:-/tmp}
clip=$clips/h264.mp4
ref=$clips/h264.mp4.ref.md5
n=$(grep -c '^0,' "$ref")
status=0
fail() { echo "FAIL $*"; status=1; }
hashes() { grep '^0,' "$1" | awk -F', *' '{print $3, $6}'; } # pts and hash

if [ "$role" = check ]; then
  for ext in y4m mkv; do
    # The framemd5 lines are the frames: their count is the file's.
    ffmpeg -nostdin -v error -y -i "$out/got.$ext" -map 0:v:0 -f framemd5 "$out/got.$ext.md5"
    frames=$(grep -c '^0,' "$out/got.$ext.md5")
    [ "$frames" = "$n" ] || fail "-o got.$ext: it holds $frames frames, the clip $n"
    if [ "$(hashes "$out/got.$ext.md5")" = "$(hashes "$ref")" ]; then
      echo "ok -o got.$ext: $frames frames, framemd5 (pts and hash) equal to ffmpeg's decode of the source"
    else
      fail "-o got.$ext: framemd5 differs from ffmpeg's decode of the source:"; diff "$out/got.$ext.md5" "$ref" | head
    fi
  done
  # Captions: libx264 writes each frame's as SEI again; read back, frame by
  # frame, they are the source's. (Without side data on the wire: "cc=-".)
  "$side_data_clip" dump "$out/captions.mkv" > "$out/captions.side"
  if [ -s "$out/captions.side" ] && cmp -s "$out/captions.side" "$clips/captions.mkv.side"; then
    echo "ok captions: $(wc -l < "$out/captions.side") frames, each with the source's caption bytes"
  else
    fail "captions: the frames' side data differ from the source's:"; diff "$out/captions.side" "$clips/captions.mkv.side" | head
  fi
  exit $status
fi

if [ "$role" = send ]; then
  for port in 18661 18662 18663 18666 18664; do
    "$bin/rdmasend" "$clip" --connect "$RDMABED_SERVER_ADDR:$port" -q || fail "rdmasend to :$port exited $?"
  done
  "$bin/rdmasend" "$clips/captions.mkv" --connect "$RDMABED_SERVER_ADDR:18667" -q || fail "rdmasend captions exited $?"
  "$bin/rdmasend" "$clips/truncated.ts" --connect "$RDMABED_SERVER_ADDR:18665" -q 2>"$out/truncated.err"
  rc=$?
  # FFmpeg's TS demuxer reads a cut-off file as a short one (ffmpeg itself
  # exits 0): rdmasend may end normally after what it decoded, or exit 1
  # naming the error; it must not hang or crash.
  [ "$rc" -le 1 ] || fail "truncated input: rdmasend exited $rc"
  echo "truncated input: rdmasend exited $rc: $(tail -1 "$out/truncated.err")"
  exit $status
fi

R="$bin/rdmarecv -q --idle-timeout 60"
for ext in y4m mkv; do
  port=$([ $ext = y4m ] && echo 18661 || echo 18662)
  $R --listen ":$port" -o "$out/got.$ext" || fail "-o got.$ext: rdmarecv exited $?" # read back by `check`
done

$R --listen :18663 --gst "fakesink" --stats-json "$out/gst.json" || fail "--gst fakesink: rdmarecv exited $?"
if grep -q "\"frames\": $n," "$out/gst.json" && grep -q '"copies": 0,' "$out/gst.json"; then
  echo "ok --gst fakesink: $n frames, no copy"
else
  fail "--gst fakesink: stats are not $n frames and 0 copies:"; cat "$out/gst.json"
fi

# A queue that lets nothing through before it holds the whole clip: with 8
# slots and --copy-threshold 2, frames 7 on are copied (their slots handed
# back at once) instead of the sender waiting for a slot forever.
$R --listen :18666 --gst "queue max-size-buffers=100 max-size-bytes=0 max-size-time=0 min-threshold-buffers=$n ! fakesink" \
  --framemd5 "$out/held.md5" --stats-json "$out/held.json" || fail "--gst holding queue: rdmarecv exited $?"
copies=$(grep -o '"copies": [0-9]*' "$out/held.json" | head -1 | grep -o '[0-9]*$')
if grep -q "\"frames\": $n," "$out/held.json" && [ "${copies:-0}" -gt 0 ] &&
   [ "$(hashes "$out/held.md5")" = "$(hashes "$ref")" ]; then
  echo "ok --gst holding queue: $n frames, $copies copied, framemd5 equal to ffmpeg's decode of the source"
else
  fail "--gst holding queue: not $n intact frames with copies > 0:"; cat "$out/held.json"
fi

$R --listen :18664 --policy live --framemd5 "$out/live.md5" || fail "--policy live: rdmarecv exited $?"
got=$(grep -c '^0,' "$out/live.md5")
missing=$(grep '^0,' "$out/live.md5" | awk -F', *' '{print $6}' | grep -cvxF -f "$(awk -F', *' '/^0,/{print $6}' "$ref" > "$out/ref.hashes"; echo "$out/ref.hashes")")
if [ "$got" -ge 1 ] && [ "$missing" -eq 0 ]; then
  echo "ok --policy live: $got of $n frames, each one of the clip's"
else
  fail "--policy live: $got frames, $missing not from the clip"
fi

# Captions through libx264 (read back by `check`).
$R --listen :18667 -o "$out/captions.mkv" --codec libx264 2>"$out/captions.err" || fail "captions: rdmarecv exited $?"

# The clock anchor: rdmasend says where pts 0 is as its first frame goes
# (one guest: one clock, so within a minute of now).
anchor=$(sed -n "s/^rdmarecv: the sender's pts 0 is \([0-9T:.-]*\) UTC (realtime.*/\1/p" "$out/captions.err" | head -1)
if [ -n "$anchor" ] && [ $(( $(date +%s) - $(date -d "${anchor}Z" +%s) )) -lt 60 ]; then
  echo "ok clock anchor: the sender's pts 0 is $anchor UTC"
else
  fail "clock anchor: rdmarecv named no recent pts 0 instant:"; cat "$out/captions.err"
fi

$R --listen :18665 --framemd5 "$out/truncated.md5" || fail "truncated input: rdmarecv exited $? instead of ending normally"
got=$(grep -c '^0,' "$out/truncated.md5")
if [ "$got" -ge 1 ] && [ "$got" -lt 20 ]; then
  echo "ok truncated input: the receiver got end of stream after $got of the full file's 20 frames"
else
  fail "truncated input: $got frames arrived, expected 1..19"
fi
exit $status
