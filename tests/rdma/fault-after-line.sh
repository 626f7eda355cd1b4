#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# fault-after-line.sh LOG PID PATTERN SECONDS FAULT DEVICE: once LOG shows
# PATTERN (an extended regex; looked for ten times a second, at most 60 s,
# and only while process PID runs), SECONDS more of streaming, then
# fabric-fault.sh's FAULT on DEVICE on this node. The two-path tests' steps
# (tests/cli/two-paths.sh, tests/gst/two-paths.sh): each waits for the
# stream end's own line, not a clock. Exit 1, saying why, if PATTERN never
# came or the process ended first.
set -uo pipefail
log=$1 pid=$2 pattern=$3 seconds=$4 fault=$5 dev=$6
for _ in $(seq 600); do
  grep -Eq -- "$pattern" "$log" && exec "$(dirname "$0")/fabric-fault.sh" "$seconds" "$fault" "$dev"
  kill -0 "$pid" 2>/dev/null || { echo "fault-after-line: the process ended before its log said '$pattern'"; exit 1; }
  sleep 0.1
done
echo "fault-after-line: its log never said '$pattern' within 60 s"
exit 1
