#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Authentication with a pre-shared key (--key-file), both programs in the
# test bed. Node 0 listens for each case in turn, node 1 dials (each case on
# its own port, so the two sides pair up whatever their timing):
#   same key            the stream arrives intact (framemd5), either side listening
#   wrong key           refused on both ends, each saying the peer's key does not match;
#                       the listener logs it and serves the next peer (the right key)
#   no key on a sender  refused on both ends, saying which end lacks it; the
#                       listener serves the next peer
#   fan-out             a receiver with the wrong key is refused, the next one joins
#   a mute sender       one that claims a key and proves nothing is refused
#                       within --handshake-timeout, and the next one served
# A key file open to others draws a warning.
#   key-auth.sh listen|dial BINDIR CLIPDIR ROGUE
set -u
side=$1 bin=$2 clips=$3 rogue=$4
S=$bin/rdmasend R=$bin/rdmarecv C=$clips/h264.mp4 REF=$clips/h264.mp4.ref.md5 A=$RDMABED_SERVER_ADDR
out=${RDMABED_OUT:-/tmp}
keys=$(mktemp -d)
trap 'rm -rf "$keys"' EXIT
printf '%s' 'the-first-key-32-bytes-long.....' >"$keys/k1"
printf '%s' 'the-other-key-32-bytes-long.....' >"$keys/k2"
cp "$keys/k1" "$keys/k1-open"
chmod 600 "$keys/k1" "$keys/k2"
chmod 644 "$keys/k1-open"
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# A program expected to fail: non-zero exit within 60 s and REGEX in its stderr.
refused() { # NAME REGEX COMMAND...
  name=$1 regex=$2
  shift 2
  timeout 60 "$@" >/dev/null 2>"$keys/err"
  rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then fail "$name: exit status $rc"; cat "$keys/err"; return; fi
  if grep -Eq -- "$regex" "$keys/err"; then echo "ok $name: $(grep -E -- "$regex" "$keys/err" | head -1)"
  else fail "$name: no /$regex/ in:"; cat "$keys/err"; fi
}

# A listener that must refuse one peer with REGEX in its log, then serve
# the next to the end. COMMAND's stderr goes to the log.
refuses_then_serves() { # NAME REGEX COMMAND...
  name=$1 regex=$2
  shift 2
  "$@" 2>"$keys/listen.err" || fail "$name: the listener exited $?"
  if grep -Eq -- "$regex" "$keys/listen.err"; then echo "ok $name: $(grep -E -- "$regex" "$keys/listen.err" | head -1)"
  else fail "$name: no /$regex/ in:"; cat "$keys/listen.err"; fi
}

same_frames() { # NAME FILE
  if cmp -s "$2" "$REF"; then echo "ok $1: $(grep -c '^0,' "$2") frames match ffmpeg -f framemd5"
  else fail "$1: the frames differ from ffmpeg's"; fi
}

if [ "$side" = listen ]; then
  "$R" --listen :18701 --key-file "$keys/k1" --framemd5 "$out/key-same.md5" -q --connect-timeout 120 ||
    fail "same key: rdmarecv exited $?"
  same_frames "same key (receiver listens)" "$out/key-same.md5"
  refuses_then_serves "wrong key, receiver" "rdmarecv: refused [0-9.]+:[0-9]+: the sender .*'s key does not match ours \(.*k1\)" \
    "$R" --listen :18702 --key-file "$keys/k1" --framemd5 "$out/key-after-wrong.md5" -q --connect-timeout 120
  same_frames "the next sender after a wrong key" "$out/key-after-wrong.md5"
  refuses_then_serves "no key on the sender, receiver" \
    "rdmarecv: refused [0-9.]+:[0-9]+: the sender [0-9.]+:[0-9]+ has no key but this receiver requires one" \
    "$R" --listen :18703 --key-file "$keys/k1" --framemd5 "$out/key-after-none.md5" -q --connect-timeout 120
  same_frames "the next sender after one without a key" "$out/key-after-none.md5"
  "$S" "$C" --listen=:18704 --key-file "$keys/k1" -q --connect-timeout 120 || fail "same key, sender listens: rdmasend exited $?"
  refuses_then_serves "wrong key, listening sender" "rdmasend: refused [0-9.]+:[0-9]+: the receiver .*'s key does not match ours" \
    "$S" "$C" --listen=:18705 --key-file "$keys/k1" -q --connect-timeout 120
  # A sender that never proves its key is dropped after --handshake-timeout
  # (3 s), not the rogue's 12 s: the refusal names the timeout.
  refuses_then_serves "a mute sender" "rdmarecv: refused [0-9.]+:[0-9]+: the sender .* sent no key proof within 3000 ms" \
    "$R" --listen :18707 --key-file "$keys/k1" --handshake-timeout 3 --framemd5 "$out/key-after-mute.md5" -q \
    --connect-timeout 120
  same_frames "the next sender after a mute one" "$out/key-after-mute.md5"
  # The fan-out logs the refused joiner and keeps waiting for a good one.
  "$S" "$C" --listen=:18706 --receivers 1 --key-file "$keys/k1" -q --connect-timeout 120 2>"$keys/fan.err" ||
    { fail "fan-out: rdmasend exited $?"; cat "$keys/fan.err"; }
  if grep -Eq "refused [0-9.]+:[0-9]+: .*key does not match ours" "$keys/fan.err"; then echo "ok fan-out refused the wrong key: $(grep 'key does not match' "$keys/fan.err" | head -1)"
  else fail "fan-out: no refusal of the wrong key in:"; cat "$keys/fan.err"; fi
else
  "$S" "$C" --connect "$A:18701" --key-file "$keys/k1-open" -q --connect-timeout 120 2>"$keys/warn.err" ||
    { fail "same key: rdmasend exited $?"; cat "$keys/warn.err"; }
  if grep -q "rdmasend: warning: key file .*k1-open is open to group or others (mode 0644)" "$keys/warn.err"; then
    echo "ok a key file open to others draws a warning"
  else fail "no warning for a key file of mode 644:"; cat "$keys/warn.err"; fi
  refused "wrong key, sender" "rdmasend: .*the receiver .*'s key does not match ours \(.*k2\)" \
    "$S" "$C" --connect "$A:18702" --key-file "$keys/k2" -q --connect-timeout 120
  "$S" "$C" --connect "$A:18702" --key-file "$keys/k1" -q --connect-timeout 120 ||
    fail "the right key after a wrong one: rdmasend exited $?"
  refused "no key on the sender, sender" \
    "rdmasend: the receiver at .* refused the connection: the sender .* has no key but this receiver requires one" \
    "$S" "$C" --connect "$A:18703" -q --connect-timeout 120
  "$S" "$C" --connect "$A:18703" --key-file "$keys/k1" -q --connect-timeout 120 ||
    fail "the right key after none: rdmasend exited $?"
  "$R" --connect "$A:18704" --key-file "$keys/k1" --framemd5 "$out/key-reverse.md5" -q --connect-timeout 120 ||
    fail "same key, sender listens: rdmarecv exited $?"
  same_frames "same key (sender listens)" "$out/key-reverse.md5"
  refused "wrong key, dialling receiver" "rdmarecv: .*the sender .*'s key does not match ours" \
    "$R" --connect "$A:18705" --key-file "$keys/k2" --null -q --connect-timeout 120
  "$R" --connect "$A:18705" --key-file "$keys/k1" --framemd5 "$out/key-reverse-next.md5" -q --connect-timeout 120 ||
    fail "the right key after a wrong one, sender listens: rdmarecv exited $?"
  same_frames "the next receiver after a wrong key" "$out/key-reverse-next.md5"
  "$rogue" --connect "$A:18707" --mode mute-key --hold 12 || fail "the mute sender could not run"
  "$S" "$C" --connect "$A:18707" --key-file "$keys/k1" -q --connect-timeout 120 ||
    fail "the right key after a mute sender: rdmasend exited $?"
  refused "fan-out, wrong key" "rdmarecv: .*key does not match ours" \
    "$R" --connect "$A:18706" --key-file "$keys/k2" --null -q --connect-timeout 120
  "$R" --connect "$A:18706" --key-file "$keys/k1" --framemd5 "$out/key-fanout.md5" -q --connect-timeout 120 ||
    fail "fan-out, same key: rdmarecv exited $?"
  same_frames "fan-out, same key" "$out/key-fanout.md5"
  refused "bad key file" "rdmasend: key file $keys/none does not exist" "$S" "$C" --connect "$A:18799" --key-file "$keys/none"
fi
[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all key checks passed on the $side side"
