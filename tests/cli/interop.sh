#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Both sides of the framemd5 interop check, one clip after another, each on
# its own port so the two sides pair up whatever their timing.
#   interop.sh recv BINDIR CLIPDIR CLIP[:REF] ...   receives each clip, compares with CLIP.ref.md5 (or REF)
#   interop.sh send BINDIR CLIPDIR CLIP[:REF] ...   sends each clip to $RDMABED_SERVER_ADDR
# Extra flags for all clips: $SEND_FLAGS (rdmasend), $RECV_FLAGS (rdmarecv).
set -u
role=$1 bindir=$2 clipdir=$3
shift 3
port=18600
status=0
for item in "$@"; do
  clip=${item%%:*}
  ref=$clipdir/$clip.ref.md5
  [ "$item" != "$clip" ] && ref=$clipdir/${item#*:}
  port=$((port + 1))
  if [ "$role" = recv ]; then
    out=${RDMABED_OUT:-/tmp}/$clip.md5
    # shellcheck disable=SC2086
    "$bindir/rdmarecv" --listen ":$port" --framemd5 "$out" -q --idle-timeout 60 ${RECV_FLAGS:-} || { echo "FAIL $clip: rdmarecv exited $?"; status=1; continue; }
    if cmp -s "$out" "$ref"; then
      echo "ok $clip: $(grep -c '^0,' "$out") frames match ffmpeg -f framemd5"
    else
      echo "FAIL $clip: rdmarecv --framemd5 differs from ffmpeg's ($ref):"
      diff "$out" "$ref" | head -20
      status=1
    fi
  else
    # shellcheck disable=SC2086
    "$bindir/rdmasend" "$clipdir/$clip" --connect "$RDMABED_SERVER_ADDR:$port" -q ${SEND_FLAGS:-} || { echo "FAIL $clip: rdmasend exited $?"; status=1; }
  fi
done
exit $status
