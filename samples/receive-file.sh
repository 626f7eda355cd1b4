#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Waits for a sender and records what it sends to a Matroska file (raw
# video or whatever the sender encoded). Stops at the sender's end of stream.
#   samples/receive-file.sh OUT.mkv [PORT]
set -eu
out=${1:?usage: $0 OUT.mkv [PORT]}
exec gst-launch-1.0 -e rdmasrc port="${2:-18515}" ! queue ! matroskamux ! filesink location="$out"
