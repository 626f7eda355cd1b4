#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# One source to several receivers: a tee with one rdmasink per receiver,
# each its own connection, ring, credits and policy (live here: a slow or
# missing receiver costs the others nothing). Each receiver runs, e.g.,
# samples/receive-display.sh. Frames are copied once per sink (a tee cannot
# hand one registered pool to several sinks; the sinks' stats count it).
# Without the copies, from a file: cli-send-to-several.sh (rdmasend --receivers).
#   samples/send-to-several.sh HOST1 HOST2 [HOST...]
set -eu
[ $# -ge 2 ] || { echo "usage: $0 HOST1 HOST2 [HOST...]" >&2; exit 2; }
branches=
for host in "$@"; do
  branches="$branches t. ! queue max-size-buffers=2 leaky=downstream ! rdmasink host=$host policy=live"
done
# shellcheck disable=SC2086 # the branches are separate gst-launch arguments
exec gst-launch-1.0 -e videotestsrc is-live=true pattern=ball \
  ! video/x-raw,format=I420,width=1280,height=720,framerate=30/1 ! tee name=t $branches
