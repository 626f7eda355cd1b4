#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# when-file.sh FILE CMD [ARGS...]: runs CMD once FILE exists (at most 120 s
# of waiting), for a peer that must start only after an event another
# process marks with a file (run-and-kill.sh's SIGNALLED). A ';' cannot go
# through a ctest argument, so the wait lives here.
file=$1
shift
i=0
until [ -e "$file" ]; do
  i=$((i + 1))
  [ $i -le 1200 ] || { echo "when-file: $file never appeared" >&2; exit 1; }
  sleep 0.1
done
exec "$@"
