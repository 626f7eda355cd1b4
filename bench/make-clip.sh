#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The sender's source for bench/paths.sh and bench/budget.sh: a short raw
# clip (black, y4m) that rdmasend loops, made natively once per build tree.
# rawvideo has no DR1 decoder, so rdmasend copies each frame once into
# registered memory (and counts it): reading and copying is all it costs.
#   make-clip.sh 64k|1080p|4k DIR    -> DIR/NAME.y4m
set -euo pipefail
name=$1 dir=$2
case $name in
  64k) pix=gray geom=256x256 n=60 ;;      # 65,536-byte GRAY8 frames
  1080p) pix=yuv420p geom=1920x1080 n=20 ;;
  4k) pix=yuv420p geom=3840x2160 n=8 ;;
  *) echo "make-clip: unknown size '$name' (64k, 1080p, 4k)" >&2; exit 2 ;;
esac
clip=$dir/$name.y4m
[[ -s $clip ]] && exit 0
mkdir -p "$dir"
echo "make-clip: $clip ($n frames of $geom $pix)"
ffmpeg -nostdin -loglevel error -y -f lavfi -i "color=c=black:s=$geom:r=60" -frames:v "$n" -pix_fmt "$pix" \
  -f yuv4mpegpipe "$clip.tmp"
mv "$clip.tmp" "$clip"
