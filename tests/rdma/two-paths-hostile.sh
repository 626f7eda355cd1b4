#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# two-paths-hostile.sh BINDIR ROGUE: a second path is no way around the
# first's checks (issue 25's "done when"). In one guest, rdmarecv listens on
# two ports (path A, path B) with a pre-shared key; rdmasend, with the key,
# streams over both. While the stream runs, at each door:
#   a sender's plain hello (rogue probe)           refused: the door is busy
#   a join whose token names no stream (forged-join) refused at its connect request
#   a second rdmasend with the key, dialling both  refused: busy
# Then the genuine stream ends cleanly: every frame arrived, in order, both
# paths up to the end, and the receiver named each refusal in its log.
set -uo pipefail
bin=$1 rogue=$2
out=${RDMABED_OUT:-$(mktemp -d)}
addr=$RDMABED_SERVER_ADDR
a=18670 b=18671
keys=$(mktemp -d)
trap 'rm -rf "$keys"; kill $(jobs -p) 2>/dev/null' EXIT
printf '%s' 'the-two-path-key-32-bytes-long..' >"$keys/k"
chmod 600 "$keys/k"
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

"$bin/rdmarecv" --listen "$addr:$a" --listen "$addr:$b" --key-file "$keys/k" --framemd5 "$out/hostile.md5" \
  --stats-json "$out/hostile-recv.json" -q --connect-timeout 60 2>"$out/hostile-recv.log" &
recv=$!
"$bin/rdmasend" 'lavfi:testsrc2=size=160x120:rate=25' --connect "$addr:$a" --connect "$addr:$b" --key-file "$keys/k" \
  --realtime --frames 100000 --stats-json "$out/hostile-send.json" -q --connect-timeout 60 2>"$out/hostile-send.log" &
send=$!
for _ in $(seq 600); do
  grep -q 'path B (.*) up' "$out/hostile-send.log" && break
  kill -0 $send 2>/dev/null || break
  sleep 0.1
done
if ! grep -q 'path B (.*) up' "$out/hostile-send.log"; then
  fail "path B never came up"
  cat "$out/hostile-send.log" "$out/hostile-recv.log"
  exit 1
fi

# attempt NAME EXPECTED-REGEX COMMAND...: refused as EXPECTED says.
attempt() {
  local name=$1 want=$2
  shift 2
  "$@" >"$out/hostile-$name.log" 2>&1
  local status=$?
  grep -Eq -- "$want" "$out/hostile-$name.log" ||
    { fail "$name (exit $status): not refused as '$want'"; cat "$out/hostile-$name.log"; }
}
for door in a b; do
  port=${!door}
  attempt "probe-$door" 'refused: .*busy' "$rogue" --connect "$addr:$port" --mode probe
  attempt "forged-join-$door" 'refused: .*token' "$rogue" --connect "$addr:$port" --mode forged-join
done
attempt second-sender 'busy' "$bin/rdmasend" 'lavfi:testsrc2=size=160x120:rate=25' --connect "$addr:$a" \
  --connect "$addr:$b" --key-file "$keys/k" --frames 5 -q --connect-timeout 5

kill -INT $send 2>/dev/null
wait $send
status=$?
[ $status = 130 ] || { fail "rdmasend exited $status, not 130 (interrupted, clean end)"; cat "$out/hostile-send.log"; }
wait $recv || { fail "rdmarecv exited $?"; cat "$out/hostile-recv.log"; }
read -r sent dropped < <(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['frames'], d['drops'])" \
  "$out/hostile-send.json")
read -r got gaps ups < <(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['frames'], d['gaps'], \
sum(p['up'] for p in d['paths']))" "$out/hostile-recv.json")
[ "$got" = "$sent" ] && [ "$gaps" = 0 ] || fail "the sender sent $sent frames, the receiver got $got ($gaps missing)"
[ "$ups" = 2 ] || fail "$ups paths up at the end, not 2: a refused peer cost the stream a path"
refusals=$(grep -c 'refused' "$out/hostile-recv.log")
[ "$refusals" -ge 5 ] || fail "the receiver logged $refusals refusals, not one per attempt (5)"
grep -q ') lost: ' "$out/hostile-recv.log" && fail "the receiver lost a path to a hostile peer"
grep -v '^#' "$out/hostile.md5" | awk -F, 'NR > 1 && $2 + 0 <= prev { bad = 1 } { prev = $2 + 0 } END { exit bad }' ||
  fail "frames out of order"
echo "two-paths-hostile: $got frames over both paths through 5 refused attempts; the receiver's refusals:"
grep 'refused' "$out/hostile-recv.log" | sed 's/^/  /'
[ $failures = 0 ]
