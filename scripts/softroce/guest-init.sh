#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# guest-init.sh: PID 1 of an rdmabed guest, entered by the initramfs through
# switch_root. / is this machine's root (read-only 9p under a RAM overlay), so
# this script, the project's build tree and all tools are at their host paths.
#
# Shares from the host (virtio-9p):
#   rdmabed  the per-guest run folder: job.sh in, status.nodeN/dmesg.txt out
#   rdmaout  the host's --out DIR, mounted at the same path (= $RDMABED_OUT)
# Served (`rdmabed serve`, RDMABED_SERVE=1 in job.sh): the guest stays up and
# runs one job after another, each from jobs/ID/ in the rdmabed share once the
# host names it in the file "go"; between jobs it is put back as new (see
# serve_loop below).
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
  umount -l "${out_share:-/nonexistent}" "$share" 2>/dev/null
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

# Served, the share holds every job's out folder (jobs set RDMABED_OUT to theirs).
out_share=${RDMABED_OUT_SHARE:-$RDMABED_OUT}
mkdir -p "$out_share" 2>/dev/null
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 rdmaout "$out_share" \
  || fail "cannot mount the out share at $out_share"

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
  modprobe_ dummy numdummies=0 || fail "modprobe dummy"
else
  modprobe_ virtio_net || fail "modprobe virtio_net"
  # Two wires: A's NIC has MAC 52:54:00:18:00:xx, B's 52:54:00:18:01:xx (rdmabed boot_guests).
  wire='' wire_b=''
  for _ in $(seq 50); do # the NICs appear asynchronously after the module loads
    for d in /sys/class/net/*; do
      [[ -e $d/device ]] || continue
      case $(<"$d/address") in
        52:54:00:18:00:*) wire=${d##*/} ;;
        52:54:00:18:01:*) wire_b=${d##*/} ;;
      esac
    done
    [[ -n $wire && -n $wire_b ]] && break
    sleep 0.1
  done
  [[ -n $wire ]] || fail "no virtio NIC of wire A appeared"
  [[ -n $wire_b ]] || fail "no virtio NIC of wire B appeared"
fi

# rxe_on DEV NETDEV ADDR MTU [IP-CMD]: NETDEV at MTU with ADDR/24 and up,
# after IP-CMD (e.g. the dummy's creation), and the rxe device DEV on it;
# sets rxe_gid (the RoCE v2 GID index of ADDR) and rxe_active_mtu. On
# failure returns 1, the reason on stderr.
rxe_on() {
  local dev=$1 netdev=$2 addr=$3 mtu=$4 add=${5:-} idle ib
  # One ip process for the steps (a fork costs ~0.1 s in a busy guest).
  # The MTU is set before rxe binds: rxe derives its port's active MTU from
  # the netdev's (9000 -> 4096-byte RoCE packets, 1500 -> 1024). Both guests
  # of --topology two get the same value, so the wire carries it both ways.
  printf '%s\n' ${add:+"$add"} "addr replace $addr/24 dev $netdev" \
    "link set $netdev mtu $mtu" "link set $netdev up" | ip -batch - \
    || { echo "ip could not set up $netdev at MTU $mtu" >&2; return 1; }
  rdma link add "$dev" type rxe netdev "$netdev" || { echo "rdma link add $dev failed" >&2; return 1; }
  rxe_gid=
  for _ in {1..50}; do # GIDs are filled in from netdev events
    rxe_gid=$(rdmabed_gid_index "$dev" "$addr") && break
    read -r -t 0.1 -u 7 idle
  done
  # What rxe makes of the netdev's MTU (rxe_param.h: eth_mtu_int_to_enum, the
  # MTU less RXE_MAX_HDR_LENGTH, 80, rounded down to an IB MTU): ibv_devinfo
  # would say the same in 0.6 s of a busy guest.
  rxe_active_mtu=256
  for ib in 4096 2048 1024 512; do
    ((mtu - 80 >= ib)) && { rxe_active_mtu=$ib; break; }
  done
  say "$dev on $netdev $addr (gid index ${rxe_gid:-?}), netdev MTU $mtu, active MTU $rxe_active_mtu"
}

# peer_answers ADDR: waits until the other guest answers at ADDR (at most
# 60 s), so that a test does not race the wire. (The only peer reachable at
# all is the project's other guest.)
peer_answers() {
  local ok=0 t0=$SECONDS idle
  until ((ok || SECONDS - t0 > 60)); do
    if busybox ping -c 1 -W 1 "$1" >/dev/null 2>&1; then ok=1; else read -r -t 0.2 -u 7 idle; fi
  done
  ((ok)) || { echo "peer $1 does not answer" >&2; return 1; }
  say "peer $1 answers"
}

# device_up MTU: the netdev at MTU with our address, rxe0 on it (on failure:
# returns 1, the reason on stderr). One guest: rdma_cm cannot resolve a route over an rxe
# bound to lo, so the device sits on a dummy netdev that owns the address the
# nodes connect to. Two guests: the virtio NIC of the wire. A job of
# --wires 2 gets the second wire too (wire_b_up).
device_up() {
  local mtu=$1 add=''
  if [[ $RDMABED_TOPOLOGY == one ]]; then
    netdev=rdma0
    add="link add $netdev type dummy"
  else
    netdev=$wire
  fi
  rxe_on rxe0 "$netdev" "$RDMABED_LOCAL_ADDR" "$mtu" "$add" || return 1
  export RDMABED_DEVICE=rxe0 RDMABED_NETDEV=$netdev RDMABED_PEER_ADDR \
    RDMABED_GID_INDEX=$rxe_gid RDMABED_ACTIVE_MTU=$rxe_active_mtu
  if [[ $RDMABED_TOPOLOGY == two ]]; then peer_answers "$RDMABED_PEER_ADDR" || return 1; fi
  if [[ ${RDMABED_WIRES:-1} == 2 ]]; then wire_b_up "${RDMABED_MTU_B:-$mtu}" || return 1; fi
}

# wire_b_up MTU: the second wire, as device_up sets the first: its NIC at MTU
# with our B address, rxe1 on it, the peer answering on it. Marks the wire
# used (/run/wire-b-used) for device_down.
wire_b_up() {
  local mtu=$1
  : >/run/wire-b-used
  rxe_on rxe1 "$wire_b" "$RDMABED_LOCAL_ADDR_B" "$mtu" || return 1
  export RDMABED_DEVICE_B=rxe1 RDMABED_NETDEV_B=$wire_b RDMABED_MTU_B=$mtu RDMABED_PEER_ADDR_B \
    RDMABED_GID_INDEX_B=$rxe_gid RDMABED_ACTIVE_MTU_B=$rxe_active_mtu
  peer_answers "$RDMABED_PEER_ADDR_B"
}

# device_down: what a job may have changed of the fabric, undone: rxe0 gone
# (also if the job deleted it), no netem, the dummy netdev gone (device_up
# brings the wire up again).
# Fails if rxe0 cannot be removed (a wedged device: the guest is rebooted).
# Fails too if the job left the wire down (a link-down fault): rxe's packets
# may be stuck in the virtio NIC's transmit ring, and their QPs are gone with
# the job's processes. Bringing the link up frees them through 6.1 rxe's
# rxe_skb_tx_dtor, which reads the dead QP and panics the guest (seen on CI:
# NULL dereference in rxe_skb_tx_dtor under `ip link set up`). A fresh guest
# costs a boot; a panic costs the next job.
device_down() {
  if [[ -e /sys/class/infiniband/rxe0 ]]; then rdma link delete rxe0 || return 1; fi
  [[ ! -e /sys/class/infiniband/rxe0 ]] || return 1
  if [[ $RDMABED_TOPOLOGY == one ]]; then
    ip link delete rdma0 2>/dev/null # its netem goes with it (a dummy has no ring)
  else
    if ! ip -o link show dev "$wire" | grep -q '[<,]UP[,>]'; then
      say "the job left $wire down: rxe packets may be stuck in its ring (6.1 rxe panics when they are freed)"
      return 1
    fi
    printf '%s\n' "qdisc del dev $wire root" | tc -force -batch - 2>/dev/null
    ip addr flush dev "$wire" 2>/dev/null
    # Wire B, once a job used it: the same. It stays up between jobs (only
    # a link brought up again can free stuck packets, see above).
    if [[ -e /run/wire-b-used ]]; then
      if [[ -e /sys/class/infiniband/rxe1 ]]; then rdma link delete rxe1 || return 1; fi
      [[ ! -e /sys/class/infiniband/rxe1 ]] || return 1
      if ! ip -o link show dev "$wire_b" | grep -q '[<,]UP[,>]'; then
        say "the job left $wire_b (wire B) down: rxe packets may be stuck in its ring (6.1 rxe panics when they are freed)"
        return 1
      fi
      printf '%s\n' "qdisc del dev $wire_b root" | tc -force -batch - 2>/dev/null
      ip addr flush dev "$wire_b" 2>/dev/null
    fi
  fi
  return 0
}

# fresh_home: HOME and its caches new, with the host's GStreamer registry
# (rdmabed made it: no plugin scan here). GST_REGISTRY_UPDATE=no: the
# registry is taken as it is, unchecked. Checked, one plugin (libvisual,
# whose cache entry depends on $HOME) was found stale in every job and
# rescanned by the first GStreamer process of the job (rdmarecv is one,
# before it listens): 0.6 s a job. The host's scan is fresh (rdmabed makes
# it each run), and a test's own registry (GST_REGISTRY_1_0, made natively
# by the gst.guest_registry fixture) is too.
fresh_home() {
  rm -rf /run/home
  mkdir -p /run/home/.cache/gstreamer-1.0
  export HOME=/run/home XDG_CACHE_HOME=/run/home/.cache XDG_RUNTIME_DIR=/run
  if [[ -n ${RDMABED_GST_REGISTRY:-} && -r $RDMABED_GST_REGISTRY ]]; then
    if cp "$RDMABED_GST_REGISTRY" "/run/home/.cache/gstreamer-1.0/registry.$HOSTTYPE.bin"; then
      export GST_REGISTRY_UPDATE=no
    else
      say "could not copy the host's GStreamer registry: plugins will be scanned"
    fi
  fi
}

ulimit -l unlimited
mkfifo /run/idle && exec 7<>/run/idle # read -t on it: a sleep without a fork

if [[ ${RDMABED_SHELL:-0} == 1 ]]; then
  device_up "${RDMABED_MTU:?}" || fail "the RDMA device could not be set up"
  fresh_home
  export RDMABED_NODE=0
  say "interactive shell; exit (or Ctrl-D) powers the guest off"
  cd "$RDMABED_CWD" 2>/dev/null || cd /
  setsid -c bash -i </dev/ttyS0 >/dev/ttyS0 2>&1
  finish
fi

# run_nodes DIR LIMIT: the job's node commands (RDMABED_NODES, RDMABED_CMD_n),
# concurrently, each bounded by LIMIT seconds; nodeN.log and status.nodeN
# into DIR.
run_nodes() {
  local dir=$1 limit=$2 n pids=()
  say "running node(s) ${RDMABED_NODES:?}, limit ${limit}s"
  for n in $RDMABED_NODES; do
    run_node "$dir" "$limit" "$n" &
    pids+=($!)
  done
  wait "${pids[@]}"
  local st
  for n in $RDMABED_NODES; do
    st='?'
    read -r st <"$dir/status.node$n"
    say "node$n exit status $st"
  done
}

run_node() {
  local dir=$1 limit=$2 n=$3 cmd_var=RDMABED_CMD_$3 addr_var=RDMABED_ADDR_$3
  {
    (
      cd "$RDMABED_CWD" || exit 127
      export RDMABED_NODE=$n RDMABED_LOCAL_ADDR=${!addr_var}
      if [[ ${RDMABED_WIRES:-1} == 2 ]]; then
        local addr_b_var=RDMABED_ADDR_B_$n
        export RDMABED_LOCAL_ADDR_B=${!addr_b_var}
      fi
      # timeout leads its own process group; once the command is done, kill
      # what it left behind: a stray background child would keep the output
      # pipe open and the guest waiting.
      timeout -k 3 "$limit" sh -c "${!cmd_var}" &
      tp=$!
      wait "$tp"
      rc=$?
      kill -KILL -- "-$tp" 2>/dev/null
      exit "$rc"
    ) </dev/null
    echo $? >"$dir/status.node$n"
  } 2>&1 | sed -u "s/^/[node$n] /" >>"$dir/node$n.log"
}

# --- served: one job after another ------------------------------------------------
# Each job runs in a subshell (its environment dies with it) on a fresh /tmp
# and HOME, with rxe0 re-created at the job's MTU; afterwards every process
# is killed, netem removed and the device deleted, so that the next job finds
# the guest as a boot leaves it. A job that leaves the device unremovable (or
# a guest that cannot set it up) powers the guest off: rdmabed serve boots a
# new one for the next job, and this job is failed by name.
serve_loop() {
  local id jd idle tmp_may_go=1 st
  # A fresh /tmp would hide the project (or the jobs' out share) if it lives there.
  case $here/ in /tmp/*) tmp_may_go=0 ;; esac
  case $out_share/ in /tmp/*) tmp_may_go=0 ;; esac
  ((tmp_may_go)) || say "the project or the out share is under /tmp: jobs share one /tmp"
  : >"$share/ready"
  say "serving jobs"
  while :; do
    until [[ -s $share/go ]]; do read -r -t 0.05 -u 7 idle; done
    read -r id <"$share/go"
    # Not ready again until this job's traces are gone: a job that left the
    # guest unusable must not hand the next one a guest about to power off.
    rm -f "$share/go" "$share/ready"
    jd=$share/jobs/$id
    [[ -r $jd/job.sh ]] || { say "job $id has no job.sh"; continue; }
    local fresh_tmp=0
    if ((tmp_may_go)) && mount -t tmpfs -o mode=1777 tmp /tmp; then fresh_tmp=1; fi
    (
      # shellcheck source=/dev/null
      source "$jd/job.sh"
      [[ ${RDMABED_TRACE:-0} == 1 ]] && { PS4='+ ${EPOCHREALTIME} '; set -x; }
      fresh_home
      # One guest's nodes share its clock; two guests' drift apart between jobs.
      if [[ $RDMABED_TOPOLOGY == two ]]; then
        sync_clock_to_host >/dev/null 2>&1 || say "could not set the clock from the host's"
      fi
      device_up "${RDMABED_MTU:?}" 2>"$jd/setup-error" || exit 3
      # The caller's --out at its own path too, as a guest of its own has it.
      if [[ -n ${RDMABED_OUT_AT:-} ]] && mkdir -p "$RDMABED_OUT_AT" &&
        mount --bind "$RDMABED_OUT" "$RDMABED_OUT_AT"; then
        echo "$RDMABED_OUT_AT" >/run/job-out-at
        export RDMABED_OUT=$RDMABED_OUT_AT
      fi
      : >"$jd/started"
      run_nodes "$jd" "$RDMABED_BUDGET"
    ) 2>/dev/console
    local rc=$? out_at=''
    kill -KILL -1 2>/dev/null # everything the job started (PID 1 survives)
    if [[ -s /run/job-out-at ]]; then
      read -r out_at </run/job-out-at
      umount -l "$out_at"
      rm -f /run/job-out-at
    fi
    dmesg >"$jd/dmesg.txt" 2>&1
    ((rc == 3)) && : >"$jd/reboot"
    : >"$jd/finished" # the host has its verdict; the rest is ours
    dmesg -C
    ((fresh_tmp)) && umount -l /tmp
    if ((rc == 3)) || ! device_down; then
      say "job $id left the guest unusable: powering off for a fresh one"
      finish
    fi
    : >"$share/ready"
  done
}

if [[ ${RDMABED_SERVE:-0} == 1 ]]; then
  serve_loop
  finish
fi

# --- one job, then power off ------------------------------------------------------
run_err=/run/device-up.err
device_up "${RDMABED_MTU:?}" 2>"$run_err" || fail "$(cat "$run_err")"
fresh_home
# The guest-side limit is a bit shorter than the host's, so that on a timeout
# the guest still gets to save dmesg and report which node hung.
read -r up _ </proc/uptime
left=$((RDMABED_BUDGET - ${up%.*}))
((left > 0)) || left=1
: >"$share/started" # the host tells the boot's time from the test's by it
run_nodes "$share" "$left"
finish
