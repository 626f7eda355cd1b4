#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# One node of bench/mw_stall_probe.cpp's cases between two guests of the bed
# (docs/security.md, "Why they are not the default"): node 0 binds, sends and
# invalidates (--listen), node 1 receives. Each node puts the same netem on its
# own eth0 first, so data and acknowledgements both suffer, then runs the
# probe; afterwards it prints rxe's retry counters and what the kernel logged.
#   mw-stall-node.sh PROBE PORT 'NETEM ARGS or none' PROBE-ARGS...
# e.g. (both nodes, same arguments)
#   mw-stall-node.sh build/bench/rdmastream-mw-stall-probe 18900 'loss 5%' --mode mw --rounds 400
set -u
probe=$1 port=$2 netem=$3
shift 3
export PATH="$PATH:/usr/sbin:/sbin"
modprobe sch_netem 2>/dev/null
tc qdisc del dev eth0 root 2>/dev/null
# shellcheck disable=SC2086 # the netem arguments are words
[ "$netem" = none ] || tc qdisc add dev eth0 root netem $netem || { echo "FAIL: tc netem $netem"; exit 1; }
if [ "$RDMABED_NODE" = 0 ]; then
  timeout 150 "$probe" --listen "$RDMABED_SERVER_ADDR:$port" "$@"
else
  timeout 150 "$probe" --connect "$RDMABED_SERVER_ADDR:$port" "$@"
fi
rc=$?
tc qdisc del dev eth0 root 2>/dev/null
c=/sys/class/infiniband/$RDMABED_DEVICE/ports/1/hw_counters
for f in sent_pkts rcvd_pkts rcvd_seq_err completer_retry_err send_rnr_err retry_exceeded_err duplicate_request out_of_seq_request; do
  [ -r "$c/$f" ] && printf '%s=%s ' "$f" "$(cat "$c/$f")"
done
echo
dmesg | grep -iE 'rxe|bug|oops|rip:|call trace' | tail -n 20
exit $rc
