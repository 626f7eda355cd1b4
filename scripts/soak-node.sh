#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# One node of scripts/soak.sh (run by rdmabed; see soak.sh for the plan).
#   soak-node.sh send BINDIR CLIP MINUTES   node 0: the fan-out sender
#   soak-node.sh recv BINDIR CLIP MINUTES   node 1: the receivers
# Both sample their long-lived processes every 10 s into
# RDMABED_OUT/soak-samples-ROLE.txt (t pid rss_kb fds mrs pinned_kb); node 1
# checks every frame and writes soak-report.txt.
set -u
side=$1 bin=$2 clip=$3 minutes=$4
export PATH="$PATH:/usr/sbin:/sbin"
out=$RDMABED_OUT
at=$RDMABED_SERVER_ADDR:18900
fps=20
frames=$((minutes * 60 * fps))
hashes=$clip.hashes
status=0
fail() { echo "FAIL: $*"; status=1; }
# The NIC's own counts (RNR NAKs, sequence errors, retries), printed after
# a failure: what it looked like on the wire, beside the programs' words.
nic_counters() {
  for c in /sys/class/infiniband/*/ports/1/hw_counters; do
    [ -d "$c" ] || continue
    echo "counters of $c: $(cd "$c" && grep -H . * | tr '\n' ' ')"
  done
}

# sample NAME PID: one line every 10 s while PID lives.
sample() {
  t0=$(date +%s)
  while kill -0 "$2" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$2/status" 2>/dev/null)
    pin=$(awk '/^VmPin:/ {print $2}' "/proc/$2/status" 2>/dev/null)
    fds=$(ls "/proc/$2/fd" 2>/dev/null | wc -l)
    mrs=$(rdma res show mr 2>/dev/null | grep -c " pid $2 ")
    [ -n "$rss" ] && echo "$(($(date +%s) - t0)) $2 $rss $fds $mrs ${pin:-0}" >>"$out/soak-samples-$1.txt"
    sleep 10
  done
}

if [ "$side" = send ]; then
  "$bin/rdmasend" "$clip" --listen=:18900 --receivers 2 --loop --fps $fps --frames $frames -q \
    --connect-timeout 300 --stats-json "$out/soak-send.json" 2>"$out/soak-send.log" &
  sender=$!
  sample sender $sender &
  wait $sender || { fail "rdmasend exited $?"; tail -5 "$out/soak-send.log"; }
  wait
  echo "soak: the sender sent $frames frames to $(grep -c 'joined' "$out/soak-send.log") receivers in turn"
  [ $status -eq 0 ] || nic_counters
  exit $status
fi

"$bin/rdmarecv" --connect "$at" --framemd5 "$out/soak-lossless.md5" -q --connect-timeout 300 \
  --stats-json "$out/soak-lossless.json" 2>"$out/soak-lossless.log" &
lossless=$!
"$bin/rdmarecv" --connect "$at" --policy live --framemd5 "$out/soak-live.md5" -q --connect-timeout 300 \
  --stats-json "$out/soak-live.json" 2>"$out/soak-live.log" &
live=$!
sample lossless $lossless &
sample live $live &

# Every minute (the first at 30 s): the live receiver stops for 3 s.
(
  sleep 30
  while kill -0 $live 2>/dev/null; do
    kill -STOP $live 2>/dev/null && echo "$(date +%T) stopped the live receiver" >>"$out/soak-stops.txt"
    sleep 3
    kill -CONT $live 2>/dev/null
    sleep 57
  done
) &
stopper=$!

# Progress, a line a minute: the run's time and the lossless receiver's frames.
(
  t0=$(date +%s)
  while sleep 60 && kill -0 $lossless 2>/dev/null; do
    t=$(($(date +%s) - t0))
    got=$(grep -vc '^#' "$out/soak-lossless.md5" 2>/dev/null || echo 0)
    echo "soak: [$((t / 60)) of $minutes min, $((t * 100 / (minutes * 60))) %] the lossless receiver has $got of $frames frames"
  done
) &
progress=$!

# Receivers join, take 100 frames and leave, one after another, while the
# stream runs (the last one may find the stream ended: that is no failure).
# The first joins only once both receivers the sender waits for are
# connected: a joiner first would be taken for one of them (under load the
# lossless receiver took over 5 s to connect, and so missed frame 0).
for _ in $(seq 600); do
  grep -q 'sender connected' "$out/soak-lossless.log" 2>/dev/null \
    && grep -q 'sender connected' "$out/soak-live.log" 2>/dev/null && break
  sleep 0.5
done
n=0
sleep 2
while kill -0 $lossless 2>/dev/null; do
  n=$((n + 1))
  "$bin/rdmarecv" --connect "$at" --frames 100 --framemd5 "$out/soak-join-$n.md5" -q --connect-timeout 20 \
    2>"$out/soak-join-$n.log"
  rc=$?
  if [ $rc -ne 0 ] && kill -0 $lossless 2>/dev/null; then
    fail "joiner $n exited $rc while the stream ran: $(tail -1 "$out/soak-join-$n.log")"
  fi
  sleep 2
done
wait $lossless || fail "the lossless receiver exited $?: $(tail -1 "$out/soak-lossless.log")"
kill -CONT $live 2>/dev/null
wait $live || fail "the live receiver exited $?: $(tail -1 "$out/soak-live.log")"
kill $stopper $progress 2>/dev/null
wait

# Every frame is the clip's frame of its index (pts / duration, modulo the
# clip's length), whichever receiver took it.
check() { # FILE: prints "got bad first last"
  grep -v '^#' "$1" | awk -F', *' -v hashes="$hashes" '
    BEGIN { while ((getline h < hashes) > 0) ref[n++] = h }
    { i = int($2 / $4); got++; if ($6 != ref[i % n]) bad++; if (got == 1) first = i; last = i }
    END { printf "%d %d %d %d\n", got, bad, first, last }'
}
report=$out/soak-report.txt
{
  echo "soak: $minutes minute(s), topology $RDMABED_TOPOLOGY, $frames frames at $fps frames/s"
  set -- $(check "$out/soak-lossless.md5")
  if [ "$1" -eq $frames ] && [ "$2" -eq 0 ] && [ "$3" -eq 0 ] && [ "$4" -eq $((frames - 1)) ]; then
    echo "ok lossless receiver: all $frames frames bit-exact, in order"
  else
    fail "lossless receiver: $1 frames (want $frames), $2 differ, first $3, last $4"
  fi
  set -- $(check "$out/soak-live.md5")
  stops=$(wc -l <"$out/soak-stops.txt" 2>/dev/null || echo 0)
  if [ "$1" -ge 1 ] && [ "$2" -eq 0 ]; then
    echo "ok live receiver: $1 of $frames frames, each intact, through $stops stop(s) of 3 s"
  else
    fail "live receiver: $1 frames, $2 differ"
  fi
  joined=0 bad=0
  for f in "$out"/soak-join-*.md5; do
    [ -s "$f" ] || continue
    set -- $(check "$f")
    joined=$((joined + 1)) bad=$((bad + $2))
  done
  if [ $joined -ge 1 ] && [ $bad -eq 0 ]; then echo "ok joiners: $joined joined, took their frames intact and left"
  else fail "joiners: $joined joined, $bad frames differ"; fi
  # Slopes from the second minute on (least squares, per minute), each
  # long-lived process; the receivers' fds, regions and pinned memory must
  # not change at all once streaming.
  for role in sender lossless live; do
    f=$out/soak-samples-$role.txt
    [ -s "$f" ] || { echo "(no samples of the $role)"; continue; }
    # (The last sample may catch the process tearing down: left out.)
    awk -v role=$role '
      $1 >= 60 { m++; for (k = 1; k <= 6; k++) v[m, k] = $k }
      END {
        n = m - 1
        if (n < 2) { printf "%s: %d samples after the first minute: no slope\n", role, n; exit }
        split("rss_kB fds regions pinned_kB", name, " ")
        line = role ":"
        for (k = 3; k <= 6; k++) {
          sx = sy = sxx = sxy = 0; lo = hi = v[1, k]
          for (i = 1; i <= n; i++) {
            x = v[i, 1]; y = v[i, k]; sx += x; sy += y; sxx += x * x; sxy += x * y
            if (y < lo) lo = y; if (y > hi) hi = y
          }
          d = n * sxx - sx * sx; slope = d == 0 ? 0 : (n * sxy - sx * sy) / d * 60
          line = line sprintf(" %s %g..%g (%+.1f/min)", name[k - 2], lo, hi, slope)
          if (role != "sender" && k > 3 && lo != hi) grew = grew " " name[k - 2]
        }
        print line
        if (grew != "") print "FAIL: " role " changed after the first minute:" grew
      }' "$f"
  done
} >"$report" 2>&1
cat "$report"
grep -q '^FAIL' "$report" && status=1
[ $status -eq 0 ] && echo "soak: passed"
[ $status -eq 0 ] || nic_counters
exit $status
