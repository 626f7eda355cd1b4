#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# fabric-fault.sh DELAY remove-device|device-back|link-down|link-up|partition|loss|heal|wait [DEVICE]
# (link-up waits for the port to be ACTIVE again. Note: on the guests' 6.1
# rxe, after a link goes down *under traffic* and comes back, new rdma_cm
# connections time out until the device is re-created; a flap without
# traffic is harmless. See the closing note of the transport issue.)
# After DELAY seconds, breaks the fabric under a running stream: deletes the
# rxe device (`rdma link delete`, what DEVICE_REMOVAL looks like) or takes
# its network link down (port error), or drops everything this node sends
# from then on (partition: the peer's writes go unacknowledged, as behind a
# dead switch, so its RC retries run out). The way back: device-back adds
# the rxe device again on its netdev, heal removes the partition (or loss),
# link-up brings the link up. loss: netem drops LOSS (env, default 5%) of
# what this node sends. DEVICE: rxe0 by default, or the second wire's rxe1
# (rdmabed --wires 2): each wire is faulted alone. Only for the test bed's
# own guests.
# AFTER_LOG=FILE AFTER_PATTERN=REGEX (env): the DELAY counts from the moment
# FILE shows REGEX (at most 120 s of waiting), e.g. a peer's debug log
# saying its stream began, so a slow start never meets the fault first.
set -euo pipefail
delay=$1 fault=$2 dev=${3:-${RDMABED_DEVICE:-rxe0}}
[ "${RDMABED_MODE:-}" = guest ] || { echo "fabric-fault: only inside the test bed's guests" >&2; exit 2; }
# The netdev under DEV: the bed says which (a removed device no longer tells).
if [ "$dev" = "${RDMABED_DEVICE_B:-}" ]; then netdev=${RDMABED_NETDEV_B:-}; else netdev=${RDMABED_NETDEV:-}; fi
[ -n "$netdev" ] || netdev=$(rdma link show "$dev/1" | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
[ -n "$netdev" ] || { echo "fabric-fault: no netdev known under $dev" >&2; exit 2; }
# port_active: waits until DEV's port is ACTIVE (at most 10 s)
port_active() {
  for _ in $(seq 100); do
    rdma link show "$dev/1" 2>/dev/null | grep -q 'state ACTIVE' && return 0
    sleep 0.1
  done
  echo "fabric-fault: $dev did not come back ACTIVE" >&2
  return 1
}
if [ -n "${AFTER_LOG:-}" ]; then
  for _ in $(seq 1200); do
    grep -Eq -- "$AFTER_PATTERN" "$AFTER_LOG" 2>/dev/null && break
    sleep 0.1
  done
  grep -Eq -- "$AFTER_PATTERN" "$AFTER_LOG" 2>/dev/null \
    || { echo "fabric-fault: $AFTER_LOG never showed /$AFTER_PATTERN/" >&2; exit 1; }
fi
sleep "$delay"
case "$fault" in
  remove-device) echo "fabric-fault: rdma link delete $dev"; rdma link delete "$dev" ;;
  link-down) echo "fabric-fault: ip link set $netdev down"; ip link set "$netdev" down ;;
  partition)
    echo "fabric-fault: dropping everything sent on $netdev"
    tc qdisc replace dev "$netdev" root netem loss 100% ;;
  loss)
    echo "fabric-fault: dropping ${LOSS:-5%} of what is sent on $netdev"
    tc qdisc replace dev "$netdev" root netem loss "${LOSS:-5%}" ;;
  heal)
    echo "fabric-fault: $netdev sends everything again"
    tc qdisc del dev "$netdev" root ;;
  device-back)
    echo "fabric-fault: rdma link add $dev type rxe netdev $netdev"
    rdma link add "$dev" type rxe netdev "$netdev" && port_active ;;
  wait) ;; # nothing: a step that only waits its DELAY
  link-up)
    echo "fabric-fault: ip link set $netdev up"
    ip link set "$netdev" up && port_active ;;
  *) echo "fabric-fault: unknown fault '$fault'" >&2; exit 2 ;;
esac
