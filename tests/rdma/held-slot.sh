#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# held-slot.sh windows|no-windows 'RECEIVER' 'ROGUE' 'NEXT'
# A rogue sender writes into a slot the receiver's consumer still holds
# (rdma-ring-check --hold-first against --fault held-slot), both on this
# node; then a genuine sender (NEXT) streams to the same listener
# (--serve-next). Passes when the rogue ends in error for the right
# reasons and the listener serves the next sender in full:
#   windows:    the rogue's write fails with a remote access error (the NIC
#               refused it), the receiver names the sender's address and the
#               cause (the NIC refused its write outside its credits; slot 0,
#               held by the consumer, the slot it held no credit for), and
#               the held frame's checksum is unchanged;
#   no-windows: the bytes landed (checksum changed) and the receiver refused
#               the write by name once its completion arrived.
set -u
mode=$1 receiver=$2 rogue=$3 next=$4
rx_log=$(mktemp) tx_log=$(mktemp) next_log=$(mktemp)
trap 'rm -f "$rx_log" "$tx_log" "$next_log"' EXIT
sh -c "$receiver" >"$rx_log" 2>&1 &
rx=$!
sh -c "$rogue" >"$tx_log" 2>&1
tx_status=$?
# The next sender, once the rogue is gone (it retries until the listener takes it).
sh -c "$next" >"$next_log" 2>&1
next_status=$?
wait "$rx"; rx_status=$?
sed 's/^/[receiver] /' "$rx_log"
sed 's/^/[rogue] /' "$tx_log"
sed 's/^/[next] /' "$next_log"
fail() { echo "held-slot ($mode): $*" >&2; exit 1; }
[ "$tx_status" -ne 0 ] || fail "the rogue succeeded; its write should have ended the stream"
grep -q "wrote frame 2 into slot 0, which the receiver holds" "$tx_log" || fail "the rogue never made its write"
if [ "$mode" = windows ]; then
  grep -q "work completion failed: remote access error" "$tx_log" ||
    fail "the rogue's write into the held slot was not refused by the NIC (no remote access error)"
  grep -q "is intact (checksum unchanged)" "$rx_log" || fail "the held frame's bytes changed"
  grep -Eq "refused the sender at [0-9.]+:[0-9]+: the NIC refused a write \(or read\) of the sender's outside its credits, and nothing of it landed; it held no credit for slot 0 \(its frame is with the consumer\)" "$rx_log" ||
    fail "the receiver did not name the sender and the cause"
else
  grep -q "is CHANGED (checksum differs" "$rx_log" || fail "the held frame did not change: were windows on?"
  grep -q "frame written into slot 0 while the consumer still holds it" "$rx_log" ||
    fail "the receiver did not refuse the write by name"
fi
grep -q "receiver: refused the first sender" "$rx_log" || fail "the receiver did not go on to the next sender"
[ "$next_status" -eq 0 ] || fail "the next sender failed (exit $next_status)"
[ "$rx_status" -eq 0 ] || fail "the listener did not serve the next sender in full (exit $rx_status)"
grep -q "receiver: received and verified" "$rx_log" || fail "the next sender's stream was not verified"
echo "held-slot ($mode): refused as expected, and the listener served the next sender"
