#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Measures a file's A/V offset from its first flash and its first beep:
# prints "OFFSET_MS FLASH_S BEEP_S", OFFSET_MS = beep - flash in ms. The
# flash is the first picture whose mean luma (signalstats YAVG) passes 200 (a picture mostly white);
# the beep the end of the first silence (silencedetect at -20 dB, sample
# accurate). The demo's clip and tests/cli/av-sync.sh's carry both at whole
# seconds, together. Exit status 1 if either is missing.
# Usage: av-offset.sh [--every | --nearest] FILE
#   --every: a line per flash and beep, paired in order (the i-th flash
#   with the i-th beep): for a long file with one of each every second
#   (bench/av-drift.sh), what a drift would show.
#   --nearest: each flash paired with the beep nearest to it, so a picture
#   a live stream dropped loses one pair, not the order; prints
#   "MEDIAN_MS PAIRS MIN_MS MAX_MS" (the demo's summary).
set -eu
every=0
if [ "${1:-}" = --every ]; then every=1; shift; fi
if [ "${1:-}" = --nearest ]; then every=2; shift; fi
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
elif [ $every = 2 ]; then
  printf '%s\n---\n%s\n' "$flashes" "$beeps" | awk '
    /^---$/ { beeps = 1; next }
    NF == 0 { next }
    !beeps { f[nf++] = $1; next }
    { b[nb++] = $1 }
    END {
      for (i = 0; i < nf; i++) {
        best = ""
        for (j = 0; j < nb; j++) {
          d = (b[j] - f[i]) * 1000
          if (best == "" || (d < 0 ? -d : d) < (best < 0 ? -best : best)) best = d
        }
        o[i] = best
      }
      for (i = 1; i < nf; i++) for (j = i; j > 0 && o[j - 1] > o[j]; j--) { t = o[j]; o[j] = o[j - 1]; o[j - 1] = t }
      median = nf % 2 ? o[int(nf / 2)] : (o[nf / 2 - 1] + o[nf / 2]) / 2
      printf "%.3f %d %.3f %.3f\n", median, nf, o[0], o[nf - 1]
    }'
else
  beep_list=$(mktemp)
  trap 'rm -f "$beep_list"' EXIT
  echo "$beeps" >"$beep_list"
  echo "$flashes" | paste -d' ' - "$beep_list" | awk 'NF == 2 { printf "%.3f %s %s\n", ($2 - $1) * 1000, $1, $2 }'
fi
