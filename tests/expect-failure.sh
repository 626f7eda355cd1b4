#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# expect-failure.sh REGEX CMD [ARGS...]
# Passes when CMD fails AND its output matches REGEX: a deliberate fault must
# be caught, and caught for the right reason. Output is passed through. A
# sanitizer report (scripts/test-sanitize.sh) or a teardown-order failure
# (a verbs object destroyed before its children) is never the expected failure.
set -uo pipefail
regex=$1
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -eq 0 ]; then
    echo "expect-failure: '$*' succeeded, but it was meant to fail with /$regex/" >&2
    exit 1
fi
if grep -Eq -- 'ERROR: (Address|Leak)Sanitizer|SUMMARY: UndefinedBehaviorSanitizer|: runtime error: ' "$log"; then
    echo "expect-failure: failed (status $status) with a sanitizer report, which no test expects" >&2
    exit 1
fi
if grep -Eq -- 'rdmastream: (ibv|rdma)_[a-z_]+ failed: .*\(a child object is still alive\)' "$log"; then
    echo "expect-failure: a verbs object was destroyed before its children (teardown order), which no test expects" >&2
    exit 1
fi
if ! grep -Eq -- "$regex" "$log"; then
    echo "expect-failure: failed (status $status) but the output does not explain it with /$regex/" >&2
    exit 1
fi
echo "expect-failure: failed as expected (status $status), output matches /$regex/"
