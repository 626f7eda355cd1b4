#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# One node's half of bench/budget.sh, run by the test bed on both nodes with
# the same arguments: node 0 runs every receiving side, node 1 every sending
# side, step by step in the same order, one port per step.
#
#   budget-node.sh BUILD-DIR CLIP-DIR SIZE N1 N2 POLL...
#
# For the CLIs (rdmasend CLIP --loop -> rdmarecv --null) and the elements
# (videotestsrc ! rdmasink -> rdmasrc ! fakesink), with each POLL mode
# (event, busy) on both ends, two runs of N1 and N2 frames. Each end runs under
# strace -f (every thread) with the malloc_count library preloaded and
# G_SLICE=always-malloc (so that GLib's slices are malloc calls too).
# Per run and end it leaves in $RDMABED_OUT/raw/:
#   KIND.POLL.N.nodeK.sys     "COUNT NAME" per system call; write(2)s to the
#                             uverbs device split by verbs command (rxe's
#                             doorbell is a write of IB_USER_VERBS_CMD_POST_SEND)
#   KIND.POLL.N.nodeK.win     the same in the steady state: from the N1-th
#                             doorbell (see warm_up) to the last, after a line
#                             "doorbells N" (the doorbells in it; in the N1
#                             run, one or none)
#   KIND.POLL.N.nodeK.malloc  malloc_count's line(s) at exit
#   KIND.POLL.N.nodeK.stacks  with RDMASTREAM_BUDGET_TRACE=FROM[,COUNT] (budget.sh
#                             --trace): the stacks of allocations from the
#                             FROM-th doorbell on (malloc_count's MALLOC_COUNT_TRACE)
#   KIND.POLL.N.nodeK.{log,time,json}
#   KIND.POLL.N.nodeK.failed  if the program failed: its status and last line.
#                             The run goes on (the peer has moved on to the
#                             next step already); the report shows the failure.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_NAME=budget
# shellcheck source=node-lib.sh
source "$here/node-lib.sh"

(($# >= 6)) || fail "usage: budget-node.sh BUILD-DIR CLIP-DIR SIZE N1 N2 POLL..."
build=$1 clips=$2 name=$3 n1=$4 n2=$5
shift 5
polls=("$@")
node=${RDMABED_NODE:?run by scripts/softroce/rdmabed}
addr=${RDMABED_SERVER_ADDR:?}
raw=${RDMABED_OUT:?}/raw
mkdir -p "$raw"
preload=$build/bench/libmalloc_count.so
[[ -r $preload ]] || fail "no $preload: build the project (scripts/build.sh)"
command -v strace >/dev/null || fail "strace is missing: run scripts/setup.sh"
read -r _ format width height _ <<<"$(size_caps "$name")"
caps="video/x-raw,format=$format,width=$width,height=$height,framerate=60/1"

gst_setup "$build/gst-plugin"
if ((node == 0)); then
  printf '{"topology":"%s","mode":"%s","mtu":"%s","active_mtu":"%s","device":"%s","size":"%s","kernel":"%s","cpus":%s}\n' \
    "${RDMABED_TOPOLOGY:-}" "${RDMABED_MODE:-}" "${RDMABED_MTU:-}" "${RDMABED_ACTIVE_MTU:-}" "${RDMABED_DEVICE:-}" \
    "$name" "$(uname -r)" "$(nproc)" >"$RDMABED_OUT/bed.json"
fi
if ((node == 1)); then
  cp "$clips/$name.y4m" "/tmp/bench-$name.y4m" || fail "cannot copy the clip $clips/$name.y4m"
fi

# The steady state's window opens at each process's N1-th rxe doorbell
# (RDMASTREAM_BUDGET_WARM_UP, budget.sh --warm-up, says another; the heap
# counter's MALLOC_COUNT_WINDOW_FROM, and count_syscalls): the stream's
# opening stays out of it, which the first doorbell does not leave out
# (each end's first is a handshake message: the receiver's ring advert comes
# before its first frame, whose format it reads through GStreamer, and
# before its first slots are wrapped), and N2 - N1 frames are left in it.
warm_up=${RDMASTREAM_BUDGET_WARM_UP:-$n1}

# Counts system calls by name from an strace -f -y -x log, into OUT (the
# whole run) and WIN (the window from the $warm_up-th to the last rxe
# doorbell, first line "doorbells N": the window spans N - 1 doorbell
# intervals, i.e. frames, without start-up, the stream's opening and
# tear-down; it closes at the process's first write(rdma_cm DISCONNECT),
# since tear-down's drain marker after it is a doorbell but no frame). A write(2) to
# /dev/infiniband/uverbsN carries a verbs command, one to rdma_cm an rdma_cm
# command; the first 4 bytes are the command's number (uapi headers
# rdma/ib_user_verbs.h and rdma/rdma_user_cm.h), shown here by name.
count_syscalls() { # LOG OUT WIN
  awk -v out="$2" -v win="$3" -v from="$warm_up" '
    BEGIN {
      verbs[23] = "REQ_NOTIFY_CQ"; verbs[28] = "POST_SEND (rxe doorbell)"; verbs[29] = "POST_RECV"
      cm[10] = "DISCONNECT"; cm[12] = "GET_EVENT"
    }
    # The call a log line starts ("" for a resumed call, counted at its
    # start, an exit or a signal).
    function call(   name, dev, h, n) {
      if ($2 ~ /^<\.\.\./ || $2 ~ /^(\+\+\+|---)/) return ""
      name = $2; sub(/\(.*/, "", name)
      if (name !~ /^[a-z_0-9]+$/) return ""
      dev = $2 ~ /<\/dev\/infiniband\/uverbs[0-9]+>/ ? "uverbs" : $2 ~ /<\/dev\/infiniband\/rdma_cm>/ ? "rdma_cm" : ""
      if (name == "write" && dev != "" && match($0, /"\\x[0-9a-f][0-9a-f]/)) {
        h = substr($0, RSTART + 3, 2)   # hex digits, by hand: mawk has no strtonum
        n = (index("0123456789abcdef", substr(h, 1, 1)) - 1) * 16 + index("0123456789abcdef", substr(h, 2, 1)) - 1
        if (dev == "uverbs") name = "write(uverbs " (n in verbs ? verbs[n] : "command " n) ")"
        else name = "write(rdma_cm " (n in cm ? cm[n] : "command " n) ")"
      }
      # rdma-core sends most verbs commands (ibv_req_notify_cq among them) as
      # RDMA_VERBS_IOCTL; which one it is sits in the argument, not decoded here.
      if (name == "ioctl" && dev == "uverbs") name = "ioctl(uverbs RDMA_VERBS_IOCTL)"
      return name
    }
    NR == FNR {   # first pass: where the doorbells are
      name = call()
      if (name == "write(rdma_cm DISCONNECT)") hung_up = 1
      if (name == "write(uverbs POST_SEND (rxe doorbell))" && !hung_up && ++bells >= from) {
        if (bells == from) first = FNR
        last = FNR
      }
      next
    }
    {
      name = call()
      if (name == "") next
      all[name]++
      if (first && FNR > first && FNR <= last) inside[name]++
    }
    END {
      for (k in all) print all[k], k | ("sort -rn >" out)
      print "doorbells", (bells >= from ? bells - from + 1 : 0) >win
      for (k in inside) print inside[k], k >win
    }' "$1" "$1"
}

traced() { # PREFIX WHAT CMD...: CMD under strace with the heap counter
  local prefix=$1 what=$2 log=/tmp/budget-strace.$node rc=0 trace=()
  shift 2
  rm -f "$prefix.malloc" "$prefix.failed" "$prefix.stacks"
  [[ -n ${RDMASTREAM_BUDGET_TRACE:-} ]] \
    && trace=(-E MALLOC_COUNT_TRACE="$RDMASTREAM_BUDGET_TRACE" -E MALLOC_COUNT_TRACE_OUT="$prefix.stacks")
  timed "$prefix" strace -f -qq -y -x -s 8 -o "$log" -E LD_PRELOAD="$preload" -E MALLOC_COUNT_OUT="$prefix.malloc" \
    -E MALLOC_COUNT_WINDOW_FROM="$warm_up" -E G_SLICE=always-malloc "${trace[@]}" "$@" || rc=$?
  count_syscalls "$log" "$prefix.sys" "$prefix.win"
  rm -f "$log"
  if ((rc != 0)); then
    printf '%s exited %s: %s\n' "$what" "$rc" "$(grep -v '^$' "$prefix.log" | tail -n 1)" >"$prefix.failed"
    say "WARNING: $(cat "$prefix.failed") (the run goes on; see $prefix.log)" >&2
  fi
}

total=$((2 * ${#polls[@]} * 2)) k=0 port=21000
for kind in cli gst; do
  for poll in "${polls[@]}"; do
    for n in "$n1" "$n2"; do
      k=$((k + 1)) port=$((port + 1))
      p=$raw/$kind.$poll.$n.node$node
      ((node == 1)) && say "[$k/$total] $kind, $poll polling, $n frames of $name"
      case $kind.$node in
        cli.0)
          traced "$p" "rdmarecv" "$build/receiver/rdmarecv" --listen "$addr:$port" --null -q --poll "$poll" \
            --connect-timeout 90 --stats-json "$p.json"
          ;;
        cli.1)
          traced "$p" "rdmasend" "$build/sender/rdmasend" "/tmp/bench-$name.y4m" --loop --frames "$n" \
            --connect "$addr:$port" -q --poll "$poll" --connect-timeout 90 --stats-json "$p.json"
          ;;
        gst.0)
          traced "$p" "rdmasrc pipeline" gst-launch-1.0 -q rdmasrc host="$addr" port="$port" poll-mode="$poll" \
            ! fakesink
          ;;
        gst.1)
          traced "$p" "rdmasink pipeline" gst-launch-1.0 -q videotestsrc pattern=black num-buffers="$n" ! "$caps" \
            ! rdmasink host="$addr" port="$port" poll-mode="$poll" connect-timeout=90000
          ;;
      esac
      if ((node == 1)); then
        read -r u s w <"$p.time"
        say "[$k/$total] done: ${w} s wall under strace, sender CPU ${u} s user ${s} s sys"
      fi
    done
  done
done
say "node $node: all $total steps done"
