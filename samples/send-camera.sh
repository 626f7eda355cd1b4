#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# A V4L2 camera to an rdmasrc listening on HOST; live policy: if the
# receiver falls behind, old frames are dropped rather than the camera waiting.
#   samples/send-camera.sh HOST [/dev/videoN]
set -eu
host=${1:?usage: $0 HOST [/dev/videoN]}
exec gst-launch-1.0 -e v4l2src device="${2:-/dev/video0}" ! videoconvert \
  ! rdmasink host="$host" policy=live
