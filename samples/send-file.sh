#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# A video file, decoded, to an rdmasrc listening on HOST (raw frames: the
# receiver needs no decoder).
#   samples/send-file.sh HOST FILE
set -eu
host=${1:?usage: $0 HOST FILE} file=${2:?usage: $0 HOST FILE}
exec gst-launch-1.0 -e filesrc location="$file" ! decodebin ! videoconvert \
  ! rdmasink host="$host"
