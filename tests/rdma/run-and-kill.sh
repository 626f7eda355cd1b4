#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# run-and-kill.sh SIGNAL PATTERN DELAY CMD [ARGS...]
# Starts CMD, waits (at most 60 s) until its output shows PATTERN, lets it run
# DELAY more seconds, then sends SIGNAL (KILL, STOP, ...) to it: the peer
# killed or frozen mid-stream for the failure tests. Exits 0 once the signal
# is sent and, for STOP, the process is killed after HOLD seconds (env, 30)
# or, with HOLD_UNTIL=FILE (env), as soon as FILE exists (the peer's verdict
# is in: tests/rdma/mark-done.sh), HOLD being then the cap.
# SIGNALLED (env): a file made once the signal is sent, for a peer that must
# start only then.
set -uo pipefail
sig=$1 pattern=$2 delay=$3
shift 3
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" >"$log" 2>&1 &
pid=$!
for _ in $(seq 300); do
  grep -q -- "$pattern" "$log" && break
  kill -0 "$pid" 2>/dev/null || { cat "$log"; echo "run-and-kill: '$1' ended before printing /$pattern/" >&2; exit 1; }
  sleep 0.2
done
grep -q -- "$pattern" "$log" || { cat "$log"; kill -KILL "$pid"; echo "run-and-kill: no /$pattern/ within 60 s" >&2; exit 1; }
sleep "$delay"
cat "$log"
echo "run-and-kill: sending SIG$sig to $1 (pid $pid)"
kill -"$sig" "$pid"
[ -n "${SIGNALLED:-}" ] && touch "$SIGNALLED"
if [ "$sig" = STOP ]; then
  end=$((SECONDS + ${HOLD:-30}))
  while [ "$SECONDS" -lt "$end" ]; do
    [ -n "${HOLD_UNTIL:-}" ] && [ -e "$HOLD_UNTIL" ] && break
    sleep 0.1
  done
  kill -KILL "$pid"
fi
wait "$pid" 2>/dev/null
exit 0
