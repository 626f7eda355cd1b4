#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# guest-init.sh: PID 1 of an rdmabed guest, entered by the initramfs through
# switch_root. / is this machine's root (read-only 9p under a RAM overlay), so
# this script, the project's build tree and all tools are at their host paths.
#
# Shares from the host (virtio-9p):
#   rdmabed  the per-guest run folder: job.sh in, status.nodeN/dmesg.txt out
#   rdmaout  the host's --out DIR, mounted at the same path (= $RDMABED_OUT)
# ttyS0 is the console (host keeps it as console.log). The node commands'
# prefixed output goes to nodeN.log in the rdmabed share, which the host
# streams to its stdout (a file over 9p: a serial port dropped and reordered
# characters under load).
#
# PID 1 must never exit by accident (kernel panic, no dmesg): no `set -e`;
# every path ends in finish(), which saves dmesg and powers off.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
here=$(dirname "${BASH_SOURCE[0]}")
share=/run/rdmabed

say() { echo "rdmabed-guest: $*" >/dev/console; }

finish() {
  if mountpoint -q "$share"; then
    dmesg >"$share/dmesg.txt" 2>&1
    : >"$share/finished"
  fi
  sync
  umount -l "${RDMABED_OUT:-/nonexistent}" "$share" 2>/dev/null
  echo o >/proc/sysrq-trigger # power off now; qemu runs with -no-reboot
  sleep 30
  exit 1 # should not get here; a panic also ends qemu
}

fail() {
  say "setup failed: $*"
  mountpoint -q "$share" && echo "$*" >"$share/setup-error"
  finish
}

mount -t proc proc /proc
mount -t sysfs sys /sys
mkdir -p /dev/pts /dev/shm
# devtmpfs lacks the links udev would add; bash's <(...) needs /dev/fd.
ln -sfn /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 shm /dev/shm
# A fresh /run (the host's holds sockets and pid files of host daemons).
mount -t tmpfs -o mode=755 run /run
mkdir -p "$share"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 rdmabed "$share" \
  || fail "cannot mount the rdmabed share"

[[ -r $share/job.sh ]] || fail "no job.sh in the share"
# job.sh sets RDMABED_{GUEST,NODES,TOPOLOGY,CWD,MODDIR,KVER,ADDR_n,CMD_n,
# SHELL,BUDGET,LOCAL_ADDR,PEER_ADDR,GST_REGISTRY} and exports the node environment
# (RDMABED_MTU among it).
# shellcheck source=/dev/null
source "$share/job.sh"
if [[ ${RDMABED_TRACE:-0} == 1 ]]; then # rdmabed: env RDMABED_TRACE=1
  PS4='+ ${EPOCHREALTIME} '
  exec 2>/dev/console
  set -x
fi
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

# If the initramfs could not set up the overlay, / is read-only: give /tmp
# RAM, unless the work lives there (then it stays read-only but visible).
if ! touch /.rdmabed-rw 2>/dev/null; then
  case $RDMABED_CWD/ in
    /tmp/*) say "read-only root and the work is under /tmp: /tmp stays read-only" ;;
    *) mount -t tmpfs -o mode=1777 tmp /tmp ;;
  esac
fi

mkdir -p "$RDMABED_OUT" 2>/dev/null
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 rdmaout "$RDMABED_OUT" \
  || fail "cannot mount the out share at $RDMABED_OUT"

hostname "rdmabed-g$RDMABED_GUEST" 2>/dev/null
ip link set lo up

# --- the wall clock -------------------------------------------------------------
# The RTC gives a guest the host's time to the second only, so two guests'
# clocks can be a second apart and one-way latencies between them (sender's
# timestamp vs receiver's clock) would be noise. A file created on the host's
# share gets the host's time as its mtime: step our clock by the difference
# to the middle of the create. Error: half the create's round trip plus the
# host's coarse file clock, a few ms.
sync_clock_to_host() {
  local f=$share/clock.$RDMABED_GUEST t1 t2 host off
  t1=$EPOCHREALTIME
  : >"$f" || return 1
  t2=$EPOCHREALTIME
  host=$(stat -c %.9Y "$f") || return 1
  off=$(awk -v h="$host" -v a="$t1" -v b="$t2" 'BEGIN { printf "%+.6f", h - (a + b) / 2 }')
  date -s "$off seconds" >/dev/null || return 1
  say "clock stepped ${off}s to the host's (create took $(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.1f", (b - a) * 1000 }') ms)"
}
sync_clock_to_host || say "could not set the clock from the host's: one-way latencies between guests are off"

# --- the RDMA device ----------------------------------------------------------
# Make the cached kernel's modules the system's, so that plain modprobe and the
# kernel's own on-demand loads (crc32 for rxe, ...) find them.
if ! { mkdir -p /lib/modules && ln -sfn "$RDMABED_MODDIR/lib/modules/$RDMABED_KVER" "/lib/modules/$RDMABED_KVER"; }; then
  printf '#!/bin/sh\nexec /sbin/modprobe -d %q "$@"\n' "$RDMABED_MODDIR" >/run/modprobe
  chmod +x /run/modprobe
  echo /run/modprobe >/proc/sys/kernel/modprobe
fi
modprobe_() { modprobe -d "$RDMABED_MODDIR" -S "$RDMABED_KVER" "$@"; }
# rdma_ucm provides /dev/infiniband/rdma_cm (udev would load it on a host);
# crc32 is what rxe computes its ICRC with.
for m in rdma_rxe rdma_ucm crc32_generic; do
  modprobe_ "$m" || fail "modprobe $m"
done
if [[ $RDMABED_TOPOLOGY == one ]]; then
  # rdma_cm cannot resolve a route over an rxe bound to lo, so the device sits
  # on a dummy netdev that owns the address the nodes connect to.
  modprobe_ dummy numdummies=0 || fail "modprobe dummy"
  netdev=rdma0
  ip link add "$netdev" type dummy || fail "ip link add dummy"
else
  modprobe_ virtio_net || fail "modprobe virtio_net"
  netdev=
  for _ in $(seq 50); do # the NIC appears asynchronously after the module loads
    for d in /sys/class/net/*; do
      [[ -e $d/device ]] && { netdev=${d##*/}; break 2; }
    done
    sleep 0.1
  done
  [[ -n $netdev ]] || fail "no virtio NIC appeared"
fi
ip addr add "$RDMABED_LOCAL_ADDR/24" dev "$netdev" || fail "ip addr add"
# Before rxe binds to it: rxe derives its port's active MTU from the
# netdev's (9000 -> 4096-byte RoCE packets, 1500 -> 1024). Both guests of
# --topology two get the same value, so the wire carries it both ways.
ip link set "$netdev" mtu "${RDMABED_MTU:?}" || fail "ip link set $netdev mtu $RDMABED_MTU"
ip link set "$netdev" up || fail "ip link set up"
rdma link add rxe0 type rxe netdev "$netdev" || fail "rdma link add rxe0"
export RDMABED_DEVICE=rxe0
RDMABED_GID_INDEX=
for _ in $(seq 50); do # GIDs are filled in from netdev events
  RDMABED_GID_INDEX=$(rdmabed_gid_index rxe0 "$RDMABED_LOCAL_ADDR") && break
  sleep 0.1
done
export RDMABED_GID_INDEX
RDMABED_ACTIVE_MTU=$(rdmabed_active_mtu rxe0) || RDMABED_ACTIVE_MTU=
export RDMABED_ACTIVE_MTU
say "rxe0 on $netdev $RDMABED_LOCAL_ADDR (gid index ${RDMABED_GID_INDEX:-?}), netdev MTU $RDMABED_MTU, active MTU ${RDMABED_ACTIVE_MTU:-?}"

if [[ $RDMABED_TOPOLOGY == two ]]; then
  # Do not let a test race the wire: wait until the other guest answers.
  # (The only peer reachable at all is the project's other guest.)
  ok=0
  until ((ok || SECONDS > 60)); do
    if busybox ping -c 1 -W 1 "$RDMABED_PEER_ADDR" >/dev/null 2>&1; then ok=1; else sleep 0.2; fi
  done
  ((ok)) || fail "peer $RDMABED_PEER_ADDR does not answer"
  say "peer $RDMABED_PEER_ADDR answers"
fi

# --- the node commands --------------------------------------------------------
ulimit -l unlimited
mkdir -p /run/home /run/home/.cache
export HOME=/run/home XDG_CACHE_HOME=/run/home/.cache XDG_RUNTIME_DIR=/run
# The host's GStreamer registry (rdmabed made it): no plugin scan here.
if [[ -n ${RDMABED_GST_REGISTRY:-} && -r $RDMABED_GST_REGISTRY ]]; then
  mkdir -p /run/home/.cache/gstreamer-1.0
  cp "$RDMABED_GST_REGISTRY" "/run/home/.cache/gstreamer-1.0/registry.$(uname -m).bin" ||
    say "could not copy the host's GStreamer registry: plugins will be scanned"
fi

if [[ ${RDMABED_SHELL:-0} == 1 ]]; then
  export RDMABED_NODE=0
  say "interactive shell; exit (or Ctrl-D) powers the guest off"
  cd "$RDMABED_CWD" 2>/dev/null || cd /
  setsid -c bash -i </dev/ttyS0 >/dev/ttyS0 2>&1
  finish
fi

# The guest-side limit is a bit shorter than the host's, so that on a timeout
# the guest still gets to save dmesg and report which node hung.
read -r up _ </proc/uptime
left=$((RDMABED_BUDGET - ${up%.*}))
((left > 0)) || left=1
say "running node(s) ${RDMABED_NODES:?}, limit ${left}s"

run_node() {
  local n=$1 cmd_var=RDMABED_CMD_$1 addr_var=RDMABED_ADDR_$1
  {
    (
      cd "$RDMABED_CWD" || exit 127
      export RDMABED_NODE=$n RDMABED_LOCAL_ADDR=${!addr_var}
      # timeout leads its own process group; once the command is done, kill
      # what it left behind: a stray background child would keep the output
      # pipe open and the guest waiting.
      timeout -k 3 "$left" sh -c "${!cmd_var}" &
      tp=$!
      wait "$tp"
      rc=$?
      kill -KILL -- "-$tp" 2>/dev/null
      exit "$rc"
    ) </dev/null
    echo $? >"$share/status.node$n"
  } 2>&1 | sed -u "s/^/[node$n] /" >>"$share/node$n.log"
}
pids=()
for n in $RDMABED_NODES; do
  run_node "$n" &
  pids+=($!)
done
wait "${pids[@]}"
for n in $RDMABED_NODES; do
  say "node$n exit status $(cat "$share/status.node$n" 2>/dev/null || echo '?')"
done
finish
