#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# then-on-host.sh OUT 'CHECK' COMMAND...: runs COMMAND (an rdmabed job with
# --out OUT: what its nodes write to $RDMABED_OUT lands there), then, if it
# passed, CHECK (a shell string) on this machine with RDMABED_OUT=OUT. The
# checks that need no RDMA device (ffmpeg and ffprobe over what a node
# wrote, Python) cost a second or more per program start in a TCG guest,
# where every program links FFmpeg's hundred libraries under emulation, and
# milliseconds here.
set -u
out=$1 check=$2
shift 2
rm -rf "$out" && mkdir -p "$out" || exit 2
"$@" || exit $?
echo "then-on-host: checking on this machine: $check"
RDMABED_OUT=$out exec sh -c "$check"
