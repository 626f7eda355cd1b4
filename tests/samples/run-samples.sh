#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# rdma.samples: the C++ samples, as built against the installed library
# (samples.build), stream FRAMES frames on the bed: receive_frames listens,
# send_frames dials it (its Door retries until the receiver listens). Both
# print every frame's number, size and checksum; the two lists must be the
# same, FRAMES lines long: every frame arrived, in order, bit-exact.
# usage: run-samples.sh SAMPLES_BUILD ADDR FRAMES
set -uo pipefail
bin=$1 addr=$2 frames=$3
out=${RDMABED_OUT:-/tmp}
"$bin/receive_frames" "$addr:18690" >"$out/received.txt" &
rx=$!
"$bin/send_frames" "$addr:18690" "$frames" >"$out/sent.txt"
tx_rc=$?
wait "$rx"
rx_rc=$?
[ "$tx_rc" -eq 0 ] && [ "$rx_rc" -eq 0 ] || { echo "run-samples: send_frames exited $tx_rc, receive_frames $rx_rc" >&2; exit 1; }
n=$(wc -l <"$out/received.txt")
[ "$n" -eq "$frames" ] || { echo "run-samples: $n frames received, $frames sent" >&2; exit 1; }
diff "$out/sent.txt" "$out/received.txt" >&2 || { echo "run-samples: received frames differ from those sent" >&2; exit 1; }
echo "run-samples: $frames frames, every checksum as sent"
