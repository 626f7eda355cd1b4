#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# A/V alignment, measured: avsync.mkv (make-clips.sh) has a white flash and
# a 1 kHz beep together at 1 s and 2 s. Sent live (--realtime) as a
# programme, its picture and its sound two flows, and written by rdmarecv
# -o (.nut: each stream in its own time base, so the samples' times are
# exact; .mkv rounds them to whole milliseconds), the file's first flash
# and first beep must lie within 1 ms of each other (scripts/av-offset.sh);
# the source's own offset is printed beside. The measuring (ffprobe and
# ffmpeg over every picture and sample) runs on the host after the job
# (HOST_CHECK): seconds a program in a TCG guest.
#   av-sync.sh recv BINDIR CLIPDIR | av-sync.sh send BINDIR CLIPDIR | av-sync.sh check CLIPDIR SCRIPTS
set -u
role=$1
port=18690
if [ "$role" = check ]; then
  clipdir=$2 scripts=$3
  got=$("$scripts/av-offset.sh" "$RDMABED_OUT/avsync.got.nut") || { echo "FAIL: no flash or beep in the written file"; exit 1; }
  source=$("$scripts/av-offset.sh" "$clipdir/avsync.mkv")
  set -- $got
  if awk -v d="$1" 'BEGIN { exit !(d >= -1 && d <= 1) }'; then
    echo "ok: A/V offset at the receiver $1 ms (flash at $2 s, beep at $3 s; the source's: ${source%% *} ms)"
  else
    echo "FAIL: A/V offset at the receiver $1 ms (flash at $2 s, beep at $3 s), more than 1 ms (the source's: ${source%% *} ms)"
    exit 1
  fi
  exit 0
fi
bindir=$2 clipdir=$3
if [ "$role" = send ]; then
  exec "$bindir/rdmasend" "$clipdir/avsync.mkv" --connect "$RDMABED_SERVER_ADDR:$port" --realtime -q
fi
"$bindir/rdmarecv" --listen ":$port" -o "$RDMABED_OUT/avsync.got.nut" -q --idle-timeout 60 ||
  { echo "FAIL: rdmarecv exited $?"; exit 1; }
