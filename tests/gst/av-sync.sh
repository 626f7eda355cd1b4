#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# A/V alignment through GStreamer, measured as tests/cli/av-sync.sh does
# (avsync.mkv, make-clips.sh: a white flash and a 1 kHz beep together at
# 1 s and 2 s), one stream each way:
#   1. rdmasend --realtime into rdmasrc: its pictures (src; their luma,
#      packed by videoconvert: matroskamux writes a buffer's bytes as they
#      are and reads no GstVideoMeta) and its sound (src_1) muxed by
#      matroskamux, at 1 us a tick (its default rounds times to whole ms),
#      into a file;
#   2. the clip demuxed and decoded by GStreamer into rdmasink (sink and
#      sink_1), into rdmarecv -o .nut.
# In each written file the first flash and the first beep lie within 1 ms
# of each other (scripts/av-offset.sh); the source's own offset is printed
# beside. The measuring (ffprobe and ffmpeg over every picture and sample)
# runs on the host after the job (HOST_CHECK): seconds a program in a TCG
# guest.
#   av-sync.sh recv CLIPDIR | av-sync.sh send CLIPDIR | av-sync.sh check CLIPDIR SCRIPTS
#   (env: RDMASEND, RDMARECV, GST_RDMA_CHECK and the GStreamer paths)
set -u
role=$1 clipdir=$2
clip=$clipdir/avsync.mkv
port=18691
out=${RDMABED_OUT:-/tmp}
if [ "$role" = send ]; then
  "$RDMASEND" "$clip" --connect "$RDMABED_SERVER_ADDR:$port" --connect-timeout 60 --realtime -q || exit 1
  exec "$GST_RDMA_CHECK" "filesrc location=$clip ! matroskademux name=d \
    d.video_0 ! queue ! avdec_h264 ! rdmasink name=s host=$RDMABED_SERVER_ADDR port=$port connect-timeout=60000 \
    d.audio_0 ! queue ! s.sink_1"
fi
if [ "$role" = recv ]; then
  status=0
  "$GST_RDMA_CHECK" "rdmasrc port=$port name=s s.src ! queue ! videoconvert ! video/x-raw,format=GRAY8 ! mux.video_0 s.src_1 ! queue ! mux.audio_0 \
    matroskamux name=mux timecodescale=1000 ! filesink location=$out/rdmasrc.mkv" || status=1
  "$RDMARECV" --listen ":$port" -o "$out/rdmasink.nut" -q --idle-timeout 60 || { echo "FAIL: rdmarecv exited $?"; status=1; }
  exit $status
fi
scripts=$3
source=$("$scripts/av-offset.sh" "$clip" | cut -d' ' -f1)
check() { # NAME FILE
  got=$("$scripts/av-offset.sh" "$2") || { echo "FAIL: $1: no flash or beep in $2"; return 1; }
  set -- "$1" $got
  if awk -v d="$2" 'BEGIN { exit !(d >= -1 && d <= 1) }'; then
    echo "ok: $1: A/V offset $2 ms (flash at $3 s, beep at $4 s; the source's: $source ms)"
  else
    echo "FAIL: $1: A/V offset $2 ms (flash at $3 s, beep at $4 s), more than 1 ms (the source's: $source ms)"
    return 1
  fi
}
status=0
check "rdmasend into rdmasrc" "$out/rdmasrc.mkv" || status=1
check "rdmasink into rdmarecv" "$out/rdmasink.nut" || status=1
exit $status
