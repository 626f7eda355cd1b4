#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Both sides of the framemd5 interop check, one clip after another, each on
# its own port so the two sides pair up whatever their timing, and the
# checks of the files written, on the host after the job (HOST_CHECK:
# ffmpeg and ffprobe cost seconds a program in a TCG guest).
#   interop.sh recv BINDIR CLIPDIR ITEM ...   receives each clip, compares with CLIP.ref.md5 (or REF)
#   interop.sh send BINDIR CLIPDIR ITEM ...   sends each clip to $RDMABED_SERVER_ADDR
#   interop.sh check BINDIR CLIPDIR ITEM ...  the -o files' sound and pictures, on the host
# ITEM is CLIP[:REF[:EXT:CODEC:SAMPLES]]. REF "node-programme" (-map 0:v:0
# -map 0:a:0): the reference is made by the receiving node's ffmpeg, for
# decoders whose float output depends on the CPU's
# SIMD (FFmpeg's Opus decoder differs with and without AVX, and the guest's
# CPU is not the host's). With EXT, rdmarecv
# also writes -o CLIP.EXT, and `ffmpeg -i CLIP.EXT -c:a CODEC -f md5` of it must equal
# the file SAMPLES (the source's decoded samples, hashed the same way);
# SAMPLES "node": hashed by the receiving node's ffmpeg (a decoder whose float
# output depends on the CPU: AC-3's sign of a zero, with and without AVX).
# The written file's samples are PCM, which decodes alike on any CPU.
# Extra flags for all clips: $SEND_FLAGS (rdmasend), $RECV_FLAGS (rdmarecv).
set -u
role=$1 bindir=$2 clipdir=$3
shift 3
port=18600
status=0
for item in "$@"; do
  IFS=: read -r clip ref ext codec samples <<EOF_ITEM
$item
EOF_ITEM
  ref=$clipdir/${ref:-$clip.ref.md5}
  port=$((port + 1))
  if [ "$role" = recv ]; then
    out=${RDMABED_OUT:-/tmp}/$clip.md5
    case $ref in
      "$clipdir/node-programme") set -- -map 0:v:0 -map 0:a:0 ;;
      *) set -- ;;
    esac
    if [ $# -gt 0 ]; then
      ref=${RDMABED_OUT:-/tmp}/$clip.node.ref.md5
      ffmpeg -nostdin -v error -y -i "$clipdir/$clip" "$@" -f framemd5 "$ref"
    fi
    written=${RDMABED_OUT:-/tmp}/got.$clip.${ext:-none}
    set --
    [ -n "${ext:-}" ] && set -- -o "$written"
    # shellcheck disable=SC2086
    "$bindir/rdmarecv" --listen ":$port" --framemd5 "$out" "$@" -q --idle-timeout 60 ${RECV_FLAGS:-} || { echo "FAIL $clip: rdmarecv exited $?"; status=1; continue; }
    if cmp -s "$out" "$ref"; then
      echo "ok $clip: $(grep -vc '^#' "$out") frames ($(cut -d, -f1 "$out" | grep -v '^#' | sort -u | wc -l) streams) match ffmpeg -f framemd5"
    else
      echo "FAIL $clip: rdmarecv --framemd5 differs from ffmpeg's ($ref):"
      diff "$out" "$ref" | head -20
      status=1
    fi
    [ "${samples:-}" = node ] || continue
    ffmpeg -nostdin -v error -i "$clipdir/$clip" -map 0:a:0 -c:a "$codec" -f md5 - >"${RDMABED_OUT:-/tmp}/$clip.node.samples.md5" 2>&1
  elif [ "$role" = check ]; then
    [ -n "${ext:-}" ] || continue
    [ "$ref" = "$clipdir/node-programme" ] && ref=$RDMABED_OUT/$clip.node.ref.md5
    written=$RDMABED_OUT/got.$clip.$ext
    got=$(ffmpeg -nostdin -v error -i "$written" -map 0:a:0 -c:a "$codec" -f md5 - 2>&1)
    if [ "$samples" = node ]; then
      want=$(cat "$RDMABED_OUT/$clip.node.samples.md5")
    else
      want=$(cat "$clipdir/$samples")
    fi
    if [ "$got" = "$want" ]; then
      echo "ok $clip: -o got.$clip.$ext decodes to the source's samples ($codec: $got)"
    else
      echo "FAIL $clip: -o got.$clip.$ext decodes to $got, the source to $want ($codec)"
      status=1
    fi
    # A programme's file holds its pictures too: as many as the reference.
    grep -q '^1,' "$ref" || continue
    pictures=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$written")
    if [ "$pictures" = "$(grep -c '^0,' "$ref")" ]; then
      echo "ok $clip: -o got.$clip.$ext holds its $pictures pictures beside the sound"
    else
      echo "FAIL $clip: -o got.$clip.$ext holds ${pictures:-no} pictures, the source $(grep -c '^0,' "$ref")"
      status=1
    fi
  else
    # shellcheck disable=SC2086
    "$bindir/rdmasend" "$clipdir/$clip" --connect "$RDMABED_SERVER_ADDR:$port" -q ${SEND_FLAGS:-} || { echo "FAIL $clip: rdmasend exited $?"; status=1; }
  fi
done
exit $status
