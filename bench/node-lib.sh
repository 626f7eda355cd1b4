# shellcheck shell=bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Helpers for the benchmark scripts that run on a test-bed node
# (bench/paths-node.sh, bench/budget-node.sh). Sourced, not run.
#
# Every command runs under `timeout` (a peer that died must not hang the
# other node) and `/usr/bin/time` (user and system CPU seconds of exactly
# that command, its threads and children included).

step_timeout=${BENCH_STEP_TIMEOUT:-180} # seconds one command may take

say() { printf '%s: %s\n' "${BENCH_NAME:-bench}" "$*"; }
fail() { say "FAILED: $*" >&2; exit 1; }

# Background jobs die with the script, whatever ends it.
kill_jobs() {
  local p
  for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
}
trap kill_jobs EXIT
trap 'say "interrupted"; exit 130' INT
trap 'say "terminated"; exit 143' TERM

# timed PREFIX CMD...: runs CMD with stdout+stderr into PREFIX.log and
# "user sys wall" seconds into PREFIX.time. Returns CMD's status.
timed() {
  local prefix=$1
  shift
  timeout -k 5 "$step_timeout" /usr/bin/time -f '%U %S %e' -o "$prefix.time" "$@" >"$prefix.log" 2>&1
}

# run_or_fail PREFIX WHAT CMD...: timed, and on failure the end of its log
# and the script's exit.
run_or_fail() {
  local prefix=$1 what=$2 rc=0
  shift 2
  timed "$prefix" "$@" || rc=$?
  if ((rc != 0)); then
    [[ $rc == 124 || $rc == 137 ]] && what="$what (timed out after $step_timeout s)"
    say "---- last lines of $prefix.log ----" >&2
    tail -n 15 "$prefix.log" >&2
    fail "$what exited $rc: $*"
  fi
}

# retry_connect PREFIX WHAT PATTERN CMD...: for clients that do not retry by
# themselves (ib_write_bw, tcpclientsink): while CMD fails with output
# matching PATTERN (its peer does not listen yet), run it again, for at
# most 60 s. The only other event is the peer's listen on another node (or
# guest), which nothing here can see: this is the bounded way to wait for it.
retry_connect() {
  local prefix=$1 what=$2 pattern=$3 rc deadline=$((SECONDS + 60))
  shift 3
  for (( ; ; )); do
    rc=0
    timed "$prefix" "$@" || rc=$?
    ((rc == 0)) && return 0
    if ((SECONDS < deadline)) && grep -Eq "$pattern" "$prefix.log"; then
      sleep 0.2 # (see above) the peer is not listening yet
      continue
    fi
    say "---- last lines of $prefix.log ----" >&2
    tail -n 15 "$prefix.log" >&2
    fail "$what exited $rc: $*"
  done
}

# GStreamer in a guest scans its registry afresh at each boot (HOME is on
# tmpfs): a folder with links to just the system plugins used keeps that
# short. Sets the GST_* variables and scans once, outside any measurement.
gst_setup() { # PLUGIN-DIR... (ours: the rdma plugin, the benchrate tracer)
  local sys d p
  sys=$(pkg-config --variable=pluginsdir gstreamer-1.0 2>/dev/null || echo /usr/lib/x86_64-linux-gnu/gstreamer-1.0)
  d=/tmp/bench-gst-plugins.$RDMABED_NODE
  mkdir -p "$d"
  for p in coreelements videotestsrc tcp; do
    [[ -e $sys/libgst$p.so ]] || fail "no GStreamer plugin $sys/libgst$p.so (scripts/setup.sh installs it)"
    ln -sfn "$sys/libgst$p.so" "$d/libgst$p.so"
  done
  export GST_PLUGIN_SYSTEM_PATH_1_0=$d
  GST_PLUGIN_PATH_1_0=$(
    IFS=:
    echo "$*"
  )
  export GST_PLUGIN_PATH_1_0
  export GST_REGISTRY_1_0=/tmp/bench-gst-registry.$RDMABED_NODE.bin
  gst-inspect-1.0 rdmasrc >/dev/null 2>&1 || fail "GStreamer cannot load rdmasrc from $GST_PLUGIN_PATH_1_0"
}

# size_caps NAME: "BYTES FORMAT WIDTH HEIGHT FFMPEG-PIXFMT" of a named frame size.
size_caps() {
  case $1 in
    64k) echo "65536 GRAY8 256 256 gray" ;;
    1080p) echo "3110400 I420 1920 1080 yuv420p" ;;
    4k) echo "12441600 I420 3840 2160 yuv420p" ;;
    *) fail "unknown frame size '$1' (64k, 1080p or 4k)" ;;
  esac
}
