#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Test video as JPEG to an rdmasrc listening on HOST: encoded streams travel
# opaque (caps and buffers as they are; each frame is copied once).
#   samples/send-jpeg.sh HOST
set -eu
host=${1:?usage: $0 HOST}
exec gst-launch-1.0 -e videotestsrc is-live=true ! video/x-raw,width=1280,height=720,framerate=30/1 \
  ! jpegenc ! rdmasink host="$host"
