#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Measures a file's A/V offset from its first flash and its first beep:
# prints "OFFSET_MS FLASH_S BEEP_S", OFFSET_MS = beep - flash in ms. The
# flash is the first picture whose mean luma (signalstats YAVG) passes 200 (a picture mostly white);
# the beep the end of the first silence (silencedetect at -20 dB, sample
# accurate). The demo's clip and tests/cli/av-sync.sh's carry both at whole
# seconds, together. Exit status 1 if either is missing.
# Usage: av-offset.sh [--every] FILE
#   --every: a line per flash and beep, paired in order (the i-th flash
#   with the i-th beep): for a long file with one of each every second
#   (bench/av-drift.sh), what a drift would show.
set -eu
every=0
if [ "${1:-}" = --every ]; then every=1; shift; fi
file=$1
# Every picture's luma; a flash is a picture past 200 after one that was not.
flashes=$(ffprobe -v error -f lavfi "movie=$file,signalstats" \
          -show_entries frame=pts_time:frame_tags=lavfi.signalstats.YAVG -of csv=p=0 |
        awk -F, '$2 > 200 && !lit { print $1 } { lit = ($2 > 200) }')
beeps=$(ffmpeg -nostdin -hide_banner -i "$file" -map 0:a:0 -af silencedetect=noise=-20dB:d=0.005 -f null - 2>&1 |
       sed -n 's/.*silence_end: \([0-9.]*\).*/\1/p')
flash=$(echo "$flashes" | head -1)
beep=$(echo "$beeps" | head -1)
if [ -z "$flash" ] || [ -z "$beep" ]; then
  echo "av-offset: $file: no flash (${flash:-none}) or no beep (${beep:-none}) found" >&2
  exit 1
fi
if [ $every = 0 ]; then
  awk -v f="$flash" -v b="$beep" 'BEGIN { printf "%.3f %s %s\n", (b - f) * 1000, f, b }'
else
  beep_list=$(mktemp)
  trap 'rm -f "$beep_list"' EXIT
  echo "$beeps" >"$beep_list"
  echo "$flashes" | paste -d' ' - "$beep_list" | awk 'NF == 2 { printf "%.3f %s %s\n", ($2 - $1) * 1000, $1, $2 }'
fi
