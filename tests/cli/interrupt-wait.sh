#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Ctrl-C while rdmasend waits for its receiver(s) ends the wait at once
# (the SIGINT handler wakes the Sender's Waker), on one node of the test
# bed: listening for one receiver, listening for a fan-out, and dialling a
# port where nothing listens yet. Each must exit 130 within 5 s of the
# SIGINT, saying it was interrupted, though its --connect-timeout is 120 s.
#   interrupt-wait.sh BINDIR CLIPDIR
set -u
bin=$1 clips=$2
failures=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT

# interrupted NAME READY-REGEX WANT-REGEX -- COMMAND...: runs COMMAND until
# its stderr matches READY-REGEX (it is waiting), then sends SIGINT.
# Deadlines by the clock: under TCG a poll step takes far more than its sleep.
interrupted() {
  name=$1 ready=$2 want=$3
  shift 4
  "$@" 2>"$err" &
  pid=$!
  until=$(($(date +%s) + 30))
  until grep -Eq -- "$ready" "$err" || [ "$(date +%s)" -ge $until ]; do sleep 0.1; done
  if ! grep -Eq -- "$ready" "$err"; then
    kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    echo "FAIL $name: never waiting (/$ready/):"; cat "$err"; failures=$((failures + 1)); return
  fi
  sleep 0.5 # into the wait itself, past the line that announces it
  kill -INT "$pid"
  until=$(($(date +%s) + 5))
  while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt $until ]; do sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    echo "FAIL $name: still waiting 5 s after SIGINT:"; cat "$err"; failures=$((failures + 1)); return
  fi
  wait "$pid"
  rc=$?
  if [ "$rc" -ne 130 ] || ! grep -Eq -- "$want" "$err"; then
    echo "FAIL $name: exit $rc (want 130) and /$want/ in:"; cat "$err"; failures=$((failures + 1)); return
  fi
  echo "ok $name (exit $rc): $(tail -1 "$err")"
}

S=$bin/rdmasend C=$clips/h264.mp4 A=$RDMABED_SERVER_ADDR
# Started in the background by a shell, so SIGINT starts out ignored:
# only rdmasend's own handler can end the wait.
interrupted listen_one 'rdmasend: listening on' 'rdmasend: interrupted while waiting for the receiver$' -- \
  "$S" "$C" --listen=:18693 --connect-timeout 120
interrupted listen_fanout 'rdmasend: listening on' 'rdmasend: interrupted while waiting for the receivers$' -- \
  "$S" "$C" --listen=:18694 --receivers 2 --connect-timeout 120
interrupted dial 'rdmasend: .*h264.mp4: stream' 'rdmasend: interrupted while waiting for the receiver$' -- \
  "$S" "$C" --connect "$A:18695" --connect-timeout 120
[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "every wait for a receiver ended at Ctrl-C"
