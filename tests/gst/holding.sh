#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Downstream elements that hold buffers (issue 12): each would stop the
# stream without rdmasrc's copy-threshold (it held every ring slot, so the
# sender waited for a credit that never came, gave up after its slot
# timeout, and rdmasrc saw it go away). With it, every frame arrives bit
# for bit, both ends exit 0, and rdmasrc counts the copies it made.
#   (a) the issue's pipeline: small avenc_mpeg4 frames into filesink, which
#       batches them (64 KiB) and so holds every slot; the file must equal
#       what the same encoder pipeline writes locally;
#   (b) a queue that fills up: min-threshold-buffers lets nothing through
#       before it holds the whole stream, as a queue ahead of a slow
#       consumer does, deterministically;
#   (c) an appsink pulled slowly: the application pulls nothing before all
#       30 samples wait in it, then one every 10 ms.
# (b) and (c) with 4 slots and copy-threshold 2: the first 2 frames are
# lent, the other 28 copied. Digests as loopback.sh compares them.
#   holding.sh recv   node 0, rdmasrc
#   holding.sh send   node 1, rdmasink
# Needs GST_RDMA_CHECK; $RDMABED_SERVER_ADDR and $RDMABED_OUT come from the bed.
set -u
role=$1
out=${RDMABED_OUT:-/tmp}
status=0
fail() { echo "FAIL $*"; status=1; }
ENC="videotestsrc num-buffers=20 ! video/x-raw,width=320,height=240 ! avenc_mpeg4"
RAW="videotestsrc num-buffers=30 pattern=ball ! video/x-raw,format=I420,width=160,height=120,framerate=30/1"
SMALL="slots=4 slot-size=262144"

if [ "$role" = send ]; then
  # connect-timeout: the receiver of the previous case may still be closing.
  for c in "$ENC:18671" "$RAW:18672" "$RAW:18673"; do
    "$GST_RDMA_CHECK" "${c%:*} ! rdmasink host=$RDMABED_SERVER_ADDR port=${c##*:} connect-timeout=60000" ||
      fail "sender to :${c##*:} exited $?"
  done
  exit $status
fi

# same NAME GOT WANT: digests (or files) byte for byte.
same() {
  if cmp -s "$3" "$2"; then
    echo "ok $1: $(wc -c <"$2") bytes identical to the pipeline without RDMA"
  else
    fail "$1: what came over RDMA differs from the pipeline without it:"
    cmp "$3" "$2" | head -3
  fi
}

"$GST_RDMA_CHECK" --stats rdma --expect frames=20 --expect-at-least copies=1 \
  "rdmasrc name=rdma port=18671 ! filesink location=$out/enc.got" || fail "(a) rdmasrc ! filesink exited $?"
"$GST_RDMA_CHECK" "$ENC ! filesink location=$out/enc.ref"
same "(a) avenc_mpeg4 into filesink" "$out/enc.got" "$out/enc.ref"

"$GST_RDMA_CHECK" --digest "$out/raw.ref" "$RAW ! fakesink name=digest"
"$GST_RDMA_CHECK" --digest "$out/queue.got" --stats rdma --expect frames=30 --expect copies=28 \
  "rdmasrc name=rdma port=18672 $SMALL ! queue max-size-buffers=100 max-size-bytes=0 max-size-time=0 min-threshold-buffers=30 ! fakesink name=digest" ||
  fail "(b) rdmasrc ! queue exited $?"
same "(b) a queue that fills up" "$out/queue.got" "$out/raw.ref"

"$GST_RDMA_CHECK" --digest "$out/appsink.got" --pull-after 30 --pull-delay-ms 10 --stats rdma --expect frames=30 \
  --expect copies=28 "rdmasrc name=rdma port=18673 $SMALL ! appsink name=digest" || fail "(c) rdmasrc ! appsink exited $?"
same "(c) an appsink pulled slowly" "$out/appsink.got" "$out/raw.ref"
exit $status
