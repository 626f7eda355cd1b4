#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Both legs of the restart test of the GStreamer elements (a test-bed node each).
#
#   lifecycle.sh restart-recv          rdmasrc ! fakesink, PLAYING->NULL->PLAYING
#       after 10 buffers; then the stream must resume (30 more) and end in EOS
#   lifecycle.sh restart-send 'LIVE'   LIVE ! rdmasink until the receiver leaves:
#       it leaves on purpose (PLAYING->NULL), so the pipeline must end in EOS
#       with an INFO message saying so; then a fresh 30-frame sender
#
# Needs GST_RDMA_CHECK; $RDMABED_SERVER_ADDR comes from the test bed.
set -eu
out=${RDMABED_OUT:-/tmp}
case $1 in
restart-recv)
    "$GST_RDMA_CHECK" --restart-after 10 "rdmasrc ! fakesink name=digest" | tee "$out/restart-recv.log"
    grep -q 'restarting after 10 buffers' "$out/restart-recv.log"
    total=$(sed -n 's/.* \([0-9]*\) buffers in all/\1/p' "$out/restart-recv.log")
    if [ "${total:-0}" -lt 40 ]; then
        echo "FAILED: ${total:-no} buffers in all: the stream did not resume after the restart (want >= 40)"
        exit 1
    fi
    echo "ok: the stream resumed after PLAYING->NULL->PLAYING and ended in EOS ($total buffers)"
    ;;
restart-send)
    # gst-launch prints the INFO message (gst-rdma-check only errors).
    # shellcheck disable=SC2086 # the pipeline's words
    if ! gst-launch-1.0 $2 ! rdmasink host="$RDMABED_SERVER_ADDR" >"$out/restart-send.log" 2>&1; then
        cat "$out/restart-send.log"
        echo "FAILED: the sender's pipeline failed when the receiver left on purpose (want EOS)"
        exit 1
    fi
    cat "$out/restart-send.log"
    if ! grep -Eq 'receiver [0-9.:]+ left after [0-9]+ frames: it has every frame it wants' "$out/restart-send.log"; then
        echo "FAILED: rdmasink did not say the receiver left"
        exit 1
    fi
    # connect-timeout (10 s) covers the receiver's restart.
    "$GST_RDMA_CHECK" "videotestsrc num-buffers=30 ! video/x-raw,format=I420,width=160,height=120,framerate=30/1 ! rdmasink host=$RDMABED_SERVER_ADDR"
    echo "ok: a new sender reached the restarted receiver"
    ;;
*)
    echo "usage: lifecycle.sh restart-recv | restart-send LIVE-SOURCE" >&2
    exit 2
    ;;
esac
