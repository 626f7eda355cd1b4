#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Admitting receivers costs a fan-out nothing per frame while nobody joins.
# rdmasend --listen --receivers 1 -d DEVICE streams 500 frames to one
# receiver under strace; the sender's syscalls must show
#   * no failed read of the listener's rdma_cm events per frame (asking the
#     listener whether a request waits, and learning that none does),
#   * no RDMA device listing per frame (ibv_get_device_list: one netlink
#     socket each),
#   * polls of the listener bounded by time (one per 10 ms at most), not by frames.
# Counts, not timings: the last bound comes from the run's own length.
#   fanout-admission.sh send BINDIR   node 0: the sender under strace, then the checks
#   fanout-admission.sh recv BINDIR   node 1: the receiver
set -u
role=$1 bin=$2
out=$RDMABED_OUT
port=18682 frames=500
if [ "$role" = recv ]; then
  exec "$bin/rdmarecv" --connect "$RDMABED_SERVER_ADDR:$port" --null -q 2>"$out/admission-recv.log"
fi

command -v strace >/dev/null || { echo "FAIL: this test needs strace (apt-get install strace)"; exit 1; }
trace=$out/admission.strace
json=$out/admission-send.json
# -x: binary buffers in hex, so the rdma_cm commands are recognisable; -y: fds with their paths.
strace -f -x -y -ttt --seccomp-bpf -e trace=write,poll,ppoll,socket -o "$trace" \
  "$bin/rdmasend" 'lavfi:testsrc2=size=64x64:rate=30' --listen=:$port --receivers 1 --frames $frames \
  -d "$RDMABED_DEVICE" -q --stats-json "$json" 2>"$out/admission-send.log"
rc=$?
cat "$out/admission-send.log"
[ $rc -eq 0 ] || { echo "FAIL: rdmasend exited $rc"; exit 1; }
grep -q "\"frames\": $frames" "$json" || { echo "FAIL: the sender did not send $frames frames: $(cat "$json")"; exit 1; }

# The listener's fd is the one the LISTEN command (ucma command 7) was written to.
lfd=$(grep 'rdma_cm>, "\\x07\\x00\\x00\\x00' "$trace" | head -1 | sed 's/.* write(\([0-9]*\)<.*/\1/')
[ -n "$lfd" ] || { echo "FAIL: no rdma_listen in the trace ($trace)"; exit 1; }
# A failed GET_EVENT (ucma command 12): the listener had no event.
empty_reads=$(grep "write($lfd</dev/infiniband/rdma_cm>, \"\\\\x0c\\\\x00\\\\x00\\\\x00" "$trace" | grep -c 'EAGAIN')
polls=$(grep -c "poll(\[{fd=$lfd<" "$trace")
listings=$(grep 'socket(AF_NETLINK' "$trace" | grep -c NETLINK_RDMA)
seconds=$(awk 'NR == 1 { first = $2 } $2 ~ /^[0-9.]+$/ { last = $2 } END { printf "%d", last - first + 1 }' "$trace")
echo "admission: $frames frames in ~$seconds s: $empty_reads empty reads and $polls polls of the listener (fd $lfd), $listings device listings"

status=0
[ "$empty_reads" -lt 10 ] ||
  { echo "FAIL: $empty_reads reads of the listener found nothing: it is asked once per frame"; status=1; }
[ "$listings" -lt 30 ] ||
  { echo "FAIL: $listings RDMA device listings for $frames frames: the device is listed per frame"; status=1; }
# One poll per 10 ms while streaming, up to 10 a second while waiting for the receiver, one per join.
[ "$polls" -le $((seconds * 100 + 50)) ] ||
  { echo "FAIL: $polls polls of the listener in ~$seconds s: more than one per 10 ms"; status=1; }
[ $status -eq 0 ] && echo "ok: admission costs the stream no syscall per frame"
exit $status
