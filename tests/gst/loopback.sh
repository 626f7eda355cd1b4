#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# One leg of an RDMA test of the GStreamer elements, run on a test-bed node.
#
#   loopback.sh receive NAME 'SOURCE' 'RDMASRC-OPTIONS'
#       rdmasrc ! fakesink, then the same SOURCE ! fakesink without RDMA:
#       the two digests (caps, timestamps, flags, bytes of every frame) must
#       be equal, and rdmasrc must have copied nothing (fakesink lets go of
#       each buffer before the next frame: every frame goes out in its slot).
#   loopback.sh send NAME 'SOURCE' 'RDMASINK-OPTIONS' [--expect FIELD=N]...
#       SOURCE ! rdmasink, with rdmasink's stats checked at the end.
#
# Needs GST_RDMA_CHECK (the gst-rdma-check binary); $RDMABED_SERVER_ADDR and
# $RDMABED_OUT come from the test bed.
set -eu
mode=$1 name=$2 source=$3 options=$4
shift 4
out=${RDMABED_OUT:-/tmp}
case $mode in
receive)
    "$GST_RDMA_CHECK" --digest "$out/$name.rdma" --stats rdma --expect copies=0 "rdmasrc name=rdma $options ! fakesink name=digest"
    "$GST_RDMA_CHECK" --digest "$out/$name.ref" "$source ! fakesink name=digest"
    frames=$(grep -c '^pts' "$out/$name.ref")
    if ! diff -u "$out/$name.ref" "$out/$name.rdma" >"$out/$name.diff"; then
        echo "FAILED: $name: what came over RDMA differs from the pipeline without it:"
        head -20 "$out/$name.diff"
        exit 1
    fi
    echo "ok: $name: $frames frames identical to the pipeline without RDMA"
    ;;
send)
    "$GST_RDMA_CHECK" --stats rdma "$@" "$source ! rdmasink name=rdma host=$RDMABED_SERVER_ADDR $options"
    ;;
*)
    echo "usage: loopback.sh receive|send NAME SOURCE OPTIONS" >&2
    exit 2
    ;;
esac
