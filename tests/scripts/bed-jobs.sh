#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bed-jobs.sh RING_CHECK: the served bed (rdmabed serve) keeps one job's
# breakage to that job. Three jobs in a row on the bed named by
# RDMABED_SERVE (ctest's fixture):
#   1. leaves things behind: a process that left its process group, a file
#      in /tmp and in HOME, netem on the device's netdev; it passes.
#   2. crashes its guest (sysrq c): it fails, saying the guest died.
#   3. finds none of job 1's leftovers, on a guest booted anew, and streams
#      frames through the ring: it passes.
# A job that changed the next one's verdict would fail this test.
set -uo pipefail
check=${1:?usage: bed-jobs.sh RING_CHECK}
bed=$(cd "$(dirname "$0")/../../scripts/softroce" && pwd)/rdmabed
: "${RDMABED_SERVE:?run by ctest with the served bed (RDMABED_SERVE)}"
fail=0
run() { # NAME EXPECTED-STATUS(0|1) PATTERN CMD: one job, its verdict and output checked
  local name=$1 want=$2 pattern=$3 log rc=0
  log=$(mktemp)
  "$bed" --topology one --timeout 120 --node0 "$4" >"$log" 2>&1 || rc=$?
  sed "s/^/  [$name] /" "$log"
  if { ((want == 0)) && ((rc != 0)); } || { ((want != 0)) && ((rc == 0)); }; then
    echo "FAIL: job '$name' exited $rc, expected $( ((want)) && echo a failure || echo success)"
    fail=1
  elif ! grep -Eq -- "$pattern" "$log"; then
    echo "FAIL: job '$name': no line matches /$pattern/"
    fail=1
  else
    echo "ok: job '$name' $( ((want)) && echo failed || echo passed) as expected"
  fi
  rm -f "$log"
}

run litter 0 'littered' \
  'setsid sleep 600 </dev/null >/dev/null 2>&1 &
   echo x >/tmp/bed-jobs-litter && echo x >"$HOME/bed-jobs-litter" &&
   tc qdisc add dev rdma0 root netem delay 100ms && echo littered'
run crash 1 'guest 0 died during the job' 'echo c >/proc/sysrq-trigger; sleep 60'
run clean 0 'received and verified 200 frames' \
  'if pgrep -x sleep >/dev/null; then echo "FAIL: a process of an earlier job lives"; exit 1; fi
   if [ -e /tmp/bed-jobs-litter ] || [ -e "$HOME/bed-jobs-litter" ]; then echo "FAIL: an earlier job'"'"'s file is here"; exit 1; fi
   if tc qdisc show dev rdma0 | grep -q netem; then echo "FAIL: an earlier job'"'"'s netem is here"; exit 1; fi
   '"$check"' --role receiver --addr $RDMABED_SERVER_ADDR --frames 200 &
   '"$check"' --role sender --addr $RDMABED_SERVER_ADDR --frames 200 && wait $!'
exit "$fail"
