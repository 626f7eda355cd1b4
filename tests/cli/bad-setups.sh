#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Connection set-ups that cannot work, on one node of the test bed: each
# must end within its timeout in one line naming the cause and the fix,
# with a non-zero exit status, and leave nothing running.
#   bad-setups.sh BINDIR CLIPDIR
set -u
bin=$1 clips=$2
failures=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT

expect() { # NAME REGEX -- COMMAND...
  name=$1 regex=$2
  shift 3
  timeout 30 "$@" >/dev/null 2>"$err"
  rc=$?
  if [ "$rc" -eq 124 ]; then echo "FAIL $name: still running after 30 s"; failures=$((failures + 1)); return; fi
  if [ "$rc" -eq 0 ]; then echo "FAIL $name: exit status 0"; failures=$((failures + 1)); return; fi
  if ! grep -Eq -- "$regex" "$err"; then
    echo "FAIL $name: message does not match /$regex/:"; cat "$err"; failures=$((failures + 1)); return
  fi
  echo "ok $name (exit $rc): $(tail -1 "$err")"
}

S=$bin/rdmasend R=$bin/rdmarecv C=$clips/h264.mp4 A=$RDMABED_SERVER_ADDR
expect send_refused 'rdmasend: .*cannot connect to .*nothing listens there' -- "$S" "$C" --connect "$A:18670" --connect-timeout 2
expect recv_refused 'rdmarecv: .*cannot connect to .*nothing listens there' -- "$R" --null --connect "$A:18670" --connect-timeout 2
expect send_unreachable 'rdmasend: .*cannot connect to 198.18.0.99.*no answer' -- "$S" "$C" --connect 198.18.0.99 --connect-timeout 2

# Port in use: a first rdmarecv holds the port; a second one must say so.
"$R" --null --listen :18671 --connect-timeout 60 2>"$err.first" &
first=$!
i=0
until grep -q 'listening on' "$err.first" || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
expect recv_port_in_use 'rdmarecv: .*(in use|EADDRINUSE)' -- "$R" --null --listen :18671
kill "$first" 2>/dev/null
wait "$first" 2>/dev/null
rm -f "$err.first"
# Nothing of ours may outlive the checks.
if pgrep -x rdmarecv >/dev/null || pgrep -x rdmasend >/dev/null; then
  echo "FAIL: left running: $(pgrep -a -x rdmarecv; pgrep -a -x rdmasend)"; failures=$((failures + 1))
fi
[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all bad set-ups explained"
