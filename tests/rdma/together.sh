#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# together.sh 'CMD' 'CMD' ...
# Runs each shell command at the same time and waits for all; fails (with
# the first failure's status) if any fails. For tests with several peers on
# one node (ctest arguments cannot hold a ';').
set -u
pids=()
for cmd in "$@"; do
  sh -c "$cmd" &
  pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"
  rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "together: '${*:$((i + 1)):1}' exited $rc" >&2
    [ "$status" -eq 0 ] && status=$rc
  fi
done
exit "$status"
