#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# mark-done.sh FILE CMD [ARGS...]: runs CMD (its output passes through), then
# makes FILE, whatever CMD's status, and exits with that status. A peer that
# must last until this command's verdict is in waits for FILE instead of a
# fixed time (run-and-kill.sh's HOLD_UNTIL, listen-on.sh).
file=$1
shift
"$@"
rc=$?
: >"$file"
exit "$rc"
