#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# held-slot.sh windows|no-windows 'RECEIVER' 'ROGUE'
# A rogue sender writes into a slot the receiver's consumer still holds
# (rdma-ring-check --hold-first against --fault held-slot), both on this
# node. Passes when both end in error for the right reasons:
#   windows:    the rogue's write fails with a remote access error (the NIC
#               refused it) and the held frame's checksum is unchanged;
#   no-windows: the bytes landed (checksum changed) and the receiver refused
#               the write by name once its completion arrived.
set -u
mode=$1 receiver=$2 rogue=$3
rx_log=$(mktemp) tx_log=$(mktemp)
trap 'rm -f "$rx_log" "$tx_log"' EXIT
sh -c "$receiver" >"$rx_log" 2>&1 &
rx=$!
sh -c "$rogue" >"$tx_log" 2>&1 &
tx=$!
wait "$rx"; rx_status=$?
wait "$tx"; tx_status=$?
sed 's/^/[receiver] /' "$rx_log"
sed 's/^/[rogue] /' "$tx_log"
fail() { echo "held-slot ($mode): $*" >&2; exit 1; }
[ "$rx_status" -ne 0 ] || fail "the receiver succeeded; it should have ended on the rogue's write"
[ "$tx_status" -ne 0 ] || fail "the rogue succeeded; its write should have ended the stream"
grep -q "wrote frame 2 into slot 0, which the receiver holds" "$tx_log" || fail "the rogue never made its write"
if [ "$mode" = windows ]; then
  grep -q "work completion failed: remote access error" "$tx_log" ||
    fail "the rogue's write into the held slot was not refused by the NIC (no remote access error)"
  grep -q "is intact (checksum unchanged)" "$rx_log" || fail "the held frame's bytes changed"
else
  grep -q "is CHANGED (checksum differs" "$rx_log" || fail "the held frame did not change: were windows on?"
  grep -q "frame written into slot 0 while the consumer still holds it" "$rx_log" ||
    fail "the receiver did not refuse the write by name"
fi
echo "held-slot ($mode): refused as expected"
