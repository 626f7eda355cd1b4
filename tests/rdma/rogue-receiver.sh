#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# A genuine sender against every fault of the rogue receiver
# (tests/rdma/rogue_receiver.cpp), in one guest boot: fault i on port
# PORT0 + i, so a sender can never reach the previous fault's rogue.
#   rogue-receiver.sh rogue  PORT0 ROGUE_CMD...   node 0: the rogue, once per fault
#   rogue-receiver.sh sender PORT0 SENDER_CMD...  node 1: the sender, once per fault
# SENDER_CMD's words "@PORT@" become the fault's port. Each sender must fail,
# within its own bound, with a message naming the receiver and the reason.
set -u
role=$1 port0=$2
shift 2
status=0
i=0
# fault|the sender's reason (an extended regex)
faults='early-credits|credit for slot 0(, which the sender already holds| generation 0, expected 1)
never-given|credit for slot 63, which the sender already holds
ring-advert|the receiver sent a ring advert the sender did not ask for
no-imm|the receiver sent a message without an immediate
oversized|the receiver sent a message longer than the [0-9]+-byte receive buffers'
log=$RDMABED_OUT/rogue-receiver-$RDMABED_NODE.log
echo "$faults" > "$RDMABED_OUT/rogue-receiver-faults.$RDMABED_NODE"
while IFS='|' read -r fault reason; do
  port=$((port0 + i))
  i=$((i + 1))
  if [ "$role" = rogue ]; then
    "$@" --port "$port" --fault "$fault" || { echo "FAIL: the rogue receiver ($fault) exited $?"; status=1; }
    continue
  fi
  cmd=""
  for word in "$@"; do
    case $word in *@PORT@*) word=$(printf '%s' "$word" | sed "s/@PORT@/$port/g") ;; esac
    cmd="$cmd '$word'"
  done
  if eval "$cmd" >"$log" 2>&1; then
    cat "$log"
    echo "FAIL: $fault: the sender finished, though the receiver was a rogue"
    status=1
  elif grep -Eq "sender: refused the receiver at [0-9a-f.:]+:$port: $reason" "$log"; then
    echo "ok $fault: $(grep -Eo "sender: refused the receiver at [^ ]+ .*" "$log" | head -1)"
  else
    cat "$log"
    echo "FAIL: $fault: the sender failed, but not with /refused the receiver at ...:$port: $reason/"
    status=1
  fi
done <"$RDMABED_OUT/rogue-receiver-faults.$RDMABED_NODE"
exit $status
