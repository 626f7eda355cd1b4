#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# RDMA to file, command-line half two: rdmarecv listens, writes what arrives
# through FFmpeg's muxer for OUT's extension (.y4m, .nut, .mkv raw; for .mp4
# give a codec) and ends at the sender's end of stream. Pair with
# cli-send-file.sh.
#   samples/cli-receive-to-file.sh OUT.mkv            raw video, no copy
#   samples/cli-receive-to-file.sh OUT.mp4 libx264    encoded
set -eu
out=${1:?usage: $0 OUT [CODEC]}
if [ $# -ge 2 ]; then
  exec rdmarecv -o "$out" --codec "$2"
fi
exec rdmarecv -o "$out"
