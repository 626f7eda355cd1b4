#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# two-wires.sh recv|send RING-CHECK: the bed's second wire (rdmabed --topology
# two --wires 2 --mtu 9000 --mtu-b 1500), what the two-path tests stand on.
# Both nodes: wire B is there apart from wire A (its own netdev, rxe device,
# subnet and MTU). The sender's node then cuts wire A alone (netem drops all
# it sends there, a partition), checks that A is cut and B is not, and
# streams checked frames to the receiver's B address: they can only have
# gone over wire B, through rxe1 on both guests. Then wire B is faulted under
# a stream (a partition, then rxe1 removed), which must end it, and brought
# back (healed, rxe1 added again): a new stream over wire B must then work.
set -euo pipefail
role=$1 check=$2
# shellcheck source=../../scripts/softroce/lib.sh
source "$(dirname "$0")/../../scripts/softroce/lib.sh"
fail() {
  echo "FAIL: $*"
  exit 1
}

[ "${RDMABED_WIRES:-}" = 2 ] || fail "RDMABED_WIRES is '${RDMABED_WIRES:-}', not 2 (run by rdmabed --wires 2)"
for v in RDMABED_NETDEV RDMABED_DEVICE_B RDMABED_NETDEV_B RDMABED_LOCAL_ADDR_B RDMABED_PEER_ADDR_B \
  RDMABED_SERVER_ADDR_B RDMABED_GID_INDEX_B RDMABED_ACTIVE_MTU_B; do
  [ -n "${!v:-}" ] || fail "$v is not set"
done
[ "$RDMABED_DEVICE_B" != "$RDMABED_DEVICE" ] || fail "both wires on one device ($RDMABED_DEVICE)"
[ "$RDMABED_NETDEV_B" != "$RDMABED_NETDEV" ] || fail "both wires on one netdev ($RDMABED_NETDEV)"
case $RDMABED_LOCAL_ADDR_B in 198.18.1.*) ;; *) fail "wire B's address $RDMABED_LOCAL_ADDR_B is not on 198.18.1.0/24" ;; esac
[ "$(rdmabed_gid_index "$RDMABED_DEVICE_B" "$RDMABED_LOCAL_ADDR_B")" = "$RDMABED_GID_INDEX_B" ] \
  || fail "$RDMABED_DEVICE_B has no RoCE v2 GID for $RDMABED_LOCAL_ADDR_B at index $RDMABED_GID_INDEX_B"
# Each wire its own MTU: rxe's active MTU follows its netdev's (9000 -> 4096, 1500 -> 1024).
a_mtu=$(rdmabed_active_mtu "$RDMABED_DEVICE") b_mtu=$(rdmabed_active_mtu "$RDMABED_DEVICE_B")
[ "$a_mtu" = 4096 ] && [ "$b_mtu" = 1024 ] && [ "$RDMABED_ACTIVE_MTU_B" = 1024 ] \
  || fail "active MTUs: wire A $a_mtu, wire B $b_mtu (bed says $RDMABED_ACTIVE_MTU_B); want 4096 and 1024"
echo "two-wires: A $RDMABED_DEVICE on $RDMABED_NETDEV $RDMABED_LOCAL_ADDR (MTU $a_mtu), B $RDMABED_DEVICE_B on $RDMABED_NETDEV_B $RDMABED_LOCAL_ADDR_B (MTU $b_mtu)"

fault=$(dirname "$0")/fabric-fault.sh
# stream PORT FRAMES [ARGS...]: this node's end of checked frames over wire B.
stream() {
  local port=$1 frames=$2
  shift 2
  if [ "$role" = recv ]; then
    "$check" --role receiver --addr "$RDMABED_SERVER_ADDR_B" --port "$port" --frames "$frames" --connect-timeout 30 "$@"
  else
    "$check" --role sender --addr "$RDMABED_SERVER_ADDR_B" --port "$port" --frames "$frames" --connect-timeout 30 "$@"
  fi
}
# cut PORT FAULT: a stream over wire B that this node's FAULT on rxe1 ends
# under traffic (the receiver: it stops hearing from the sender); it must fail.
cut() {
  if [ "$role" = recv ]; then
    if stream "$1" 100000000 --idle-timeout 3; then fail "the stream on port $1 outlived wire B's $2"; fi
  else
    if "$(dirname "$0")/together.sh" "$check --role sender --addr $RDMABED_SERVER_ADDR_B --port $1 --frames 100000000 --connect-timeout 30" \
      "$fault 2 $2 $RDMABED_DEVICE_B"; then
      fail "the stream on port $1 outlived wire B's $2"
    fi
  fi
  echo "two-wires: wire B's $2 ended the stream on port $1, as it must"
}

case $role in
  recv) ;;
  send)
    modprobe sch_netem || fail "no sch_netem module"
    "$fault" 0 partition "$RDMABED_DEVICE"
    if busybox ping -c 1 -W 1 "$RDMABED_PEER_ADDR" >/dev/null 2>&1; then
      fail "wire A still carries pings after the partition"
    fi
    busybox ping -c 1 -W 2 "$RDMABED_PEER_ADDR_B" >/dev/null 2>&1 || fail "wire B went with wire A"
    echo "two-wires: wire A cut, wire B answers"
    ;;
  *) fail "role must be recv or send, not '$role'" ;;
esac
# Over wire B alone (A cut on the sender's node).
stream 18640 200
# The way back after a fault under traffic (what a path's rejoin needs of
# the bed: 6.1 rxe takes no new connection after a link flap under traffic,
# docs/softroce.md, so the tests heal a partition or add the device again).
[ "$role" = send ] && "$fault" 0 heal "$RDMABED_DEVICE"
cut 18641 partition
[ "$role" = send ] && "$fault" 0 heal "$RDMABED_DEVICE_B"
stream 18642 200
cut 18643 remove-device
[ "$role" = send ] && "$fault" 0 device-back "$RDMABED_DEVICE_B"
stream 18644 200
echo "two-wires: wire B took new connections after a partition healed and after rxe1 came back"
