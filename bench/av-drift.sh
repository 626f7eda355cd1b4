#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A/V drift over a long live stream: a clip with a white flash and a 1 kHz
# beep together at every whole second (as tests/cli/av-sync.sh's, but
# MINUTES long), sent live through the CLIs (rdmasend --realtime, the
# picture and the sound two flows of one stream) and written by rdmarecv -o
# (.nut: every sample's time exact). Every flash and beep of the written
# file is paired (scripts/av-offset.sh --every); the report gives the
# offset at the start and the end, its range, and the source's own (the
# detectors' error: a beep's first samples lie under -20 dB). Drift is the
# change over the stream. Not a test: it asserts nothing.
#
# Usage: bench/av-drift.sh [--minutes N] [--topology one|two] [--out DIR]
#   --minutes   how long the stream is (default 10)
#   --topology  one guest or two joined by a wire (default one)
#   --out       folder for the clip, the written file and the report
#               (default BUILD/bench-av-drift)
# The written file is raw 160x120 video and PCM: about 45 MB a minute.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
minutes=10 topology=one out=''
while (($#)); do
  case $1 in
    --minutes) minutes=${2:?}; shift 2 ;;
    --topology) topology=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    -h | --help) awk 'NR > 1 && /^# SPDX-/ { next } NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "av-drift: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $minutes =~ ^[1-9][0-9]*$ ]] || { echo "av-drift: --minutes takes a whole number, 1 or more" >&2; exit 2; }
[[ $topology =~ ^(one|two)$ ]] || { echo "av-drift: --topology must be one or two" >&2; exit 2; }
# RDMASTREAM_BUILD_DIR may be absolute or relative to the project.
source scripts/build-dir.sh
build=$(rdmastream_build_dir "$root")
for p in "$build/sender/rdmasend" "$build/receiver/rdmarecv"; do
  [[ -x $p ]] || { echo "av-drift: no $p: build first (scripts/build.sh)" >&2; exit 2; }
done
out=${out:-$build/bench-av-drift}
mkdir -p "$out"
seconds=$((minutes * 60))

clip=$out/drift-${minutes}min.mkv
if [[ ! -s $clip ]]; then
  echo "av-drift: making a ${minutes}-minute clip with a flash and a beep every second ($clip)"
  ffmpeg -nostdin -v error -y \
    -f lavfi -i "color=c=black:s=160x120:r=25:d=$seconds,drawbox=x=0:y=0:w=iw:h=ih:color=white:t=fill:enable='eq(mod(n\,25)\,0)*gte(n\,25)'" \
    -f lavfi -i "aevalsrc='if(gte(t\,0.5)*lt(mod(t\,1)\,0.05)\,0.8*sin(2*PI*1000*t)\,0)':s=48000:d=$seconds" \
    -c:v libx264 -preset ultrafast -pix_fmt yuv420p -c:a pcm_s16le -f matroska "$clip.part"
  mv "$clip.part" "$clip"
fi
got=$out/drift.got.nut
rm -f "$got"
echo "av-drift: streaming it live for $minutes minute(s), topology $topology"
scripts/softroce/rdmabed --topology "$topology" --timeout $((seconds + 300)) --out "$out" \
  --node0 "$build/receiver/rdmarecv --listen :18690 -o \$RDMABED_OUT/drift.got.nut --idle-timeout 60 --stats-json \$RDMABED_OUT/drift.recv.json" \
  --node1 "$build/sender/rdmasend $clip --connect \$RDMABED_SERVER_ADDR:18690 --realtime --connect-timeout 60 -q"

echo "av-drift: measuring every flash and beep"
scripts/av-offset.sh --every "$clip" >"$out/source.offsets"
scripts/av-offset.sh --every "$got" >"$out/got.offsets"
summary() { # OFFSETS: count, first, last, min, max (ms)
  awk '{ if (NR == 1) { first = $1; lo = $1; hi = $1 } if ($1 < lo) lo = $1; if ($1 > hi) hi = $1; last = $1 }
       END { printf "%d pairs, first %.3f ms, last %.3f ms, range %.3f to %.3f ms", NR, first, last, lo, hi }' "$1"
}
# The receiver's offset less the source's, event by event: what the trip added.
paste -d' ' "$out/got.offsets" "$out/source.offsets" | awk 'NF == 6 { printf "%.3f %s\n", $1 - $4, $2 }' >"$out/added.offsets"
{
  echo "# A/V drift: $minutes minute(s) live, topology $topology ($(date -u +%Y-%m-%dT%H:%MZ))"
  echo "source:   $(summary "$out/source.offsets")"
  echo "received: $(summary "$out/got.offsets")"
  echo "added by the trip (received - source, per event): $(summary "$out/added.offsets")"
} | tee "$out/report.txt"
