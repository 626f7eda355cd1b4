#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Test video to an rdmasrc (or rdmarecv) listening on HOST. Zero-copy:
# videotestsrc renders into rdmasink's registered buffer pool.
#   samples/send-test-pattern.sh HOST [WIDTHxHEIGHT] [FORMAT]
set -eu
host=${1:?usage: $0 HOST [WIDTHxHEIGHT] [FORMAT]}
size=${2:-1280x720} format=${3:-I420}
exec gst-launch-1.0 -e videotestsrc is-live=true pattern=ball \
  ! video/x-raw,format="$format",width="${size%x*}",height="${size#*x}",framerate=30/1 \
  ! rdmasink host="$host"
