#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# One file to several receivers from the command line: rdmasend listens,
# waits until N receivers have dialled in, then writes each frame to all of
# them from the same registered memory (decoded in place: no copy, however
# many receivers). Each receiver has its own ring, credits and policy; more
# may join while it streams (they get the format, then the next frame), any
# may leave; the stream ends for all at the end of FILE. On each receiver:
#   rdmarecv --connect SENDER_HOST --gst "videoconvert ! autovideosink"
#   (or samples/receive-dial.sh SENDER_HOST; add --policy live to a receiver
#   that must never hold the others back)
#   samples/cli-send-to-several.sh N FILE [more rdmasend options]
set -eu
n=${1:?usage: $0 N FILE [rdmasend options]} file=${2:?usage: $0 N FILE [rdmasend options]}
shift 2
exec rdmasend "$file" --listen --receivers "$n" --realtime "$@"
