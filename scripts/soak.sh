#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# soak.sh: one stream for a long time, with everything a long run meets,
# in the Soft-RoCE bed (or on a host's RDMA device: rdmabed picks):
#   - a fan-out rdmasend looping a clip whose picture size changes every
#     minute (320x240 for a minute, 160x120 for the next), at 20 frames/s;
#   - a lossless receiver for the whole run: every frame bit-exact;
#   - a live receiver, SIGSTOPped for 3 s and continued every minute;
#   - receivers joining, taking 100 frames and leaving, one after another;
#   - every 10 s, each long-lived process's RSS, open fds, memory regions and
#     pinned memory, and at the end their slope from the second minute on
#     (goal: flat).
# Usage: scripts/soak.sh [--minutes N] [--topology one|two|both] [--out DIR]
#   --minutes N   how long the stream runs (default 60; the test command runs 2)
#   --topology T  one guest, two guests joined by a wire, or both in turn (default both)
#   --out DIR     where the logs, samples and report go (default: a new folder under /tmp)
# Exit 0 when every frame was intact, every process ended well and no
# resource grew; the report (DIR/soak-report.txt) has the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=60 topology=both out=
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes=$2; shift 2 ;;
    --topology) topology=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; /^# SPDX-/d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "soak.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$minutes" in ''|*[!0-9]*|0) echo "soak.sh: --minutes takes a whole number of minutes, 1 or more" >&2; exit 2 ;; esac
case "$topology" in one|two) topologies=$topology ;; both) topologies="one two" ;;
  *) echo "soak.sh: --topology is one, two or both" >&2; exit 2 ;; esac
# shellcheck source=build-dir.sh
source scripts/build-dir.sh
build=$(rdmastream_build_dir "$PWD")
bin=$build/tests/cli/bin
[ -x "$bin/rdmasend" ] && [ -x "$bin/rdmarecv" ] ||
  { echo "soak.sh: no rdmasend/rdmarecv in $bin: build first (scripts/build.sh)" >&2; exit 2; }
out=${out:-$(mktemp -d /tmp/rdmastream-soak.XXXXXX)}
case "$out" in /*) ;; *) out=$PWD/$out ;; esac
mkdir -p "$out"

# The clip: a minute of each size, 20 frames/s, H.264 back to back (the
# decoder sees the size change; rdmasend announces a new format), in
# MPEG-TS: --loop seeks back to the start, which a raw .h264 cannot.
clip=$out/soak.ts
if [ ! -s "$clip" ]; then
  ff() { ffmpeg -nostdin -v error -y "$@"; }
  ff -f lavfi -i testsrc2=size=320x240:rate=20 -frames:v 1200 -c:v libx264 -preset ultrafast -pix_fmt yuv420p \
    -bsf:v h264_mp4toannexb "$out/soak-a.h264"
  ff -f lavfi -i testsrc2=size=160x120:rate=20 -frames:v 1200 -c:v libx264 -preset ultrafast -pix_fmt yuv420p \
    -bsf:v h264_mp4toannexb "$out/soak-b.h264"
  cat "$out/soak-a.h264" "$out/soak-b.h264" >"$out/soak.h264"
  ff -i "$out/soak.h264" -c copy -f mpegts "$clip"
  # Each frame's hash in order (ffmpeg would scale the second half without -autoscale 0).
  ffmpeg -nostdin -v error -i "$clip" -map 0:v:0 -autoscale 0 -f framemd5 - | grep -v '^#' |
    awk -F', *' '{print $6}' >"$clip.hashes"
fi

status=0
for topo in $topologies; do
  echo "soak.sh: $minutes minute(s), topology $topo, logs in $out/$topo"
  rm -rf "${out:?}/$topo" && mkdir -p "$out/$topo" # the samples are appended: start empty
  node="$PWD/scripts/soak-node.sh"
  scripts/softroce/rdmabed --topology "$topo" --timeout $((minutes * 60 + 420)) --out "$out/$topo" \
    --node0 "$node send $bin $clip $minutes" --node1 "$node recv $bin $clip $minutes" || status=1
  [ -f "$out/$topo/soak-report.txt" ] && cat "$out/$topo/soak-report.txt"
done
[ $status -eq 0 ] && echo "soak.sh: passed ($topologies); reports in $out/*/soak-report.txt"
exit $status
