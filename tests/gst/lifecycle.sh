#!/bin/sh
# Both legs of the restart test of the GStreamer elements (a test-bed node each).
#
#   lifecycle.sh restart-recv          rdmasrc ! fakesink, PLAYING->NULL->PLAYING
#       after 10 buffers; then the stream must resume (30 more) and end in EOS
#   lifecycle.sh restart-send 'LIVE'   LIVE ! rdmasink until the receiver leaves:
#       must end in an element error naming that; then a fresh 30-frame sender
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
    if "$GST_RDMA_CHECK" "$2 ! rdmasink host=$RDMABED_SERVER_ADDR" 2>"$out/restart-send.err"; then
        echo "FAILED: the sender did not notice the receiver leaving"
        exit 1
    fi
    cat "$out/restart-send.err"
    if ! grep -Eq 'error from rdmasink0: [^:]+: sender: (receiver went away after [0-9]+ frames|work completion failed)' \
        "$out/restart-send.err"; then
        echo "FAILED: rdmasink's error does not say the receiver went away"
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
