#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# expect-output.sh REGEX CMD [ARGS...]: runs CMD (its output passes through)
# and fails unless it exits 0 and a line of its output matches REGEX
# (grep -E): for a success that must also say something, as a fan-out
# sender naming the receiver it cut. COUNT=N (env): at least N lines must.
regex=$1
count=${COUNT:-1}
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" >"$log" 2>&1
rc=$?
cat "$log"
[ $rc -eq 0 ] || { echo "expect-output: '$1' exited $rc" >&2; exit 1; }
matched=$(grep -Ec -- "$regex" "$log")
[ "$matched" -ge "$count" ] || { echo "expect-output: $matched line(s) match /$regex/, not $count" >&2; exit 1; }
echo "expect-output: ok, /$regex/ matched $matched line(s)"
