#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Waits for a sender on port 18515 and shows what it sends. The timestamps
# are the sender's, so the display does not sync to this machine's clock.
# Decodes as needed (raw video passes straight to videoconvert).
#   samples/receive-display.sh [PORT]
set -eu
exec gst-launch-1.0 rdmasrc port="${1:-18515}" ! decodebin ! videoconvert \
  ! autovideosink sync=false
