#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Measures a file's A/V offset from its first flash and its first beep:
# prints "OFFSET_MS FLASH_S BEEP_S", OFFSET_MS = beep - flash in ms. The
# flash is the first picture whose mean luma (signalstats YAVG) passes 200 (a picture mostly white);
# the beep the end of the first silence (silencedetect at -20 dB, sample
# accurate). The demo's clip and tests/cli/av-sync.sh's carry both at whole
# seconds, together. Exit status 1 if either is missing.
# Usage: av-offset.sh FILE
set -eu
file=$1
flash=$(ffprobe -v error -f lavfi "movie=$file,signalstats" \
          -show_entries frame=pts_time:frame_tags=lavfi.signalstats.YAVG -of csv=p=0 |
        awk -F, '$2 > 200 { print $1; exit }')
beep=$(ffmpeg -nostdin -hide_banner -i "$file" -map 0:a:0 -af silencedetect=noise=-20dB:d=0.005 -f null - 2>&1 |
       sed -n 's/.*silence_end: \([0-9.]*\).*/\1/p' | head -1)
if [ -z "$flash" ] || [ -z "$beep" ]; then
  echo "av-offset: $file: no flash (${flash:-none}) or no beep (${beep:-none}) found" >&2
  exit 1
fi
awk -v f="$flash" -v b="$beep" 'BEGIN { printf "%.3f %s %s\n", (b - f) * 1000, f, b }'
