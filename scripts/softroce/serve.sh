# shellcheck shell=bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# rdmabed serve: guests that stay up and run one job after another, so that a
# test suite pays for one boot per topology instead of one per test (a boot
# is 6-10 s under TCG, and the suite runs ~100 RDMA tests). Sourced by
# rdmabed, whose functions (prepare, boot_guests, write_boot_env,
# write_job_env, teardown_failures, describe, ...) it uses.
#
#   rdmabed serve start --topology one|two --dir DIR [--beds N]   boot, wait until ready
#   rdmabed serve stop  --topology one|two --dir DIR   power the guests off
#   rdmabed ... --node0 CMD   with env RDMABED_SERVE=DIR: run as a job there
#
# --beds N: N beds of the topology side by side (DIR/TOPOLOGY, DIR/TOPOLOGY.1,
# ...), each its own guest(s) and daemon; a job takes whichever bed is free,
# so N tests can run at once (ctest -j N). Each bed folder holds the daemon (daemon.pid, serve.log), one share per guest
# (gN/: job.sh for the boot, qemu.pid, console.log, ready once it serves,
# go naming the next job, jobs/ID/ with that job's job.sh, nodeN.log,
# status.nodeN, dmesg.txt, finished) and out/ID/, each job's $RDMABED_OUT
# (mounted in the guests at the same path). One job at a time per bed (flock
# on its lock file). The guest's side is guest-init.sh's serve_loop: before
# a job it re-creates rxe0 at the job's MTU on a fresh /tmp and HOME; after
# it, it kills every process and removes netem and the device. A guest that
# dies, or that a job leaves unusable, is booted anew by the daemon before
# the next job; the job it was running fails, naming why.

serve_idle_limit=${RDMABED_SERVE_IDLE:-1800} # s without a job: the daemon ends itself

serve_alive() { # DIR: its daemon runs
  local pid
  pid=$(cat "$1/daemon.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null
}

serve_bed_dir() { # K: bed K's folder
  if (($1 == 0)); then echo "$serve_dir/$topology"; else echo "$serve_dir/$topology.$1"; fi
}

serve_beds() { # the folders of this topology's beds that exist
  local d
  for d in "$serve_dir/$topology" "$serve_dir/$topology".[0-9]*; do
    [[ -d $d ]] && echo "$d"
  done
}

serve_any_alive() { # some bed of this topology serves
  local d
  for d in $(serve_beds); do serve_alive "$d" && return 0; done
  return 1
}

serve_guests() { # the guest numbers of this topology
  if [[ $topology == two ]]; then echo 0 1; else echo 0; fi
}

# serve_wait_ready DIR LIMIT: every guest of DIR powered up and serving
# (prints nothing; fails after LIMIT s or when the daemon is gone).
serve_wait_ready() {
  local d=$1 limit=$2 start=$SECONDS g ok pid
  while :; do
    ok=1
    for g in $(serve_guests); do
      pid=$(cat "$d/g$g/qemu.pid" 2>/dev/null) || { ok=0; break; }
      [[ -e $d/g$g/ready ]] && kill -0 "$pid" 2>/dev/null || { ok=0; break; }
    done
    ((ok)) && return 0
    serve_alive "$d" || return 1
    ((SECONDS - start < limit)) || return 1
    sleep 0.1
  done
}

serve_start() {
  if [[ $mode != guest ]] && { host_device >/dev/null || can_host_rxe; }; then
    log "host mode: there is an RDMA device here, so jobs run on it; nothing to serve"
    return 0
  fi
  local k d start=$SECONDS dirs=()
  for ((k = 0; k < serve_beds_wanted; k++)); do
    d=$(serve_bed_dir "$k")
    dirs+=("$d")
    if serve_alive "$d"; then
      log "already serving --topology $topology from $d"
      continue
    fi
    rm -rf "$d"
    mkdir -p "$d/out"
    setsid "$0" serve run --topology "$topology" --dir "$serve_dir" --bed "$k" --mode guest </dev/null >"$d/serve.log" 2>&1 &
    echo $! >"$d/daemon.pid"
  done
  for d in "${dirs[@]}"; do
    if ! serve_wait_ready "$d" 300; then
      log "error: the guests of --topology $topology ($d) did not come up within 300 s; $d/serve.log:"
      tail -n 40 "$d/serve.log" >&2
      local g
      for g in $(serve_guests); do
        [[ -s $d/g$g/console.log ]] && { log "---- guest $g console (last 40 lines) ----"; tail -n 40 "$d/g$g/console.log" >&2; }
      done
      serve_stop
      exit 3
    fi
  done
  log "serving --topology $topology from ${dirs[*]}: booted in $((SECONDS - start)) s"
}

serve_stop() {
  local d pid i any=0
  for d in $(serve_beds); do
    any=1
    : >"$d/stop"
    if pid=$(cat "$d/daemon.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null
      for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    local boots
    boots=$(grep -c '^rdmabed: boot ' "$d/serve.log" 2>/dev/null || true)
    log "stopped serving --topology $topology from $d (${boots:-0} boot(s), $(find "$d/g0/jobs" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l) job(s))"
  done
  ((any)) || log "nothing serves --topology $topology from $serve_dir"
}

# The daemon: boots the guests, and boots them again whenever one of them
# ends (a crash, or a job that left it unusable), until `serve stop` or
# serve_idle_limit seconds without a job.
serve_daemon() {
  local d g boots=0
  d=$(serve_bed_dir "$serve_bed")
  serving=1 guest_root=$d out_share=$d/out
  echo $$ >"$d/daemon.pid"
  prepare
  warm_gst_registry
  : >"$d/last-job"
  stop_guests() {
    local g
    for g in "${!gpid[@]}"; do kill "${gpid[$g]}" 2>/dev/null || true; done
    for g in "${!gpid[@]}"; do wait "${gpid[$g]}" 2>/dev/null || true; done
  }
  trap 'stop_guests; exit 0' TERM INT
  while [[ ! -e $d/stop ]]; do
    declare -gA gpid=()
    for g in $(serve_guests); do
      mkdir -p "$d/g$g/jobs"
      rm -f "$d/g$g/ready" "$d/g$g/go" "$d/g$g/qemu.pid"
      { write_boot_env "$g"; printf '%s=%q\n' RDMABED_SERVE 1 RDMABED_CWD "$cwd"; } >"$d/g$g/job.sh"
    done
    boots=$((boots + 1))
    log "boot $boots"
    boot_guests
    for g in "${!gpid[@]}"; do echo "${gpid[$g]}" >"$d/g$g/qemu.pid"; done
    local alive=1
    while ((alive)) && [[ ! -e $d/stop ]]; do
      for g in "${!gpid[@]}"; do kill -0 "${gpid[$g]}" 2>/dev/null || alive=0; done
      if (($(date +%s) - $(stat -c %Y "$d/last-job") > serve_idle_limit)); then
        log "no job for $serve_idle_limit s: stopping"
        : >"$d/stop"
      fi
      sleep 0.2
    done
    # One guest of two gone takes the other with it: the wire is theirs.
    stop_guests
    remove_wire_socks
    [[ -e $d/stop ]] || log "a guest ended; booting anew"
  done
  log "stopped after $boots boot(s)"
}

# serve_job: this run's node commands as one job of the served guests.
serve_job() {
  local d='' g n b
  local waited_from=$SECONDS
  # The first bed free (one job at a time each, by its lock).
  while [[ -z $d ]]; do
    for b in $(serve_beds); do
      serve_alive "$b" || continue
      exec 8>"$b/lock"
      if flock -n 8; then d=$b; break; fi
      exec 8>&-
    done
    [[ -n $d ]] && break
    if ((SECONDS - waited_from >= timeout)); then
      fail_line "no bed of --topology $topology in $serve_dir came free within $timeout s"
      return 1
    fi
    sleep 0.1
  done
  if ! serve_wait_ready "$d" "$timeout"; then
    fail_line "the served guests of --topology $topology ($d) are not up; see $d/serve.log"
    return 1
  fi
  local boot_wait=$((SECONDS - waited_from))
  local id
  id=$(date +%Y%m%d-%H%M%S)-$$
  local user_out=$out job_out=$d/out/$id
  mkdir -p "$job_out"
  out=$job_out # the job's RDMABED_OUT: the same path in the guests
  local -A qpid=()
  local gnodes
  for g in $(serve_guests); do
    mkdir -p "$d/g$g/jobs/$id"
    if [[ $topology == one ]]; then gnodes=("${nodes[@]}"); else gnodes=("$g"); fi
    {
      write_job_env "${gnodes[@]}"
      # The caller's --out, which node commands may name by its path: the
      # guest binds the job's out folder there (guest-init.sh, serve_loop).
      [[ -n $user_out ]] && printf 'RDMABED_OUT_AT=%q\n' "$user_out"
    } >"$d/g$g/jobs/$id/job.sh"
    qpid[$g]=$(cat "$d/g$g/qemu.pid")
  done
  : >"$d/last-job"
  # Stopped mid-job (ctest's timeout, Ctrl-C): the job must not run on into
  # the next one's, so its guests go; the daemon boots new ones.
  abort_job() {
    local g
    log "stopped during the job: its guest(s) are booted anew for the next job"
    for g in "${!qpid[@]}"; do kill "${qpid[$g]}" 2>/dev/null || true; done
  }
  trap 'abort_job; exit 143' TERM
  trap 'abort_job; exit 130' INT
  local job_start=$SECONDS logs=()
  for g in $(serve_guests); do
    if [[ $topology == one ]]; then gnodes=("${nodes[@]}"); else gnodes=("$g"); fi
    for n in "${gnodes[@]}"; do logs+=("$d/g$g/jobs/$id/node$n.log"); done
    echo "$id" >"$d/g$g/go.tmp"
    mv "$d/g$g/go.tmp" "$d/g$g/go"
  done
  # The guest prefixes each line; tail -F waits for the files to appear.
  tail -q -s 0.1 -n +1 -F "${logs[@]}" 2>/dev/null &
  local tailer=$!
  helpers+=("$tailer") # cleanup's, if we are stopped
  local done_all timed_out=0 died=()
  while :; do
    done_all=1
    for g in $(serve_guests); do [[ -e $d/g$g/jobs/$id/finished ]] || done_all=0; done
    ((done_all)) && break
    for g in $(serve_guests); do
      [[ -e $d/g$g/jobs/$id/finished ]] || kill -0 "${qpid[$g]}" 2>/dev/null || died+=("$g")
    done
    ((${#died[@]})) && break
    if ((SECONDS - waited_from >= timeout)); then timed_out=1; break; fi
    sleep 0.1
  done
  trap 'log "terminated"; exit 143' TERM
  trap 'log "interrupted"; exit 130' INT
  sleep 0.1 # tail's last lines
  kill "$tailer" 2>/dev/null || true
  wait "$tailer" 2>/dev/null || true
  # A guest that timed out or died is not trusted with the next job.
  if ((timed_out || ${#died[@]})); then
    for g in $(serve_guests); do kill "${qpid[$g]}" 2>/dev/null || true; done
  fi

  local rc=0 summary=() bad=() status jd torn glogs
  for g in $(serve_guests); do
    jd=$d/g$g/jobs/$id
    if [[ $topology == one ]]; then gnodes=("${nodes[@]}"); else gnodes=("$g"); fi
    local gbad=0
    for n in "${gnodes[@]}"; do
      if [[ -f $jd/status.node$n ]]; then
        status=$(cat "$jd/status.node$n")
        ((status == 0)) && continue
        summary+=("$(describe "$n" "$status" "$timeout")")
      elif [[ -s $jd/setup-error ]]; then
        summary+=("node$n: guest $g could not set up the device: $(head -n1 "$jd/setup-error")")
      elif ((timed_out)); then
        summary+=("node$n: guest $g timed out after $timeout s")
      else
        summary+=("node$n: guest $g died during the job")
      fi
      gbad=1
    done
    glogs=()
    for n in "${gnodes[@]}"; do glogs+=("$jd/node$n.log"); done
    mapfile -t torn < <(teardown_failures "${glogs[@]}")
    ((${#torn[@]})) && { summary+=("${torn[@]}"); gbad=1; }
    [[ -e $jd/reboot ]] && log "the job left guest $g unusable: it is booted anew for the next job"
    ((gbad)) && bad+=("$g")
  done
  if ((${#bad[@]})); then
    for g in "${bad[@]}"; do serve_report "$d" "$g" "$id"; done
    rc=1
    fail_line "${summary[@]}"
  else
    log "ok (guest mode, $topology, served: job $((SECONDS - job_start)) s, waited $boot_wait s for a free, booted bed)"
  fi
  # What the nodes wrote goes where the caller asked for it.
  if [[ -z $user_out ]]; then
    rmdir "$job_out" 2>/dev/null || log "out: $job_out"
  else
    cp -a "$job_out/." "$user_out/" && rm -rf "$job_out"
  fi
  out=$user_out
  return $rc
}

serve_report() { # DIR GUEST JOB: the guest's console and dmesg of that job
  local d=$1 g=$2 jd=$1/g$2/jobs/$3
  log "---- guest $g console (last 40 lines) ----"
  tail -n 40 "$d/g$g/console.log" >&2 || true
  if [[ -s $jd/dmesg.txt ]]; then
    log "---- guest $g dmesg of this job (max 80 lines; full: $jd/dmesg.txt) ----"
    tail -n 80 "$jd/dmesg.txt" >&2
  else
    log "---- guest $g: no dmesg came back ----"
  fi
}
