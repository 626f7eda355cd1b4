#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# listen-on.sh DONE-FILE LIMIT CMD [ARGS...]
# For a listener that must refuse a hostile peer and listen on: runs CMD
# (its output passes through) until the peer's command has ended (DONE-FILE,
# made by mark-done.sh) or LIMIT seconds have passed. If CMD is still
# listening then, as it must be, it is stopped (SIGINT; TERM and KILL 3 s
# apart if it does not end) and this exits 1 saying so: the test expects that failure and the refusal's line
# (EXPECT_FAILURE). If CMD ended by itself before, this exits 2 with its
# status: a listener that a peer ended is the bug these tests look for.
# The old form waited out the listener's own timeout (30 s) every time.
set -uo pipefail
done_file=$1 limit=$2
shift 2
"$@" &
pid=$!
end=$((SECONDS + limit))
while ((SECONDS < end)) && [[ ! -e $done_file ]]; do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if ! kill -0 "$pid" 2>/dev/null; then
  wait "$pid"
  rc=$?
  echo "listen-on: the listener ended by itself (status $rc) while it should listen on: '$1'" >&2
  exit 2
fi
# The refusal's line is printed before the peer hears it; give the
# listener a moment to go back to listening, then stop it as a user would.
sleep 0.5
kill -0 "$pid" 2>/dev/null || { wait "$pid"; echo "listen-on: the listener ended after the peer (status $?): '$1'" >&2; exit 2; }
# Stopped as a user would, Ctrl-C first; a program that leaves SIGINT to a
# wait it does not interrupt (rdma-ring-check's accept) gets TERM, then KILL.
why="$([[ -e $done_file ]] && echo "the peer had ended" || echo "$limit s had passed")"
for sig in INT TERM KILL; do
  kill -"$sig" "$pid" 2>/dev/null
  for _ in {1..30}; do
    kill -0 "$pid" 2>/dev/null || break 2
    sleep 0.1
  done
done
wait "$pid"
echo "listen-on: the listener refused its peer and listened on; stopped with SIG$sig (status $?) once $why"
exit 1
