#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The demo's receiving end on a desktop: rdmarecv listens, asks the sender
# for the live policy, and feeds frames without a copy into a GStreamer
# pipeline that draws each frame's number and one-way latency (the element
# named rdmastats) and shows it. Send with, e.g.:
#   rdmasend lavfi:testsrc2=size=1920x1080:rate=60 --connect THIS_HOST --realtime
#   samples/live-overlay-display.sh [PORT]
set -eu
exec rdmarecv --listen ":${1:-18515}" --policy live \
  --gst 'textoverlay name=rdmastats halignment=left valignment=bottom ! videoconvert ! autovideosink sync=false'
