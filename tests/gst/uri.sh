#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The RDMA test of rdma:// URIs (rdma.gst_uri), one leg per test-bed node:
# both elements made or configured from URIs, in both roles, every frame
# checked, and the stats messages (stats-interval) counted on both ends.
#
#   uri.sh server   (node 0, $RDMABED_SERVER_ADDR)
#     1. rdmasrc uri=rdma://0.0.0.0:18515?...: listens (a wildcard host);
#        its frames must equal SOURCE ! fakesink's without RDMA, and it must
#        post stats messages with its frames rising.
#     2. SOURCE ! (the sink gst_element_make_from_uri makes from
#        rdma://0.0.0.0:18516): rdmasink listens, node 1 dials it.
#   uri.sh client   (node 1)
#     1. SOURCE ! (the sink made from rdma://SERVER:18515?...): dials, with
#        stats messages checked too.
#     2. rdmasrc uri=rdma://SERVER:18516: dials the listening rdmasink
#        (a peer host); its frames checked as in 1.
#
# Needs GST_RDMA_CHECK; $RDMABED_SERVER_ADDR and $RDMABED_OUT come from the bed.
set -eu
out=${RDMABED_OUT:-/tmp}
server=$RDMABED_SERVER_ADDR
caps="video/x-raw,format=I420,width=320,height=240,framerate=30/1"
# Paced (about 25 ms a frame), so the stream outlasts several 200 ms ticks.
paced="videotestsrc num-buffers=60 pattern=ball ! $caps ! identity sleep-time=25000"
# Ends in an element: --sink-uri links the sink to what the description ends with.
plain="videotestsrc num-buffers=30 pattern=smpte ! $caps ! identity"
ring="slots=4&slot-size=262144"
# Patient: the other node may still be finishing its previous step.
wait="connect-timeout=60000"

same() { # NAME GOT: GOT must equal SOURCE's digest without RDMA (in NAME.ref)
    if ! diff -u "$out/$1.ref" "$2" >"$out/$1.diff"; then
        echo "FAILED: $1: what came over RDMA differs from the pipeline without it:"
        head -20 "$out/$1.diff"
        exit 1
    fi
    echo "ok: $1: $(grep -c '^pts' "$out/$1.ref") frames identical to the pipeline without RDMA"
}

case $1 in
server)
    "$GST_RDMA_CHECK" --digest "$out/uri-listen.rdma" --stats rdma --stats-messages 3 --expect frames=60 \
        "rdmasrc name=rdma uri=\"rdma://0.0.0.0:18515?$ring&stats-interval=200\" ! fakesink name=digest"
    "$GST_RDMA_CHECK" --digest "$out/uri-listen.ref" "$paced ! fakesink name=digest"
    same uri-listen "$out/uri-listen.rdma"
    "$GST_RDMA_CHECK" --sink-uri "rdma://0.0.0.0:18516?$wait" --stats rdma --expect frames=30 --expect copies=0 "$plain"
    ;;
client)
    "$GST_RDMA_CHECK" --sink-uri "rdma://$server:18515?$wait&stats-interval=200" --stats rdma --stats-messages 3 \
        --expect frames=60 --expect copies=0 "$paced"
    "$GST_RDMA_CHECK" --digest "$out/uri-dial.rdma" --stats rdma --expect frames=30 \
        "rdmasrc name=rdma uri=\"rdma://$server:18516?$ring&$wait\" ! fakesink name=digest"
    "$GST_RDMA_CHECK" --digest "$out/uri-dial.ref" "$plain ! fakesink name=digest"
    same uri-dial "$out/uri-dial.rdma"
    ;;
*)
    echo "usage: uri.sh server|client" >&2
    exit 2
    ;;
esac
