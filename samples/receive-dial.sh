#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The other way round: the sender listens (rdmasink role=listen, or
# rdmasend --listen), the receiver dials it.
#   samples/receive-dial.sh SENDER_HOST
set -eu
host=${1:?usage: $0 SENDER_HOST}
exec gst-launch-1.0 rdmasrc role=connect host="$host" ! decodebin ! videoconvert \
  ! autovideosink sync=false
