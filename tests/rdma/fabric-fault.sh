#!/usr/bin/env bash
# fabric-fault.sh DELAY remove-device|link-down [DEVICE]
# After DELAY seconds, breaks the fabric under a running stream: deletes the
# rxe device (`rdma link delete`, what DEVICE_REMOVAL looks like) or takes
# its network link down (port error). Only for the test bed's own guests.
set -euo pipefail
delay=$1 fault=$2 dev=${3:-${RDMABED_DEVICE:-rxe0}}
[ "${RDMABED_MODE:-}" = guest ] || { echo "fabric-fault: only inside the test bed's guests" >&2; exit 2; }
netdev=$(rdma link show "$dev/1" | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
sleep "$delay"
case "$fault" in
  remove-device) echo "fabric-fault: rdma link delete $dev"; rdma link delete "$dev" ;;
  link-down) echo "fabric-fault: ip link set $netdev down"; ip link set "$netdev" down ;;
  *) echo "fabric-fault: unknown fault '$fault'" >&2; exit 2 ;;
esac
