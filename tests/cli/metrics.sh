#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# --metrics during a stream, in one guest (both programs on its loopback):
# a fan-out rdmasend (--receivers 2, --metrics) streams a test source to two
# rdmarecv --null, one of them with --metrics; a third receiver joins,
# takes 15 frames and leaves. Both endpoints are scraped twice while the
# stream runs (curl), then (tests/cli/metrics-check.py, one Python run on
# the host after the job, `metrics.sh check`: Python takes ~5 s to start in
# a TCG guest):
#  * the text parses with prometheus_client's parsers (Prometheus text, and
#    OpenMetrics, strict, for the scrape that asks for it);
#  * the counters rose between the two scrapes, on both programs;
#  * the sender has a series per receiver, the one that left included
#    (rdmastream_receiver_connected 0, its frames kept);
#  * a second program on a port in use is refused at start-up, by name;
#  * the receiver serving metrics allocates no more while frames flow than
#    the one without (libmalloc_count.so, SIGUSR2 at the start and the end
#    of a 3 s stretch without scrapes; a scrape allocates on the HTTP
#    thread, per scrape, which is why none falls in the stretch).
# The sender runs until it is interrupted (exit 130), so a slow guest only
# makes the test longer.
#   metrics.sh BINDIR BUILDDIR   |   metrics.sh check
set -u
out=$RDMABED_OUT
if [ "$1" = check ]; then
  # Debian's Python, which has python3-prometheus-client.
  exec /usr/bin/python3 "$(dirname "$0")/metrics-check.py" all "$out/recv-1.txt" "$out/recv-2.txt" \
    "$out/recv-om.txt" "$out/send-1.txt" "$out/send-2.txt" "$out/recv-metrics.malloc" "$out/recv-plain.malloc"
fi
bin=$1 build=$2
addr=$RDMABED_SERVER_ADDR
port=18690
# scrape URL FILE [openmetrics]: GET URL into FILE, checking its Content-Type.
scrape() {
  if [ "${3:-}" = openmetrics ]; then
    accept='application/openmetrics-text; version=1.0.0' want='application/openmetrics-text'
  else
    accept='*/*' want='text/plain; version=0.0.4' # what a plain Prometheus scrape gets
  fi
  kind=$(curl -sS --max-time 10 -H "Accept: $accept" -o "$2" -w '%{content_type}' "$1") || return 1
  case $kind in "$want"*) ;; *) echo "FAIL: $1: Content-Type '$kind', want $want"; return 1 ;; esac
}
preload=$build/bench/libmalloc_count.so
status=0
fail() { echo "FAIL: $*"; status=1; }
pids=
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; }
trap cleanup EXIT

# wait_for FILE REGEX WHAT: until FILE matches (60 s at most).
wait_for() {
  i=0
  until grep -Eq "$2" "$1" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 600 ]; then
      fail "$3: not within 60 s; $1 says:"; cat "$1"; exit 1
    fi
    sleep 0.1
  done
}

"$bin/rdmasend" 'lavfi:testsrc2=size=64x64:rate=30' --listen=:$port --receivers 2 --fps 30 -q \
  --metrics 127.0.0.1:19465 --stats-json "$out/metrics-send.json" 2>"$out/metrics-send.log" &
sender=$! pids="$pids $!"
wait_for "$out/metrics-send.log" 'metrics at http://127.0.0.1:19465/metrics' "the sender's metrics endpoint"
# Serving while it waits for its receivers: all zeros.
scrape http://127.0.0.1:19465/metrics "$out/send-0.txt" || fail "no scrape of the waiting sender"
grep -q '^rdmastream_frames_total 0$' "$out/send-0.txt" || fail "the waiting sender's frames are not 0"

LD_PRELOAD=$preload MALLOC_COUNT_OUT=$out/recv-metrics.malloc \
  "$bin/rdmarecv" --connect "$addr:$port" --null -q --metrics 19464 --stats-json "$out/metrics-recv.json" \
  2>"$out/metrics-recv.log" &
recv_m=$! pids="$pids $!"
LD_PRELOAD=$preload MALLOC_COUNT_OUT=$out/recv-plain.malloc \
  "$bin/rdmarecv" --connect "$addr:$port" --null -q 2>"$out/plain-recv.log" &
recv_p=$! pids="$pids $!"
wait_for "$out/metrics-send.log" 'connected: streaming' "the sender streaming to 2 receivers"
wait_for "$out/metrics-recv.log" 'metrics at http://127.0.0.1:19464/metrics' "the receiver's metrics endpoint"
sleep 2 # a stats tick or two: frames in the first scrape

# A port in use: refused at start-up, naming the port, exit status 2.
"$bin/rdmarecv" --listen :18699 --null --metrics 19464 2>"$out/taken.log"
taken=$?
if [ $taken -eq 2 ] && grep -q 'rdmarecv: --metrics 19464: cannot listen on 127.0.0.1:19464: the port is in use' "$out/taken.log"; then
  echo "ok taken port: $(cat "$out/taken.log")"
else
  fail "a second rdmarecv on the metrics port exited $taken: $(cat "$out/taken.log")"
fi

scrape http://127.0.0.1:19464/metrics "$out/recv-1.txt" || fail "first scrape of the receiver"
scrape http://127.0.0.1:19465/metrics "$out/send-1.txt" || fail "first scrape of the sender"
# The stretch without scrapes: heap calls of both receivers at its ends.
kill -USR2 $recv_m $recv_p
sleep 3
kill -USR2 $recv_m $recv_p

# A third receiver joins, takes 15 frames and leaves.
"$bin/rdmarecv" --connect "$addr:$port" --null --frames 15 -q 2>"$out/late-recv.log" ||
  fail "the late rdmarecv exited $? (see $out/late-recv.log)"
wait_for "$out/metrics-send.log" 'receiver [^ ]* left after [0-9]+ frames: it has every frame it wants' "the sender noticing the late receiver leave"
sleep 2 # a tick after it left
scrape http://127.0.0.1:19464/metrics "$out/recv-2.txt" || fail "second scrape of the receiver"
scrape http://127.0.0.1:19465/metrics "$out/send-2.txt" || fail "second scrape of the sender"
scrape http://127.0.0.1:19464/metrics "$out/recv-om.txt" openmetrics || fail "OpenMetrics scrape"

kill -INT $sender
wait $sender
rc=$?
[ $rc -eq 130 ] || fail "rdmasend exited $rc after Ctrl-C, want 130 (see $out/metrics-send.log)"
wait $recv_m || fail "the rdmarecv with --metrics exited $? (see $out/metrics-recv.log)"
wait $recv_p || fail "the rdmarecv without exited $? (see $out/plain-recv.log)"
pids=
cat "$out/metrics-send.log"

[ $status -eq 0 ] && echo "ok metrics: both endpoints scraped during the stream (checked on the host next)"
exit $status
